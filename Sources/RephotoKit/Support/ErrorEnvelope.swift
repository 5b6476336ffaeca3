/// The machine-readable form of a failure, the same for the CLI's --json output and the worker's responses:
/// `{"error": {"code": ..., "kind": "bad_input" | "estimation_failed" | "internal" | "unavailable", "message": "..."}}`.
/// `code` is the kind, or the finer reason when there is one (`too_large`, `unsupported_format`); services
/// add their own codes (`not_found`, `unauthorized`).
public struct ErrorEnvelope: Codable, Equatable, Sendable {
    public struct Body: Codable, Equatable, Sendable {
        public var code: String
        public var kind: RephotoError.Kind
        public var message: String
        /// The pose gate's cause when it refused the pose (`PoseRefusal.Cause`); absent otherwise.
        public var cause: PoseRefusal.Cause?

        public init(code: String, kind: RephotoError.Kind, message: String, cause: PoseRefusal.Cause? = nil) {
            self.code = code
            self.kind = kind
            self.message = message
            self.cause = cause
        }
    }

    public var error: Body

    public init(_ error: RephotoError) {
        self.error = Body(code: error.reason?.rawValue ?? error.kind.rawValue, kind: error.kind, message: error.message, cause: error.refusal?.cause)
    }

    public init(code: String, kind: RephotoError.Kind, message: String) {
        error = Body(code: code, kind: kind, message: message)
    }
}
