import Foundation
import Yams

/// Configs are decoded strictly: every key is optional (missing keys take the default), but an unknown
/// key is an error, so a misspelt tuning parameter is never silently ignored.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    func rejectUnknownKeys<Keys: CodingKey & CaseIterable>(_: Keys.Type) throws {
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
    func value<T: Decodable>(_ key: Key, or fallback: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? fallback
    }
}

/// Reads a Codable config from a JSON or YAML file (chosen by extension; otherwise JSON, then YAML).
enum ConfigFile {
    static func load<T: Decodable>(_ type: T.Type, from path: String) throws -> T {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw RephotoError.badInput("\(path): cannot read config file")
        }
        let ext = (path as NSString).pathExtension.lowercased()
        do {
            if ext == "yml" || ext == "yaml" {
                return try YAMLDecoder().decode(T.self, from: data)
            }
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw RephotoError.badInput("\(path): \(describe(error))")
        } catch {
            if ext == "json" { throw RephotoError.badInput("\(path): not valid JSON (\(error.localizedDescription))") }
            do {
                return try YAMLDecoder().decode(T.self, from: data)
            } catch let error as DecodingError {
                throw RephotoError.badInput("\(path): \(describe(error))")
            } catch {
                throw RephotoError.badInput("\(path): neither JSON nor YAML (\(error))")
            }
        }
    }

    static func describe(_ error: DecodingError) -> String {
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
