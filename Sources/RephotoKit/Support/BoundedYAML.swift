import Yams

/// YAML anchors let a few hundred bytes stand for billions of nodes (the "billion laughs"): Yams composes
/// them as shared values, cheaply, but a decoder walks every copy. Settings and search spaces are composed
/// and counted first, up to a budget far above any real file's, and refused beyond it.
package enum BoundedYAML {
    /// Nodes counted through aliases, as a decoder would visit them.
    package static let maxNodes = 100_000

    /// Throws `badInput` naming `what` when `text` stands for more than `maxNodes` values; parse errors are
    /// left to the caller's parser, which reports them in its own terms.
    package static func checkSize(_ text: String, what: String) throws {
        guard let root = try? Yams.compose(yaml: text) else { return }
        var budget = maxNodes
        guard visit(root, budget: &budget) else {
            throw RephotoError.badInput("\(what) expands to more than \(maxNodes) values through YAML aliases")
        }
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
