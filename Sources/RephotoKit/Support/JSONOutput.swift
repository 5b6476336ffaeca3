import Foundation

/// The documented JSON every result is written in (`rephoto pose --json`, the worker's answers; docs/json-output.md):
/// keys sorted, slashes unescaped, non-finite numbers as the strings "inf", "-inf", "nan". One encoder for both, so
/// they cannot drift apart; the CLI's is indented for people, the worker's compact.
public enum JSONOutput {
    public static func encoder(pretty: Bool) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return e
    }

    /// Compact, as the worker answers.
    public static func encode<T: Encodable>(_ value: T) throws -> Data { try encoder(pretty: false).encode(value) }
}
