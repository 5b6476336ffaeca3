import Foundation
import Logging
import RephotoKit
import Synchronization

/// The bearer token every /v1 request must send, read from `--token-file` at start and again on SIGHUP, so a
/// token is rotated without a restart: write the new one to the file, then `kill -HUP`. A file that no longer
/// holds a valid token leaves the current one in force, and says so in the log.
public final class BearerToken: Sendable {
    private let current: Mutex<String?>
    let file: String?

    public init(_ token: String?, file: String? = nil) {
        current = Mutex(token)
        self.file = file
    }

    public var value: String? { current.withLock { $0 } }

    /// Reads the file again; the error names the problem and leaves the token as it was.
    @discardableResult
    public func reload() throws -> [String] {
        guard let file else { return [] }
        let (token, warnings) = try Self.read(file, given: "--token-file \(file)")
        current.withLock { $0 = token }
        return warnings
    }

    /// A token file's token, with warnings about it (a file others may read). At most 4 KiB is read: /dev/zero or
    /// a log file given by mistake would otherwise be read whole.
    public static func read(_ path: String, given: String) throws -> (token: String, warnings: [String]) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        // Opening a FIFO with no writer blocks for ever, before the worker binds its port.
        if let type = attributes?[.type] as? FileAttributeType, type != .typeRegular {
            throw RephotoError.badInput("\(given): \(type == .typeDirectory ? "a directory" : "not a regular file")")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "not readable" : "no such file"
            throw RephotoError.badInput("\(given): \(reason)")
        }
        defer { try? handle.close() }
        let limit = 4096
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw RephotoError.badInput("\(given): cannot read (\(error.localizedDescription))")
        }
        if data.isEmpty { throw RephotoError.badInput("\(given): the file is empty") }
        if data.count > limit { throw RephotoError.badInput("\(given): over \(limit) bytes, not a token file") }
        guard let text = String(data: data, encoding: .utf8) else { throw RephotoError.badInput("\(given): not UTF-8 text") }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= 16 else { throw RephotoError.badInput("\(given): the token must have at least 16 characters") }
        // A client cannot send a newline or a space inside a header value.
        guard token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            throw RephotoError.badInput("\(given): the token must be printable ASCII without spaces")
        }
        var warnings: [String] = []
        // As ssh does for a private key: a secret others can read is no longer one.
        if let mode = (attributes?[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0 {
            warnings.append(String(format: "%@: readable or writable by others (mode %04o); chmod 600 it", given, mode))
        }
        return (token, warnings)
    }

    /// Reloads the token on every SIGHUP until the returned source is cancelled.
    func reloadOnHangUp(logger: Logger) -> DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP)
        source.setEventHandler { [self] in
            do {
                for warning in try reload() { logger.warning("\(warning)") }
                logger.notice("bearer token reloaded from --token-file on SIGHUP")
            } catch let error as RephotoError {
                logger.error("SIGHUP: the token was not reloaded, the current one stays in force: \(error.message)")
            } catch {
                logger.error("SIGHUP: the token was not reloaded: \(error)")
            }
        }
        source.resume()
        return source
    }
}
