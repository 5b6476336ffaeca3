import Yams

/// YAML anchors let a few hundred bytes stand for billions of nodes (the "billion laughs"): Yams composes
/// them as shared values, cheaply, but a decoder walks every copy. Settings and search spaces are composed
/// here, counted through their aliases up to a budget far above any real file's, and refused beyond it;
/// callers decode the counted node rather than parsing the text again. A key given twice in one mapping is
/// refused in words: a decoder would keep one of the two, and the one a person meant is unknowable.
package enum BoundedYAML {
    /// Nodes counted through aliases, as a decoder would visit them.
    package static let maxNodes = 100_000

    /// The root of `text` (nil when empty), or `badInput` naming `what` when it stands for more than
    /// `maxNodes` values or repeats a key; a parse error is thrown as the parser's, for the caller to word.
    /// JSON is YAML here: composing a JSON file checks it for repeated keys.
    package static func compose(_ text: String, what: String, resolver: Resolver = .default) throws -> Node? {
        let root: Node?
        do {
            root = try Parser(yaml: text, resolver: resolver, encoding: .utf8).singleRoot()
        } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
            throw RephotoError.badInput("\(what) line \(context.mark.line): key '\(duplicates.joined(separator: "', '"))' given twice in one mapping")
        }
        guard let root else { return nil }
        var budget = maxNodes
        guard visit(root, budget: &budget) else {
            // A plain JSON file this large gets the same words: it is its values, not aliases, that are too many.
            throw RephotoError.badInput("\(what) has more than \(maxNodes) values, counting each copy a YAML alias makes")
        }
        return root
    }

    private static func visit(_ node: Node, budget: inout Int) -> Bool {
        budget -= 1
        guard budget >= 0 else { return false }
        switch node {
        case .scalar, .alias: return true
        case .sequence(let sequence): return sequence.allSatisfy { visit($0, budget: &budget) }
        case .mapping(let mapping): return mapping.allSatisfy { visit($0.key, budget: &budget) && visit($0.value, budget: &budget) }
        }
    }
}
