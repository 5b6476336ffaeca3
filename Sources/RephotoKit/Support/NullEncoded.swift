/// An optional that is encoded as JSON `null` when absent instead of being left out, so documented keys
/// are always present (synthesized Encodable skips nil optionals).
@propertyWrapper
public struct NullEncoded<Value: Encodable & Sendable & Equatable>: Encodable, Sendable, Equatable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension NullEncoded: Decodable where Value: Decodable {
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }
}

extension KeyedDecodingContainer {
    /// A missing key decodes as nil for NullEncoded properties.
    public func decode<T>(_ type: NullEncoded<T>.Type, forKey key: Key) throws -> NullEncoded<T> where T: Decodable {
        try decodeIfPresent(type, forKey: key) ?? NullEncoded(wrappedValue: nil)
    }
}
