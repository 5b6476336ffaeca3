import ArgumentParser
import Foundation
import Logging
import RephotoKit
import RephotoServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the retake-scoring worker (HTTP, or one JSON request per line with --stdio).",
        discussion: "Endpoints and schemas: GET /openapi.yaml (docs/server.md). Every option also reads an environment variable: REPHOTO_HOST, REPHOTO_PORT, REPHOTO_CONCURRENCY, REPHOTO_QUEUE_LENGTH, REPHOTO_MAX_BODY_BYTES, REPHOTO_REQUEST_TIMEOUT, REPHOTO_IDLE_TIMEOUT, REPHOTO_MIN_BODY_RATE, REPHOTO_REFERENCE_STORE, REPHOTO_CACHE_BYTES, REPHOTO_CALIBRATION_DIR, REPHOTO_TOKEN_FILE.")

    @Option(parsing: .unconditional, help: "Address to bind (default 127.0.0.1; others need --token-file or --allow-unauthenticated).") var host: String?
    @Option(parsing: .unconditional, help: "TCP port (default 8080).") var port: Int?
    @Option(parsing: .unconditional, help: "Pipelines running at once (default: the cores).") var concurrency: Int?
    @Option(parsing: .unconditional, help: "Requests waiting for a pipeline before 503 (default 8).") var queueLength: Int?
    @Option(parsing: .unconditional, help: "Largest request body in bytes (default 67108864).") var maxBodyBytes: Int?
    @Option(parsing: .unconditional, help: "Seconds a request may take, once its body has arrived, before 503 (default 30).", transform: decimalOption) var requestTimeout: Double?
    @Option(parsing: .unconditional, help: "Seconds a connection may go without sending any part of a request before it is closed (default 30).", transform: decimalOption) var idleTimeout: Double?
    @Option(parsing: .unconditional, help: "Bytes per second a request body must average once --idle-timeout has passed, or 408 (default 65536).", transform: decimalOption) var minBodyRate: Double?
    @Option(parsing: .unconditional, help: "Longer side of an image /v1/retakes/align answers, pixels (default 4096).") var alignMaxDimension: Int?
    @Option(parsing: .unconditional, help: "Folder of the content-addressed reference store, shareable by instances (default: memory only).") var referenceStore: String?
    @Option(parsing: .unconditional, help: "Memory for prepared references, bytes (default 268435456).") var cacheBytes: Int?
    @Option(parsing: .unconditional, help: "Folder of named calibrations (default calibration).") var calibrationDir: String?
    @Option(parsing: .unconditional, help: "File holding the bearer token every /v1 request must send.") var tokenFile: String?
    @Flag(help: "Serve a non-loopback address without a token.") var allowUnauthenticated = false
    @Flag(help: "Read one JSON request per line on stdin, write one JSON response per line on stdout.") var stdio = false
    @OptionGroup var pipeline: PipelineOptions

    func settings() throws -> ServerSettings {
        let env = ProcessInfo.processInfo.environment
        // Flag -> variable, for the values read from the environment (ServerSettings.given).
        var fromEnvironment: [String: String] = [:]
        func value<T>(_ flag: T?, _ option: String, _ name: String, _ parse: (String) -> T?) throws -> T? {
            if let flag { return flag }
            guard let text = env[name] else { return nil }
            guard let parsed = parse(text) else { throw RephotoError.badInput("\(name)='\(text)' is not a valid value") }
            fromEnvironment[option] = name
            return parsed
        }
        var s = ServerSettings()
        s.host = try value(host, "--host", "REPHOTO_HOST", { $0 }) ?? s.host
        s.port = try value(port, "--port", "REPHOTO_PORT", Int.init) ?? s.port
        s.concurrency = try value(concurrency, "--concurrency", "REPHOTO_CONCURRENCY", Int.init) ?? s.concurrency
        s.queueLength = try value(queueLength, "--queue-length", "REPHOTO_QUEUE_LENGTH", Int.init) ?? s.queueLength
        s.maxBodyBytes = try value(maxBodyBytes, "--max-body-bytes", "REPHOTO_MAX_BODY_BYTES", Int.init) ?? s.maxBodyBytes
        s.requestTimeout = try value(requestTimeout, "--request-timeout", "REPHOTO_REQUEST_TIMEOUT", decimalNumber) ?? s.requestTimeout
        s.idleTimeout = try value(idleTimeout, "--idle-timeout", "REPHOTO_IDLE_TIMEOUT", decimalNumber) ?? s.idleTimeout
        s.minBodyRate = try value(minBodyRate, "--min-body-rate", "REPHOTO_MIN_BODY_RATE", decimalNumber) ?? s.minBodyRate
        s.alignMaxDimension = try value(alignMaxDimension, "--align-max-dimension", "REPHOTO_ALIGN_MAX_DIMENSION", Int.init) ?? s.alignMaxDimension
        s.referenceStore = try value(referenceStore, "--reference-store", "REPHOTO_REFERENCE_STORE", { $0 })
        s.cacheBytes = try value(cacheBytes, "--cache-bytes", "REPHOTO_CACHE_BYTES", Int.init) ?? s.cacheBytes
        s.calibrationDirectory = try value(calibrationDir, "--calibration-dir", "REPHOTO_CALIBRATION_DIR", { $0 }) ?? s.calibrationDirectory
        let tokenPath = try value(tokenFile, "--token-file", "REPHOTO_TOKEN_FILE", { $0 })
        s.fromEnvironment = fromEnvironment
        if let file = tokenPath {
            let given = s.given("--token-file", file)
            let token = try Self.readToken(file, given).trimmingCharacters(in: .whitespacesAndNewlines)
            guard token.count >= 16 else { throw RephotoError.badInput("\(given): the token must have at least 16 characters") }
            // A token no client can send in a header line (a newline inside it was accepted; probe).
            guard token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
                throw RephotoError.badInput("\(given): the token must be printable ASCII without spaces")
            }
            s.token = token
        }
        s.allowUnauthenticated = allowUnauthenticated
        s.pipeline = try pipeline.resolve()
        try s.validate()
        return s
    }

    /// At most 4 KiB is read: /dev/zero or a log file given by mistake would otherwise be read whole.
    static func readToken(_ path: String, _ given: String) throws -> String {
        // Opening a FIFO with no writer blocks for ever, before the worker binds its port (probe).
        if let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType, type != .typeRegular {
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
        return text
    }

    func run() async throws {
        let settings = try settings()
        if stdio {
            try await StdioServer.run(settings: settings)
            return
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "rephoto.serve")
        logger.logLevel = .info
        try await RetakeServer.run(settings: settings, logger: logger)
    }
}
