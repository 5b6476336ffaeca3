import Foundation

/// Strict decoding helpers for JSON and YAML files other than the pipeline config (sequence manifests):
/// every key is optional, but an unknown key is an error, so a misspelt setting is never silently ignored.
extension Decoder {
    package func rejectUnknownKeys<Keys: CodingKey & CaseIterable>(_: Keys.Type) throws {
        guard let container = try? container(keyedBy: AnyCodingKey.self) else { return }
        let known = Set(Keys.allCases.map(\.stringValue))
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath + [key],
                debugDescription: "unknown key '\(key.stringValue)' (known: \(known.sorted().joined(separator: ", ")))"))
        }
    }
}

extension KeyedDecodingContainer {
    package func value<T: Decodable>(_ key: Key, or fallback: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? fallback
    }
}

package enum ConfigFile {
    /// The choices a manifest's enums take, for messages (Swift's own says "Cannot initialize X from ...").
    static let choices: [String: [String]] = [
        "ScreenOrientation": ScreenOrientation.allCases.map(\.rawValue),
        "AttitudeReferenceFrame": AttitudeReferenceFrame.allCases.map(\.rawValue),
    ]

    /// A type as a person names it: "an object", not "Dictionary<String, Any>".
    static func typeName(_ type: Any.Type) -> String {
        let name = "\(type)"
        if name.hasPrefix("Dictionary") { return "an object" }
        if name.hasPrefix("Array") { return "a list" }
        switch name {
        case "String": return "text"
        case "Int", "Int32", "Int64", "UInt64", "Double", "Float": return "a number"
        case "Bool": return "true or false"
        default: return choices[name].map { "one of \($0.joined(separator: ", "))" } ?? name
        }
    }

    /// Swift's "Cannot initialize ScreenOrientation from invalid String value sideways" in the user's terms.
    static func readable(_ description: String) -> String {
        let prefix = "Cannot initialize ", middle = " from invalid String value "
        guard description.hasPrefix(prefix), let range = description.range(of: middle) else { return description }
        let type = String(description[description.index(description.startIndex, offsetBy: prefix.count)..<range.lowerBound])
        let value = String(description[range.upperBound...])
        guard let options = choices[type] else { return "'\(value)' is not a valid \(type)" }
        return "'\(value)' is not one of \(options.joined(separator: ", "))"
    }

    /// JSONDecoder keeps one of a key given twice, silently: the same text composed as YAML (which JSON is)
    /// names it. Text that only JSON reads is left to JSONDecoder's verdict.
    package static func refuseRepeatedKeys(_ data: Data, what: String) throws {
        do {
            _ = try BoundedYAML.compose(String(decoding: data, as: UTF8.self), what: what)
        } catch let error as RephotoError {
            throw error
        } catch {}
    }

    /// One line for a decoding failure: where (dotted key path) and what. With the JSON text (`json`), text the
    /// decoder could not parse also gets JSONSerialization's reason: JSONDecoder says only "not valid JSON".
    package static func describe(_ error: Error, json: Data? = nil) -> String {
        guard let error = error as? DecodingError else {
            // Foundation's JSONSerialization errors print as "Error Domain=NSCocoaErrorDomain Code=3840 ... UserInfo=...":
            // the debug description alone is the reason.
            return ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "" : "at '\(keys)': "
        }
        switch error {
        case .dataCorrupted(let c):
            var detail = ""
            if c.codingPath.isEmpty, let json {
                do { _ = try JSONSerialization.jsonObject(with: json) } catch {
                    if let text = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String { detail = " (\(text))" }
                }
            }
            return path(c) + readable(c.debugDescription) + detail
        case .keyNotFound(let key, let c): return path(c) + "missing key '\(key.stringValue)'"
        case .typeMismatch(let type, let c): return path(c) + "expected \(typeName(type))"
        case .valueNotFound(let type, let c): return path(c) + "missing \(typeName(type)) value"
        @unknown default: return "\(error)"
        }
    }
}
