/// Every failure RephotoKit reports: a category (which decides the CLI exit code and the HTTP status)
/// and a one-line message naming the problem and the offending value.
public struct RephotoError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// The caller's input is wrong: unreadable or oversized image, bad calibration, bad parameter.
        case badInput = "bad_input"
        /// Input was fine but there is not enough signal: too few features, matches or inliers.
        case estimationFailed = "estimation_failed"
        /// A bug or an unexpected library failure.
        case `internal`
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public static func badInput(_ message: String) -> RephotoError { RephotoError(.badInput, message) }
    public static func estimationFailed(_ message: String) -> RephotoError { RephotoError(.estimationFailed, message) }

    public var description: String { message }

    /// The same error with context (a file name, a role) in front of the message.
    public func prefixed(_ context: String) -> RephotoError { RephotoError(kind, "\(context): \(message)") }
}
