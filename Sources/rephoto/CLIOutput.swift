import Foundation
import RephotoKit

/// How the CLI reports results and failures: one line on stderr for people; with --json also the library's
/// error envelope on stdout, so a machine reading stdout always gets JSON. Exit codes are the library's
/// (`RephotoError.exitCode`): 2 bad input, 3 could not estimate, 1 internal.
enum CLIOutput {
    nonisolated(unsafe) static var jsonMode = CommandLine.arguments.contains("--json")

    static func fail(_ error: RephotoError) -> Never {
        ImmediateInterruption.yieldToSignal()
        message(error.message)
        if jsonMode, let data = try? JSONOutput.encodePretty(ErrorEnvelope(error)) {
            try? FileHandle.standardOutput.write(contentsOf: data + Data("\n".utf8))
        }
        exit(error.exitCode)
    }

    /// `text` with control characters written as escapes (`String.visible`): a newline in a file name split the
    /// one-line message, and an ESC sequence in one reached the terminal.
    static func visible(_ text: String) -> String { text.visible }

    /// One line for people on stderr, "rephoto: " first; control characters in it (a path's, a file's) escaped.
    static func message(_ text: String) {
        standardError(Data("rephoto: \(visible(text))\n".utf8))
    }

    /// Foundation's non-throwing write traps when the stream cannot take the bytes (a full disk, a closed
    /// pipe): diagnostics that cannot be written are dropped instead.
    static func standardError(_ data: Data) {
        try? FileHandle.standardError.write(contentsOf: data)
    }

    /// Output that could not be written is a failure, not a success: stdout is flushed and checked before the
    /// process reports one (`print` writes through C's buffered stdout).
    static func finish() {
        if fflush(nil) != 0 {  // every stream: Swift 6 will not name C's global `stdout`
            // A reader that stopped early (`| head`) is no failure worth a message: end as SIGPIPE would.
            if errno == EPIPE { exit(141) }
            fail(RephotoError(.internal, "cannot write the output: \(String(cString: strerror(errno)))"))
        }
    }

    /// `value` as a document (with `schemaVersion`), indented, on stdout.
    static func printJSON<T: Encodable>(_ value: T) throws {
        let data = try JSONOutput.encodePretty(value)
        finish()  // whatever print wrote first goes first
        do {
            try FileHandle.standardOutput.write(contentsOf: data + Data("\n".utf8))
        } catch {
            throw RephotoError(.internal, "cannot write the output: \(fileErrorReason(error))")
        }
    }
}
