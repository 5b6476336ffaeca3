import RephotoKit

/// A request the service logic refuses or cannot answer, said without HTTP: its cause, the error envelope
/// (code, kind, message) and when to retry. The routes give each cause its status (`ServerError.init(_:)`).
struct ServiceError: Error, Sendable {
    enum Cause: Sendable, Equatable {
        case badInput, notFound, tooLarge, unsupportedFormat, estimationFailed, noRoom, unavailable, tooManyRequests
        case `internal`
    }

    var cause: Cause
    var envelope: ErrorEnvelope
    var retryAfterSeconds: Int?

    init(_ cause: Cause, code: String, kind: RephotoError.Kind = .badInput, _ message: String) {
        self.cause = cause
        envelope = ErrorEnvelope(code: code, kind: kind, message: RephotoError.bounded(message))  // never echoes an unbounded value
    }

    static func badInput(_ message: String) -> ServiceError { ServiceError(.badInput, code: "bad_input", message) }
    static func notFound(_ message: String) -> ServiceError { ServiceError(.notFound, code: "not_found", message) }

    var message: String { envelope.error.message }

    /// The library's error by its kind and reason.
    init(_ error: RephotoError) {
        switch (error.kind, error.reason) {
        case (.badInput, .tooLarge?): cause = .tooLarge
        case (.badInput, .unsupportedFormat?): cause = .unsupportedFormat
        case (.badInput, _): cause = .badInput
        case (.estimationFailed, _): cause = .estimationFailed
        case (.unavailable, _):
            cause = .unavailable
            retryAfterSeconds = 1
        case (.internal, _): cause = .internal
        }
        envelope = ErrorEnvelope(error)
    }

    /// A store that cannot be written: no room when it is full, unavailable (retry in 30 s) when it cannot be
    /// changed now, internal otherwise; the message names no path.
    init(_ failure: ReferenceStore.Failure, doing what: String = "the reference was not stored") {
        switch failure {
        case .noRoom: self.init(.noRoom, code: "no_room", kind: .unavailable, "\(what): \(failure.reason)")
        case .readOnly:
            self.init(.unavailable, code: "unavailable", kind: .unavailable, "\(what): \(failure.reason)")
            retryAfterSeconds = 30
        case .io: self.init(.internal, code: "internal", kind: .internal, "\(what): \(failure.reason)")
        }
    }

    init(_ error: Error, doing what: String = "the reference was not stored") {
        if let failure = error as? ReferenceStore.Failure { self.init(failure, doing: what) } else { self = Self.wrapping(error) }
    }

    static func wrapping(_ error: Error) -> ServiceError {
        if let e = error as? ServiceError { return e }
        return ServiceError(RephotoError.wrapping(error))
    }
}
