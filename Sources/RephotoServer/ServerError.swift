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
        envelope = ErrorEnvelope(code: code, kind: kind, message: RephotoError.bounded(message))  // never echoes an unbounded value
    }

    static func badRequest(_ message: String) -> ServerError { ServerError(.badRequest, code: "bad_input", message) }
    static func notFound(_ message: String) -> ServerError { ServerError(.notFound, code: "not_found", message) }

    /// The service's error with its status: 400 bad input, 404 not found, 413 too large, 415 unsupported format,
    /// 422 too little signal, 429 too many requests, 503 unavailable, 507 no room, 500 a bug.
    init(_ error: ServiceError) {
        switch error.cause {
        case .badInput: status = .badRequest
        case .notFound: status = .notFound
        case .tooLarge: status = .contentTooLarge
        case .unsupportedFormat: status = .unsupportedMediaType
        case .estimationFailed: status = .unprocessableContent
        case .tooManyRequests: status = .tooManyRequests
        case .unavailable: status = .serviceUnavailable
        case .noRoom: status = .init(code: 507, reasonPhrase: "Insufficient Storage")
        case .internal: status = .internalServerError
        }
        envelope = error.envelope
        retryAfterSeconds = error.retryAfterSeconds
    }

    init(_ error: RephotoError) { self.init(ServiceError(error)) }

    static func wrapping(_ error: Error) -> ServerError {
        if let e = error as? ServerError { return e }
        return ServerError(ServiceError.wrapping(error))
    }
}
