import ArgumentParser
import Foundation
import Logging
import RephotoKit
import RephotoServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the retake-scoring worker (HTTP, or one JSON request per line with --stdio).",
        discussion: "Endpoints and schemas: GET /openapi.yaml (docs/server.md). Every option also reads an environment variable: REPHOTO_HOST, REPHOTO_PORT, REPHOTO_CONCURRENCY, REPHOTO_QUEUE_LENGTH, REPHOTO_MAX_BODY_BYTES, REPHOTO_REQUEST_TIMEOUT, REPHOTO_IDLE_TIMEOUT, REPHOTO_MIN_BODY_RATE, REPHOTO_BODY_TIMEOUT, REPHOTO_UPLOADS_PER_CLIENT, REPHOTO_MAX_CONNECTIONS, REPHOTO_REFERENCE_STORE, REPHOTO_STORE_BYTES, REPHOTO_CACHE_BYTES, REPHOTO_MAX_SESSIONS, REPHOTO_SESSIONS_PER_CLIENT, REPHOTO_SESSION_IDLE_TIMEOUT, REPHOTO_SESSION_MAX_FPS, REPHOTO_CALIBRATION_DIR, REPHOTO_TOKEN_FILE, REPHOTO_TLS_CERT, REPHOTO_TLS_KEY, REPHOTO_SESSION_PIPELINES, REPHOTO_ALIGN_MAX_DIMENSION, REPHOTO_ALLOW_UNAUTHENTICATED (true or false).")

    @Option(parsing: .unconditional, help: "Address to bind (default 127.0.0.1; others need --token-file or --allow-unauthenticated).") var host: String?
    @Option(name: [.short, .long], parsing: .unconditional, help: "TCP port (default 8080).") var port: Int?
    @Option(name: [.customShort("j"), .long], parsing: .unconditional, help: "Pipelines running at once (default: the cores).") var concurrency: Int?
    @Option(parsing: .unconditional, help: "Requests waiting for a pipeline before 503 (default 8).") var queueLength: Int?
    @Option(parsing: .unconditional, help: "Largest request body in bytes (default 67108864).") var maxBodyBytes: Int?
    @Option(parsing: .unconditional, help: "Seconds a request may take, once its body has arrived, before 503 (default 30).", transform: decimalOption) var requestTimeout: Double?
    @Option(parsing: .unconditional, help: "Seconds a connection may go without sending any part of a request before it is closed (default 30).", transform: decimalOption) var idleTimeout: Double?
    @Option(parsing: .unconditional, help: "Bytes per second a request body must average from its first byte (after 5 s), or 408 (default 65536).", transform: decimalOption) var minBodyRate: Double?
    @Option(parsing: .unconditional, help: "Seconds a request body may take to arrive, or its connection is closed (default 120).", transform: decimalOption) var bodyTimeout: Double?
    @Option(parsing: .unconditional, help: "Uploads one client address may have in progress (default: half of concurrency + queue length).") var uploadsPerClient: Int?
    @Option(parsing: .unconditional, help: "Open connections at most; past it the one idle longest is closed (default 1024, at most half the descriptor limit).") var maxConnections: Int?
    @Option(parsing: .unconditional, help: "Bytes the store's derived files (prepared features) may take, least recently used evicted first; images are never evicted (default: no bound).") var storeBytes: Int?
    @Option(parsing: .unconditional, help: "Longer side of an image /v1/retakes/align answers, pixels (default 4096).") var alignMaxDimension: Int?
    @Option(parsing: .unconditional, help: "Folder of the content-addressed reference store, shareable by instances (default: memory only).") var referenceStore: String?
    @Option(parsing: .unconditional, help: "Memory for prepared references, bytes (default 268435456).") var cacheBytes: Int?
    @Option(parsing: .unconditional, help: "Guidance sessions open at once, past which POST /v1/sessions answers 503 (default 16).") var maxSessions: Int?
    @Option(parsing: .unconditional, help: "Guidance sessions one client address may have open, past which opening one answers 429 too_many_sessions (default: half of --max-sessions, rounded up).") var sessionsPerClient: Int?
    @Option(parsing: .unconditional, help: "Seconds a guidance session may go without a frame before it is closed (default 60).", transform: decimalOption) var sessionIdleTimeout: Double?
    @Option(parsing: .unconditional, help: "Frames per second a guidance session takes at most, after a 2 s burst; a live socket is read no faster, a faster HTTP frame gets 429 (default 30).", transform: decimalOption) var sessionMaxFps: Double?
    @Option(parsing: .unconditional, help: "Robust updates guidance sessions may run at once, on threads of their own at a lower CPU priority, apart from the scores' --concurrency (default: all but one of --concurrency, at least 1).") var sessionPipelines: Int?
    @Option(parsing: .unconditional, help: "Folder of named calibrations that requests may name (metadata calibration: \"phone\" reads phone.yml there); made absolute at start; default: none, requests send intrinsics.") var calibrationDir: String?
    @Option(parsing: .unconditional, help: "File holding the bearer token every /v1 request must send.") var tokenFile: String?
    @Flag(help: "Serve a non-loopback address without a token.") var allowUnauthenticated = false
    @Option(parsing: .unconditional, help: "PEM certificate chain: serve HTTPS and WSS (with --tls-key; scripts/dev-cert makes a self-signed pair).") var tlsCert: String?
    @Option(parsing: .unconditional, help: "PEM private key of --tls-cert.") var tlsKey: String?
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
        s.bodyTimeout = try value(bodyTimeout, "--body-timeout", "REPHOTO_BODY_TIMEOUT", decimalNumber) ?? s.bodyTimeout
        s.uploadsPerClient = try value(uploadsPerClient, "--uploads-per-client", "REPHOTO_UPLOADS_PER_CLIENT", Int.init)
        s.maxConnections = try value(maxConnections, "--max-connections", "REPHOTO_MAX_CONNECTIONS", Int.init)
        s.storeBytes = try value(storeBytes, "--store-bytes", "REPHOTO_STORE_BYTES", Int.init)
        s.alignMaxDimension = try value(alignMaxDimension, "--align-max-dimension", "REPHOTO_ALIGN_MAX_DIMENSION", Int.init) ?? s.alignMaxDimension
        s.referenceStore = try value(referenceStore, "--reference-store", "REPHOTO_REFERENCE_STORE", { $0 })
        s.cacheBytes = try value(cacheBytes, "--cache-bytes", "REPHOTO_CACHE_BYTES", Int.init) ?? s.cacheBytes
        s.maxSessions = try value(maxSessions, "--max-sessions", "REPHOTO_MAX_SESSIONS", Int.init) ?? s.maxSessions
        s.sessionsPerClient = try value(sessionsPerClient, "--sessions-per-client", "REPHOTO_SESSIONS_PER_CLIENT", Int.init)
        s.sessionIdleTimeout = try value(sessionIdleTimeout, "--session-idle-timeout", "REPHOTO_SESSION_IDLE_TIMEOUT", decimalNumber) ?? s.sessionIdleTimeout
        s.sessionMaxFps = try value(sessionMaxFps, "--session-max-fps", "REPHOTO_SESSION_MAX_FPS", decimalNumber) ?? s.sessionMaxFps
        s.sessionPipelines = try value(sessionPipelines, "--session-pipelines", "REPHOTO_SESSION_PIPELINES", Int.init)
        if let folder = try value(calibrationDir, "--calibration-dir", "REPHOTO_CALIBRATION_DIR", { $0 }) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw RephotoError.badInput("\(fromEnvironment["--calibration-dir"].map { "\($0)=\(folder)" } ?? "--calibration-dir \(folder)"): no such folder")
            }
            s.calibrationDirectory = URL(fileURLWithPath: folder).standardizedFileURL.path
        }
        let tokenPath = try value(tokenFile, "--token-file", "REPHOTO_TOKEN_FILE", { $0 })
        s.fromEnvironment = fromEnvironment
        if let file = tokenPath {
            let (token, warnings) = try BearerToken.read(file, given: s.given("--token-file", file))
            for warning in warnings { FileHandle.standardError.write(Data("rephoto serve: warning: \(warning)\n".utf8)) }
            s.token = token
            s.tokenFile = file
        }
        let certificate = try value(tlsCert, "--tls-cert", "REPHOTO_TLS_CERT", { $0 })
        let key = try value(tlsKey, "--tls-key", "REPHOTO_TLS_KEY", { $0 })
        switch (certificate, key) {
        case let (certificate?, key?): s.tls = ServerSettings.TLSFiles(certificate: certificate, key: key)
        case (nil, nil): break
        default: throw RephotoError.badInput("--tls-cert and --tls-key go together")
        }
        // A flag's variable takes true or false only: "yes" or "0" are refused, not guessed.
        s.allowUnauthenticated = try allowUnauthenticated
            || (value(nil as Bool?, "--allow-unauthenticated", "REPHOTO_ALLOW_UNAUTHENTICATED", { ["true": true, "false": false][$0] }) ?? false)
        s.pipeline = try pipeline.resolve()
        try s.validate()
        return s
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
