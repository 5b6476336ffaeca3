import Foundation
import RephotoKit
import Synchronization

/// The guidance sessions a worker keeps open (`/v1/sessions`), independent of the transport: at most `limit` at once,
/// `perClient` of them from one client address, each closed after `idleTimeout` seconds without a frame. A session
/// computes one frame at a time; a frame that arrives meanwhile is dropped, not queued (the newest frame wins), and the
/// next answer counts it. A session takes at most `maxFps` frames a second after a burst of two seconds' worth (a token
/// bucket).
final class LiveSessions: Sendable {
    let limit: Int
    let perClient: Int
    let idleTimeout: Double
    let maxFps: Double
    private let metrics: ServerMetrics
    private let open = Mutex<[String: Entry]>([:])

    /// One session. Its `GuidanceSession` is used only by the caller that holds `busy`.
    final class Entry: @unchecked Sendable {
        private let session: GuidanceSession
        private let lock = NSLock()
        private var busy = false
        private var skipped = 0
        private var lastUsed = ContinuousClock.now
        private var tokens: Double
        private var refilled = ContinuousClock.now
        private let rate: Double
        /// The address it was opened from (--sessions-per-client).
        let client: String?

        init(_ session: GuidanceSession, maxFps: Double, client: String? = nil) {
            self.session = session
            self.client = client
            rate = maxFps
            tokens = Self.burst(maxFps)
        }

        /// Frames a session may take at once: two seconds' worth, at least one.
        static func burst(_ maxFps: Double) -> Double { max(1, 2 * maxFps) }

        /// Takes one frame's token: nil when there was one, else how long until there is.
        fileprivate func admit(at now: ContinuousClock.Instant = .now) -> Duration? {
            lock.withLock {
                tokens = min(Self.burst(rate), tokens + (now - refilled) / .seconds(1) * rate)
                refilled = now
                guard tokens < 1 else {
                    tokens -= 1
                    return nil
                }
                return .seconds((1 - tokens) / rate)
            }
        }

        /// Marks the session busy and returns the frames dropped since the last answer; nil (and one more dropped) when
        /// a frame is being computed.
        fileprivate func take() -> Int? {
            lock.withLock {
                lastUsed = .now
                guard !busy else {
                    skipped += 1
                    return nil
                }
                busy = true
                defer { skipped = 0 }
                return skipped
            }
        }

        fileprivate func release() { lock.withLock { busy = false; lastUsed = .now } }

        /// The session's answer for a frame; only between `take` and `release` (the caller holds the session).
        func process(_ image: Image, attitude: Attitude?, timestamp: Double?) throws -> SessionFrame {
            try session.process(image, attitude: attitude, timestamp: timestamp)
        }

        var estimator: PoseEstimator { session.estimator }

        fileprivate func idle(for seconds: Double, at now: ContinuousClock.Instant) -> Bool {
            lock.withLock { !busy && (now - lastUsed) / .seconds(1) > seconds }
        }
    }

    /// `perClient`: sessions one client address may hold (nil: `limit`).
    init(limit: Int, perClient: Int? = nil, idleTimeout: Double, maxFps: Double, metrics: ServerMetrics) {
        self.limit = limit
        self.perClient = perClient ?? limit
        self.idleTimeout = idleTimeout
        self.maxFps = maxFps
        self.metrics = metrics
    }

    var count: Int { open.withLock { $0.count } }

    /// Registers a session opened from `client` and returns its id (128 random bits, hex); 429 `too_many_sessions`
    /// when the address has `perClient` open, 503 when `limit` are.
    func add(_ session: GuidanceSession, client: String? = nil) throws -> String {
        sweep()
        let id = (0..<2).map { _ in
            let hex = String(UInt64.random(in: .min ... .max), radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
        let refusal = open.withLock { table -> ServiceError? in
            if let refusal = refusing(table, client: client) { return refusal }
            table[id] = Entry(session, maxFps: maxFps, client: client)
            return nil
        }
        if let refusal { throw refusal }
        metrics.sessionsOpen.set(Double(count))
        return id
    }

    /// Throws what `add` would for `client` now: checked before a session's reference is prepared, so that a client
    /// past its share costs nothing.
    func checkRoom(client: String?) throws {
        sweep()
        if let refusal = open.withLock({ refusing($0, client: client) }) { throw refusal }
    }

    private func refusing(_ table: [String: Entry], client: String?) -> ServiceError? {
        if let client, table.values.lazy.filter({ $0.client == client }).count >= perClient {
            return ServiceError(.tooManyRequests, code: "too_many_sessions", kind: .unavailable,
                                "too many sessions from this client: \(perClient) open from its address, the most one may hold (--sessions-per-client \(perClient)); close one, or let one go idle")
        }
        guard table.count < limit else {
            var full = ServiceError(.unavailable, code: "unavailable", kind: .unavailable,
                                   "\(limit) guidance sessions are open, the most this worker keeps (--max-sessions): close one, or try again once one has gone idle")
            full.retryAfterSeconds = 1
            return full
        }
        return nil
    }

    /// Runs `body` on the session's next frame; 404 for an unknown or closed session, 429 when the session is computing
    /// an earlier frame (this one is dropped). `body` gets the frames dropped since the last answer.
    /// `paced`: the transport already held the frame to the rate (`pace`).
    func frame<T: Sendable>(_ id: String, paced: Bool = false, _ body: (Entry, _ skipped: Int) async throws -> T) async throws -> T {
        sweep()
        guard let entry = open.withLock({ $0[id] }) else { throw Self.unknown(id) }
        if !paced, let wait = entry.admit() {
            metrics.sessionFramesSkipped.increment()
            var fast = ServiceError(.tooManyRequests, code: "rate", kind: .unavailable,
                                   "frame dropped: session \(id) takes at most \(String(format: "%g", maxFps)) frames per second (--session-max-fps)")
            fast.retryAfterSeconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
            throw fast
        }
        guard let skipped = entry.take() else {
            metrics.sessionFramesSkipped.increment()
            throw ServiceError(.tooManyRequests, code: "busy", kind: .unavailable,
                              "frame dropped: session \(id) is computing an earlier frame (the newest frame wins; the next answer counts the dropped ones)")
        }
        defer { entry.release() }
        return try await body(entry, skipped)
    }

    /// Waits until the session may take one more frame, and takes its place (a live socket reads no faster).
    func pace(_ id: String) async {
        guard let entry = open.withLock({ $0[id] }) else { return }
        // A cancelled sleep returns at once: stop then, rather than spin until a token is due.
        while let wait = entry.admit() {
            do { try await Task.sleep(for: wait) } catch { return }
        }
    }

    /// False when there was no such session.
    func remove(_ id: String) -> Bool {
        let removed = open.withLock { $0.removeValue(forKey: id) } != nil
        metrics.sessionsOpen.set(Double(count))
        return removed
    }

    /// Closes every session idle longer than `idleTimeout`; how many.
    @discardableResult
    func sweep(now: ContinuousClock.Instant = .now) -> Int {
        let closed = open.withLock { table -> Int in
            let expired = table.filter { $0.value.idle(for: idleTimeout, at: now) }.map(\.key)
            for id in expired { table.removeValue(forKey: id) }
            return expired.count
        }
        if closed > 0 { metrics.sessionsOpen.set(Double(count)) }
        return closed
    }

    static func unknown(_ id: String) -> ServiceError {
        ServiceError.notFound("no open session \(id.prefix(80)) (never opened, closed, or idle past --session-idle-timeout)")
    }

    /// A session id in a path: 32 lowercase hex digits, else 400.
    static func checkId(_ id: String) throws -> String {
        guard id.count == 32, id.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) }) else {
            throw ServiceError.badInput("'\(id.prefix(80))' is not a session id (32 lowercase hex digits)")
        }
        return id
    }
}
