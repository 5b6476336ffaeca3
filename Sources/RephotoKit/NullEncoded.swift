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
