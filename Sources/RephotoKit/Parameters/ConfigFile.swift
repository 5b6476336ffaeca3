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
    /// One line for a decoding failure: where (dotted key path) and what.
    package static func describe(_ error: Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "" : "at '\(keys)': "
        }
        switch error {
        case .dataCorrupted(let c): return path(c) + c.debugDescription
        case .keyNotFound(let key, let c): return path(c) + "missing key '\(key.stringValue)'"
        case .typeMismatch(let type, let c): return path(c) + "expected \(type) (\(c.debugDescription))"
        case .valueNotFound(let type, let c): return path(c) + "missing \(type) value"
        @unknown default: return "\(error)"
        }
    }
}
