import Foundation
import RephotoKit

/// Everything `rephoto serve` is configured with (flags, or REPHOTO_* environment variables).
public struct ServerSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Pipelines running at once (the compute pool's threads).
    public var concurrency = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Requests waiting for a pipeline; beyond it the answer is 503 with Retry-After, at once.
    public var queueLength = 8
    /// Largest request body, bytes (a multipart upload of two photos and metadata).
    public var maxBodyBytes = 64 << 20
    /// Longest a request may take, seconds; then 503 (the pipeline's work is abandoned, not interrupted).
    public var requestTimeout = 30.0
    /// Longest a connection may go without sending any part of a request, seconds; then it is closed (a
    /// client trickling a header one byte at a time held its connection and memory indefinitely).
    public var idleTimeout = 30.0
    /// Slowest pace a request body may arrive at, bytes per second from its first byte after
    /// `bodyRateAllowance` (or `idleTimeout` when shorter); then 408 (a client sending a byte every few seconds never trips the idle timeout).
    public var minBodyRate = 65536.0
    /// Longest a request body may take to arrive, seconds, whatever its pace; then the connection is closed.
    public var bodyTimeout = 120.0
    /// Uploads one client address may have in progress at once (nil: half of concurrency + queue length,
    /// rounded up). Behind a proxy every client has the proxy's address: set it to that sum there.
    public var uploadsPerClient: Int?
    /// Open connections at most (nil: 1024, and at most half the process's descriptor limit). Past it the
    /// connection idle longest is closed for a new one; when none is idle, new ones wait in the listen queue.
    public var maxConnections: Int?
    /// Bytes the reference store's derived files (features) may take; least recently used first out past it.
    /// Originals are never evicted. nil: no bound.
    public var storeBytes: Int?
    /// Guidance sessions open at once (`POST /v1/sessions`); past it the answer is 503. Each holds two frame
    /// pyramids (about 9 MB each at 1280x960) and its structure beside the shared prepared reference.
    public var maxSessions = 16
    /// Guidance sessions one client address may have open (nil: half of `maxSessions`, rounded up); past it 429
    /// `too_many_sessions`. Behind a proxy every client has the proxy's address: set it to `maxSessions` there.
    public var sessionsPerClient: Int?
    /// Seconds a session may go without a frame before it is closed.
    public var sessionIdleTimeout = 60.0
    /// Frames per second a session takes at most, after a burst of two seconds' worth: a live socket reads no faster
    /// (its client waits), a faster HTTP frame gets 429 `rate`. Bounds the work a flooding client causes.
    public var sessionMaxFps = 30.0
    /// Robust updates guidance sessions may run at once (nil: all but one of `concurrency` when there are two or more),
    /// on threads of their own at a lower CPU priority: the scores' pool is never theirs, and a session whose update is
    /// due while all are busy is answered from tracking and tries again on its next frame. Sessions' tracked answers
    /// run on a live lane of `concurrency` threads, never behind a robust update.
    public var sessionPipelines: Int?
    /// The file the bearer token was read from, read again on SIGHUP (nil: the token, if any, was given directly).
    public var tokenFile: String?

    /// Seconds a body may lag --min-body-rate by: TCP's slow start and a client's first write.
    public static let bodyRateAllowance = 5.0

    /// `sessionPipelines`, or its default.
    public var sessionPipelinesLimit: Int { sessionPipelines ?? max(1, concurrency - 1) }

    /// `uploadsPerClient`, or its default.
    public var uploadsPerClientLimit: Int { uploadsPerClient ?? max(1, (concurrency + queueLength + 1) / 2) }

    /// `sessionsPerClient`, or its default.
    public var sessionsPerClientLimit: Int { sessionsPerClient ?? max(1, (maxSessions + 1) / 2) }

    /// `maxConnections`, or its default under the descriptor limit `descriptors` (the soft RLIMIT_NOFILE).
    public func connectionLimit(descriptors: Int) -> Int {
        maxConnections ?? max(8, min(1024, descriptors / 2))
    }
    /// Longer side of an aligned image, pixels: both photos are decoded no larger (JPEGs by DCT scaling). At full
    /// size, aligning two 39 MP photos peaked at 799 MB, where a pipeline is budgeted about 350 MB.
    public var alignMaxDimension = 4096
    /// Content-addressed reference store shared by instances (nil: references live in memory only).
    public var referenceStore: String?
    /// Memory for prepared references (features), bytes.
    public var cacheBytes = 256 << 20
    /// Named calibrations (`metadata.reference.calibration: "phone"` reads `<dir>/phone.yml`); nil: none are served.
    /// `rephoto serve` makes the path absolute at start, so it never depends on a later working folder.
    public var calibrationDirectory: String?
    /// Bearer token required on every /v1 request (nil: none).
    public var token: String?
    public var allowUnauthenticated = false
    /// The pipeline's settings; a request may override some (not its limits).
    public var pipeline = PipelineConfig()
    /// The environment variable each option read from the environment came from, by flag: an error names
    /// what the operator set, not a flag they never typed.
    public var fromEnvironment: [String: String] = [:]

    /// A certificate chain and its private key, PEM files: the worker serves HTTPS and WSS (nil: plain HTTP).
    public struct TLSFiles: Sendable {
        public var certificate: String
        public var key: String
        public init(certificate: String, key: String) { self.certificate = certificate; self.key = key }
    }
    public var tls: TLSFiles?

    public init() {}

    /// An option and its value as the operator gave them: `--port 70000` or `REPHOTO_PORT=70000`.
    public func given(_ flag: String, _ value: Any) -> String {
        fromEnvironment[flag].map { "\($0)=\(value)" } ?? "\(flag) \(value)"
    }

    /// Refuses settings that cannot work, and an open, unauthenticated bind.
    public func validate() throws {
        // An empty host would bind every address of some resolvers and none of others; the refusal to serve it
        // without a token then named no address at all.
        guard !host.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw RephotoError.badInput("\(given("--host", "'\(host)'")) is empty: name an address (127.0.0.1, 0.0.0.0, ::1)")
        }
        guard (0...65535).contains(port) else { throw RephotoError.badInput("\(given("--port", port)) is not a TCP port") }
        // Bounded: every pipeline is a thread made up front (5,000 could not all be made), and a timeout becomes
        // a Duration (1e19 s overflowed it and stopped the worker on its first request).
        guard (1...1024).contains(concurrency) else { throw RephotoError.badInput("\(given("--concurrency", concurrency)) must be 1 to 1024") }
        guard (0...1_000_000).contains(queueLength) else { throw RephotoError.badInput("\(given("--queue-length", queueLength)) must be 0 to 1000000") }
        guard maxBodyBytes >= 1024 else { throw RephotoError.badInput("\(given("--max-body-bytes", maxBodyBytes)) is too small for an upload") }
        guard requestTimeout >= 0.001, requestTimeout <= 86400 else { throw RephotoError.badInput("\(given("--request-timeout", requestTimeout)) must be 0.001 to 86400 seconds") }
        guard idleTimeout >= 0.1, idleTimeout <= 86400 else { throw RephotoError.badInput("\(given("--idle-timeout", idleTimeout)) must be 0.1 to 86400 seconds") }
        guard (64...65536).contains(alignMaxDimension) else { throw RephotoError.badInput("\(given("--align-max-dimension", alignMaxDimension)) must be 64 to 65536 pixels") }
        guard bodyTimeout >= 1, bodyTimeout <= 86400 else { throw RephotoError.badInput("\(given("--body-timeout", bodyTimeout)) must be 1 to 86400 seconds") }
        if let n = uploadsPerClient, !(1...1_000_000).contains(n) {
            throw RephotoError.badInput("\(given("--uploads-per-client", n)) must be 1 to 1000000")
        }
        if let n = maxConnections, !(2...1_000_000).contains(n) {
            throw RephotoError.badInput("\(given("--max-connections", n)) must be 2 to 1000000")
        }
        if let n = storeBytes {
            guard referenceStore != nil else { throw RephotoError.badInput("\(given("--store-bytes", n)) needs --reference-store") }
            guard n >= 0 else { throw RephotoError.badInput("\(given("--store-bytes", n)) must be at least 0") }
        }
        guard minBodyRate >= 1, minBodyRate.isFinite else { throw RephotoError.badInput("\(given("--min-body-rate", minBodyRate)) must be at least 1 byte per second") }
        if referenceStore?.isEmpty == true {
            throw RephotoError.badInput("\(given("--reference-store", "''")) is empty: name a folder, or leave it out to keep references in memory")
        }
        guard (0...10_000).contains(maxSessions) else { throw RephotoError.badInput("\(given("--max-sessions", maxSessions)) must be 0 to 10000") }
        if let n = sessionsPerClient, !(1...10_000).contains(n) {
            throw RephotoError.badInput("\(given("--sessions-per-client", n)) must be 1 to 10000")
        }
        guard sessionIdleTimeout >= 0.1, sessionIdleTimeout <= 86400 else {
            throw RephotoError.badInput("\(given("--session-idle-timeout", sessionIdleTimeout)) must be 0.1 to 86400 seconds")
        }
        guard sessionMaxFps >= 0.1, sessionMaxFps <= 1000 else {
            throw RephotoError.badInput("\(given("--session-max-fps", sessionMaxFps)) must be 0.1 to 1000 frames per second")
        }
        if let n = sessionPipelines, !(1...concurrency).contains(n) {
            throw RephotoError.badInput("\(given("--session-pipelines", n)) must be 1 to --concurrency (\(concurrency))")
        }
        guard cacheBytes >= 0 else { throw RephotoError.badInput("\(given("--cache-bytes", cacheBytes)) must be at least 0") }
        if token == nil, !allowUnauthenticated, !Self.isLoopback(host) {
            throw RephotoError.badInput("refusing to serve \(host) without a token: give --token-file, or --allow-unauthenticated on a trusted network")
        }
        try pipeline.validate()
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
