import RephotoTestSupport
import Foundation

/// Runs the built `rephoto` executable the way a user or a script would.
enum CLI {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var executable: URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL,
            packageRoot.appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("rephoto") }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates.last!
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] }
    }

    /// `fileSizeLimitBlocks`: run under `ulimit -f` (512-byte blocks), as a full disk would stop a write.
    /// `executable`: another program in rephoto's place (a wrapper such as /usr/bin/time that runs it).
    static func run(_ arguments: [String], fileSizeLimitBlocks: Int? = nil, environment: [String: String] = [:],
                    directory: String? = nil, executable program: URL? = nil) throws -> Run {
        let process = Process()
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if let blocks = fileSizeLimitBlocks {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -f \(blocks) && exec \"$0\" \"$@\"", executable.path] + arguments
        } else {
            process.executableURL = program ?? executable
            process.arguments = arguments
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                   stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// A copy of the executable at `destination`, written by cp in a process of its own: a copy written here leaves its
    /// descriptor open in this process while it is written, a program another test starts meanwhile inherits it, and
    /// running the copy then fails with ETXTBSY ("Text file busy", seen in CI).
    static func copyExecutable(to destination: URL) throws {
        let copy = Process()
        copy.executableURL = URL(fileURLWithPath: "/bin/cp")
        copy.arguments = [executable.path, destination.path]
        try copy.run()
        copy.waitUntilExit()
        guard copy.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destination.path]) }
    }

    static func sample(_ name: String) -> String { packageRoot.appendingPathComponent(".cache/opencv-samples/\(name)").path }

    static func temporaryFile(_ name: String, _ data: Data) throws -> String { try Fixtures.temporaryFile(name, data) }
}
