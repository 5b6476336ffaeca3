import Foundation
import Yams

/// A config file's content as a plain tree (JSON and YAML alike), walked against `ParameterRegistry`:
/// every leaf must be a declared parameter of the right type and range, and every missing one keeps its default.
enum ConfigTree: Decodable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([ConfigTree])
    case object([String: ConfigTree])

    init(from decoder: Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: AnyCodingKey.self) {
            var object: [String: ConfigTree] = [:]
            for key in keyed.allKeys { object[key.stringValue] = try keyed.decode(ConfigTree.self, forKey: key) }
            self = .object(object)
            return
        }
        if var list = try? decoder.unkeyedContainer() {
            var items: [ConfigTree] = []
            while !list.isAtEnd { items.append(try list.decode(ConfigTree.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { self = .null }
        else if let v = try? single.decode(Bool.self) { self = .bool(v) }
        else if let v = try? single.decode(Int.self) { self = .int(v) }
        else if let v = try? single.decode(Double.self) { self = .double(v) }
        else { self = .string(try single.decode(String.self)) }
    }

    /// The value as a parameter value; nil for shapes no parameter has (objects, ragged arrays).
    var parameterValue: ParameterValue? {
        switch self {
        case .null: return .null
        case .bool(let v): return .bool(v)
        case .int(let v): return .int(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .array(let rows):
            var numbers: [[Double]] = []
            for row in rows {
                guard case .array(let cells) = row else { return nil }
                var values: [Double] = []
                for cell in cells {
                    switch cell {
                    case .int(let v): values.append(Double(v))
                    case .double(let v): values.append(v)
                    default: return nil
                    }
                }
                numbers.append(values)
            }
            guard numbers.count == 3, numbers.allSatisfy({ $0.count == 3 }) else { return nil }
            return .matrix(Matrix3(rows: numbers))
        case .object: return nil
        }
    }

    /// Applies every leaf to `config`; `prefix` is the dotted path of this node.
    func apply(to config: inout PipelineConfig, prefix: String = "") throws {
        guard case .object(let object) = self else {
            throw RephotoError.badInput("\(prefix.isEmpty ? "the config" : "'\(prefix)'") must be an object of settings")
        }
        for key in object.keys.sorted() {
            let value = object[key]!
            let path = prefix.isEmpty ? key : "\(prefix).\(key)"
            if let retired = ParameterRegistry.retired[path] {
                throw RephotoError.badInput("at '\(path)': retired setting: \(retired)")
            }
            if let parameter = ParameterRegistry.parameter(path) {
                guard let converted = value.parameterValue else {
                    throw RephotoError.badInput("at '\(path)': expected \(parameter.typeName) (allowed: \(parameter.domain))")
                }
                try parameter.set(converted, in: &config)
            } else if ParameterRegistry.parameters.contains(where: { $0.path.hasPrefix(path + ".") }) {
                try value.apply(to: &config, prefix: path)
            } else {
                let known = ParameterRegistry.childKeys(of: prefix)
                throw RephotoError.badInput("at '\(path)': unknown key '\(key)'\(Suggestion.phrase(for: key, among: known)) (known: \(known.joined(separator: ", ")))")
            }
        }
    }
}

struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension ParameterRegistry {
    /// The keys one level below `prefix` ("" for the top level), in declaration order.
    static func childKeys(of prefix: String) -> [String] {
        var keys: [String] = []
        for parameter in parameters {
            let rest: Substring
            if prefix.isEmpty { rest = Substring(parameter.path) }
            else if parameter.path.hasPrefix(prefix + ".") { rest = parameter.path.dropFirst(prefix.count + 1) }
            else { continue }
            let key = String(rest.split(separator: ".").first!)
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    /// `config` as a nested tree of its parameters, in declaration order, for JSON and YAML output.
    static func tree(of config: PipelineConfig) -> [(String, Any)] {
        func insert(_ value: Any, at keys: ArraySlice<Substring>, into node: inout [(String, Any)]) {
            let key = String(keys.first!)
            if keys.count == 1 {
                node.append((key, value))
                return
            }
            var child = node.first(where: { $0.0 == key })?.1 as? [(String, Any)] ?? []
            insert(value, at: keys.dropFirst(), into: &child)
            if let i = node.firstIndex(where: { $0.0 == key }) { node[i].1 = child } else { node.append((key, child)) }
        }
        var root: [(String, Any)] = []
        for parameter in parameters {
            insert(parameter.value(in: config), at: parameter.path.split(separator: ".")[...], into: &root)
        }
        return root
    }

    /// JSON text of `config`, keys in declaration order, numbers in their shortest exact form.
    public static func json(of config: PipelineConfig, indent: String = "  ") -> String {
        func render(_ node: Any, _ depth: Int) -> String {
            let pad = String(repeating: indent, count: depth + 1), closing = String(repeating: indent, count: depth)
            if let object = node as? [(String, Any)] {
                let items = object.map { "\(pad)\(quoted($0.0)): \(render($0.1, depth + 1))" }
                return "{\n" + items.joined(separator: ",\n") + "\n\(closing)}"
            }
            switch node as! ParameterValue {
            case .string(let s): return quoted(s)
            case let value: return value.description
            }
        }
        return render(tree(of: config), 0)
    }

    /// YAML text of `config`, keys in declaration order, numbers as people write them (0.8, not 8e-1).
    public static func yaml(of config: PipelineConfig) throws -> String {
        func node(_ value: Any) -> Node {
            if let object = value as? [(String, Any)] {
                return .mapping(Node.Mapping(object.map { (Node($0.0), node($0.1)) }))
            }
            switch value as! ParameterValue {
            case .matrix(let m):
                return .sequence(Node.Sequence(m.rows.map { row in
                    Node.sequence(Node.Sequence(row.map { Node(formatNumber($0), Tag(.float)) }, Tag(.seq), .flow))
                }, Tag(.seq), .flow))
            case .null: return Node("null", Tag(.null))
            case .string(let s): return Node(s)
            case .int(let v): return Node(String(v), Tag(.int))
            case .double(let v): return Node(formatNumber(v), Tag(.float))
            case .bool(let v): return Node(v ? "true" : "false", Tag(.bool))
            }
        }
        return try Yams.serialize(node: node(tree(of: config)))
    }

    private static func quoted(_ s: String) -> String {
        let data = try? JSONEncoder().encode(s)
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "\"\(s)\""
    }
}
