import Foundation
import HTTPTypes
import RephotoKit

/// A failure as the worker answers it: an HTTP status and `{"error": {"code", "kind", "message"}}`
/// (RephotoKit's ErrorEnvelope), plus the counts when vision had too little signal.
struct ServerError: Error, Sendable {
    var status: HTTPResponse.Status
    var envelope: ErrorEnvelope
    var retryAfterSeconds: Int?
    /// The rest of the request is not read: the connection closes after the answer.
    var closesConnection = false
    /// The methods the path allows, for a 405's `Allow` header.
    var allow: String?

    init(_ status: HTTPResponse.Status, code: String, kind: RephotoError.Kind = .badInput, _ message: String) {
        self.status = status
        envelope = ErrorEnvelope(code: code, kind: kind, message: RephotoError.bounded(message))  // a 60,000-digit number was echoed whole
    }

    static func badRequest(_ message: String) -> ServerError { ServerError(.badRequest, code: "bad_input", message) }
    static func notFound(_ message: String) -> ServerError { ServerError(.notFound, code: "not_found", message) }

    /// The library's error with its status: 413 too large, 415 unsupported format, 400 other bad input,
    /// 422 too little signal, 503 no capacity, 500 a bug.
    init(_ error: RephotoError) {
        switch (error.kind, error.reason) {
        case (.badInput, .tooLarge?): status = .contentTooLarge
        case (.badInput, .unsupportedFormat?): status = .unsupportedMediaType
        case (.badInput, _): status = .badRequest
        case (.estimationFailed, _): status = .unprocessableContent
        case (.unavailable, _):
            status = .serviceUnavailable
            retryAfterSeconds = 1
        case (.internal, _): status = .internalServerError
        }
        envelope = ErrorEnvelope(error)
    }

    /// A store that cannot be written: 507 when it is full, 503 when it cannot be changed now, 500 otherwise;
    /// the message names no path.
    init(_ failure: ReferenceStore.Failure, doing what: String = "the reference was not stored") {
        switch failure {
        case .noRoom:
            self.init(.init(code: 507, reasonPhrase: "Insufficient Storage"), code: "no_room", kind: .unavailable, "\(what): \(failure.reason)")
        case .readOnly:
            self.init(.serviceUnavailable, code: "unavailable", kind: .unavailable, "\(what): \(failure.reason)")
            retryAfterSeconds = 30
        case .io:
            self.init(.internalServerError, code: "internal", kind: .internal, "\(what): \(failure.reason)")
        }
    }

    init(_ error: Error, doing what: String = "the reference was not stored") {
        if let failure = error as? ReferenceStore.Failure { self.init(failure, doing: what) } else { self = Self.wrapping(error) }
    }

    static func wrapping(_ error: Error) -> ServerError {
        if let e = error as? ServerError { return e }
        return ServerError(RephotoError.wrapping(error))
    }
}
