import Foundation

/// The documented JSON every result is written in (`rephoto pose --json`, the worker's answers; docs/json-output.md):
/// keys sorted, slashes unescaped, non-finite numbers as the strings "inf", "-inf", "nan". One encoder for both, so
/// they cannot drift apart; the CLI's is indented for people, the worker's compact.
public enum JSONOutput {
    /// The version of every JSON document the project writes, in its top-level `schemaVersion` (docs/json-output.md,
    /// "Versioning"). Raised when a field is removed or changes meaning; 1 was every document before the key existed,
    /// 2 added it and the guidance's `actions`.
    public static let schemaVersion = 2

    public static func encoder(pretty: Bool) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return e
    }

    /// A document, compact, as the worker answers: `value`'s object with `schemaVersion`.
    public static func encode<T: Encodable>(_ value: T) throws -> Data { try encoder(pretty: false).encode(Versioned(value)) }

    /// A document, indented for people (the CLI's --json): `value`'s object with `schemaVersion`.
    public static func encodePretty<T: Encodable>(_ value: T) throws -> Data { try encoder(pretty: true).encode(Versioned(value)) }

    /// `value`'s JSON object with `schemaVersion` beside its keys: how every document is stamped, by whichever encoder
    /// writes it. `value` must encode an object (a keyed container) and no `schemaVersion` of its own.
    public struct Versioned<Value: Encodable>: Encodable {
        public var value: Value

        public init(_ value: Value) { self.value = value }

        enum CodingKeys: String, CodingKey { case schemaVersion }

        public func encode(to encoder: Encoder) throws {
            try value.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(JSONOutput.schemaVersion, forKey: .schemaVersion)
        }
    }
}
