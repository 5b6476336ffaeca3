/// The machine-readable form of a failure, the same for the CLI's --json output and the worker's responses:
/// `{"error": {"kind": "bad_input" | "estimation_failed" | "internal" | "unavailable", "message": "..."}}`.
public struct ErrorEnvelope: Codable, Equatable, Sendable {
    public struct Body: Codable, Equatable, Sendable {
        public var kind: RephotoError.Kind
        public var message: String
    }

    public var error: Body

    public init(_ error: RephotoError) {
        self.error = Body(kind: error.kind, message: error.message)
    }
}
