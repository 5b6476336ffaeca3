import Foundation
import Glibc
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSTesting
import HummingbirdWebSocket
import Logging
import NIOCore
import RephotoKit
import RephotoTestSupport
import Synchronization
import Testing
@testable import RephotoServer

/// `/v1/sessions`: a guidance session over HTTP, frame by frame, against the bundled synth-approach sequence (its
/// truth: frames converge on the reference's view), and the limits that bound sessions.
@Suite(.serialized) struct SessionRouteTests {
    static let sequence = Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach")
    static func file(_ name: String) throws -> Data { try Data(contentsOf: sequence.appendingPathComponent(name)) }
    /// sequence.json's intrinsics, for both cameras.
    static let cameras = #"{"reference": {"intrinsics": {"fx": 391.6444049109095, "fy": 391.6444049109095, "cx": 239.5, "cy": 179.5}}, "retake": {"intrinsics": {"fx": 391.6444049109095, "fy": 391.6444049109095, "cx": 239.5, "cy": 179.5}}}"#

    static func open(_ http: some TestClientProtocol) async throws -> String {
        let upload = Upload().adding("reference", try file("reference.jpg")).adding("metadata", json: cameras)
        return try await http.execute(uri: "/v1/sessions", method: .post, headers: upload.headers, body: upload.body) { response in
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let body = ServerTests.json(response)
            let id = try #require(body["id"] as? String)
            #expect(body["frames"] as? String == "/v1/sessions/\(id)/frames" && body["schemaVersion"] as? Int == 2)
            return id
        }
    }

    static func frame(_ index: Int, timestamp: Double) throws -> Upload {
        Upload().adding("frame", try file(String(format: "frame-%04d.jpg", index))).adding("metadata", json: #"{"timestamp": \#(timestamp)}"#)
    }

    @Test func framesAreGuidedOneByOneThenTheSessionCloses() async throws {
        try await ServerTests.app(try ServerTests.settings()).test(.router) { http in
            let id = try await Self.open(http)
            var sources: [String] = []
            for k in 0..<3 {
                let upload = try Self.frame(20 + k, timestamp: Double(k) / 30)
                try await http.execute(uri: "/v1/sessions/\(id)/frames", method: .post, headers: upload.headers, body: upload.body) { response in
                    #expect(response.status == .ok, "\(String(buffer: response.body))")
                    let body = ServerTests.json(response)
                    for key in ["navigation", "metrics", "pose", "homography", "session"] { #expect(body[key] != nil, "\(key)") }
                    let session = try #require(body["session"] as? [String: Any])
                    #expect(session["frame"] as? Int == k && session["skippedFrames"] as? Int == 0)
                    #expect(body["schemaVersion"] as? Int == 2)
                    let hints = session["hints"] as? [String] ?? []
                    let actions = try JSONDecoder().decode([GuidanceAction].self, from: JSONSerialization.data(withJSONObject: session["actions"] ?? []))
                    #expect(actions.map(\.text) == hints, "\(hints) \(actions)")
                    #expect(session["ageFrames"] as? Int == k)
                    sources.append(session["source"] as? String ?? "")
                }
            }
            #expect(sources == ["robust", "tracked", "tracked"])
            try await http.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(text.contains("rephoto_sessions_open 1") && text.contains("rephoto_session_frames_total 3"), "\(text.prefix(4000))")
            }
            try await http.execute(uri: "/v1/sessions/\(id)", method: .delete) { #expect($0.status == .noContent) }
            try await http.execute(uri: "/v1/sessions/\(id)", method: .delete) { #expect($0.status == .notFound) }
            let upload = try Self.frame(23, timestamp: 0.1)
            try await http.execute(uri: "/v1/sessions/\(id)/frames", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .notFound && ServerTests.errorCode(response) == "not_found")
            }
            try await http.execute(uri: "/v1/sessions/not-an-id/frames", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .badRequest)
            }
            try await http.execute(uri: "/v1/sessions/\(id)", method: .get) { #expect($0.status == .methodNotAllowed) }
        }
    }

    @Test func badFramesAreRefusedWithTheirReason() async throws {
        try await ServerTests.app(try ServerTests.settings()).test(.router) { http in
            let id = try await Self.open(http)
            let cases: [(Upload, String)] = [
                (Upload().adding("metadata", json: "{}"), "missing part 'frame'"),
                (Upload().adding("frame", try Self.file("frame-0000.jpg")).adding("metadata", json: #"{"timestamps": 1}"#), "unknown key 'timestamps'"),
                (Upload().adding("frame", try Self.file("frame-0000.jpg")).adding("metadata", json: #"{"timestamp": "soon"}"#), "metadata"),
                (Upload().adding("frame", try Self.file("frame-0000.jpg")).adding("metadata", json: #"{"attitude": {"quaternion": [1, 0, 0]}}"#), "4 numbers"),
                (Upload().adding("frame", Data("not an image".utf8)), "format"),
            ]
            for (upload, reason) in cases {
                try await http.execute(uri: "/v1/sessions/\(id)/frames", method: .post, headers: upload.headers, body: upload.body) { response in
                    #expect(response.status.code / 100 == 4, "\(reason): \(response.status)")
                    #expect(String(buffer: response.body).contains(reason), "\(String(buffer: response.body))")
                }
            }
            // A frame's attitude with a session opened without the reference's: accepted, no sensor path.
            let noAttitude = Upload().adding("frame", try Self.file("frame-0000.jpg"))
            try await http.execute(uri: "/v1/sessions/\(id)/frames", method: .post, headers: noAttitude.headers, body: noAttitude.body) { response in
                #expect(response.status == .ok)
            }
            let withRetakeAttitude = Upload().adding("reference", try Self.file("reference.jpg"))
                .adding("metadata", json: #"{"retake": {"attitude": {"quaternion": [1, 0, 0, 0]}}}"#)
            try await http.execute(uri: "/v1/sessions", method: .post, headers: withRetakeAttitude.headers, body: withRetakeAttitude.body) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("frames send their own attitudes"))
            }
        }
    }

    /// --max-sessions bounds the sessions open (503 with Retry-After past it); an idle one is closed after
    /// --session-idle-timeout and makes room.
    @Test func sessionsAreBoundedAndExpire() async throws {
        // An idle timeout of 0.3 s, then 2 s, let the first session expire before a loaded machine had answered the
        // second request (which took 2.5 s with a build beside it).
        let settings = try ServerTests.settings { $0.maxSessions = 1; $0.sessionIdleTimeout = 8 }
        try await ServerTests.app(settings).test(.router) { http in
            let first = try await Self.open(http)
            let upload = Upload().adding("reference", try Self.file("reference.jpg"))
            try await http.execute(uri: "/v1/sessions", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .serviceUnavailable && response.headers[.retryAfter] == "1")
                #expect(String(buffer: response.body).contains("--max-sessions"))
            }
            try await Task.sleep(for: .milliseconds(10_000))
            let second = try await Self.open(http)
            #expect(second != first)
            let frame = try Self.frame(20, timestamp: 0)
            try await http.execute(uri: "/v1/sessions/\(first)/frames", method: .post, headers: frame.headers, body: frame.body) { response in
                #expect(response.status == .notFound && String(buffer: response.body).contains("idle past --session-idle-timeout"))
            }
        }
    }

    /// A frame that arrives while the session computes one is dropped (429 busy), not queued, and the next answer
    /// counts it.
    @Test func aFrameWhileBusyIsDroppedAndCounted() async throws {
        let metrics = ServerMetrics()
        let sessions = LiveSessions(limit: 2, idleTimeout: 60, maxFps: 1000, metrics: metrics)
        let estimator = try PoseEstimator()
        let reference = try estimator.prepareReference(estimator.decode(try Self.file("reference.jpg")), camera: nil)
        let id = try sessions.add(GuidanceSession(estimator: estimator, reference: reference, camera: nil))
        let first = try await sessions.frame(id) { _, skipped in
            for _ in 0..<2 {
                await #expect { try await sessions.frame(id) { _, _ in 0 } } throws: { error in
                    (error as? ServiceError).map { ServerError($0).status } == .tooManyRequests && (error as? ServiceError)?.envelope.error.code == "busy"
                }
            }
            return skipped
        }
        let second = try await sessions.frame(id) { _, skipped in skipped }
        let third = try await sessions.frame(id) { _, skipped in skipped }
        #expect(first == 0 && second == 2 && third == 0)
        #expect(metrics.text().contains("rephoto_session_frames_skipped_total 2"))
        #expect(sessions.remove(id) && !sessions.remove(id) && sessions.count == 0)
    }

    /// --session-max-fps: past its burst (two seconds' worth, at least one frame) a frame over HTTP is refused 429
    /// `rate` with the wait, and a live socket is paced, its next frame taken only once the rate allows.
    @Test func framesFasterThanTheRateAreRefusedOrPaced() async throws {
        let sessions = LiveSessions(limit: 2, idleTimeout: 60, maxFps: 0.5, metrics: ServerMetrics())
        let estimator = try PoseEstimator()
        let reference = try estimator.prepareReference(estimator.decode(try Self.file("reference.jpg")), camera: nil)
        let id = try sessions.add(GuidanceSession(estimator: estimator, reference: reference, camera: nil))
        #expect(try await sessions.frame(id) { _, _ in 1 } == 1)
        await #expect { try await sessions.frame(id) { _, _ in 0 } } throws: { error in
            guard let error = error as? ServiceError else { return false }
            return ServerError(error).status == .tooManyRequests && error.envelope.error.code == "rate" && error.retryAfterSeconds == 2
                && error.envelope.error.message.contains("at most 0.5 frames per second (--session-max-fps)")
        }
        let start = ContinuousClock.now
        await sessions.pace(id)
        #expect(ContinuousClock.now - start > .milliseconds(1_900), "one frame every 2 s: \(ContinuousClock.now - start)")
        #expect(try await sessions.frame(id, paced: true) { _, _ in 2 } == 2)
    }
}

/// The live session over a WebSocket (`GET /v1/sessions` upgraded): the opening, frames answered one by one, the newest
/// frame winning over those that arrive while one is computed, and a bad opening refused.
@Suite(.serialized) struct SessionSocketTests {
    static func text(_ message: WebSocketMessage?) -> String {
        guard case .text(let text)? = message else { return "" }
        return text
    }

    static func object(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    static func frame(_ index: Int) throws -> ByteBuffer { ByteBuffer(bytes: try SessionRouteTests.file(String(format: "frame-%04d.jpg", index))) }

    @Test func aLiveSessionAnswersFramesAndTheNewestWins() async throws {
        try await ServerTests.app(try ServerTests.settings()).test(.live) { client in
            let result = Mutex<[String]>([])
            try await client.ws("/v1/sessions") { inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 22).makeAsyncIterator()
                try await outbound.write(.text(#"{"reference": "upload", "metadata": \#(SessionRouteTests.cameras)}"#))
                try await outbound.write(.binary(ByteBuffer(bytes: try SessionRouteTests.file("reference.jpg"))))
                var answers = [Self.text(try await messages.next())]
                // Bad metadata is answered, and the session goes on.
                try await outbound.write(.text(#"{"timestamps": 1}"#))
                let refused = Self.object(Self.text(try await messages.next()))
                let message = (refused["error"] as? [String: Any])?["message"] as? String
                #expect(message?.contains("unknown key 'timestamps'") == true && message?.hasSuffix("(the frame sent next is not computed)") == true, "\(refused)")
                // Its frame is dropped: computed without its metadata, it would skip the timestamp's and attitude's checks.
                try await outbound.write(.binary(try Self.frame(20)))
                // One at a time: each frame is answered.
                for k in 0..<2 {
                    try await outbound.write(.text(#"{"timestamp": \#(Double(k) / 30)}"#))
                    try await outbound.write(.binary(try Self.frame(20 + k)))
                    answers.append(Self.text(try await messages.next()))
                }
                // Six at once: the first is computed, the newest waits, the others are dropped and counted.
                for k in 2..<8 {
                    try await outbound.write(.text(#"{"timestamp": \#(Double(k) / 30)}"#))
                    try await outbound.write(.binary(try Self.frame(20 + k)))
                }
                var skipped = 0, answered = 0
                while answered + skipped < 6 {
                    let answer = Self.text(try await messages.next())
                    answers.append(answer)
                    let session = Self.object(answer)["session"] as? [String: Any] ?? [:]
                    skipped += session["skippedFrames"] as? Int ?? 0
                    answered += 1
                }
                try await outbound.close(.normalClosure, reason: nil)
                result.withLock { $0 = answers }
            }
            let answers = result.withLock { $0 }.map(Self.object)
            #expect((answers.first?["opened"] as? [String: Any])?["idleTimeoutSeconds"] as? Double == 60)
            let sessions = answers.dropFirst().map { $0["session"] as? [String: Any] ?? [:] }
            #expect(sessions.prefix(2).map { $0["source"] as? String } == ["robust", "tracked"])
            #expect(sessions.prefix(2).map { $0["frame"] as? Int } == [0, 1])
            #expect(sessions.prefix(2).map { $0["timestamp"] as? Double } == [0, 1.0 / 30])
            // Six sent at once, fewer computed: every one either answered or counted as dropped, the last one answered.
            let burst = sessions.dropFirst(2)
            #expect(burst.count < 6 && burst.count + burst.map { $0["skippedFrames"] as? Int ?? 0 }.reduce(0, +) == 6, "\(burst)")
            #expect(abs((burst.last?["timestamp"] as? Double ?? 0) - 7.0 / 30) < 1e-9)
            #expect(answers.dropFirst().allSatisfy { $0["navigation"] != nil })
            // The client gone, its session is gone too.
            var open = ""
            for _ in 0..<20 {
                open = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                if open.contains("rephoto_sessions_open 0") { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(open.contains("rephoto_sessions_open 0"))
        }
    }

    /// On shutdown an open live session is told, and closed as going away.
    @Test func shutdownTellsTheLiveClient() async throws {
        let watcher = ShutdownWatcher()
        let app = try RetakeServer.makeApplication(settings: try ServerTests.settings(), logger: Logger(label: "test"), shutdown: watcher)
        try await app.test(.live) { client in
            let reply = Mutex("")
            let close = try await client.ws("/v1/sessions") { inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await outbound.write(.text(#"{"reference": "upload"}"#))
                try await outbound.write(.binary(ByteBuffer(bytes: try SessionRouteTests.file("reference.jpg"))))
                _ = try await messages.next()
                watcher.begin()
                let answer = Self.text(try await messages.next())
                reply.withLock { $0 = answer }
                _ = try await messages.next()
            }
            let error = Self.object(reply.withLock { $0 })["error"] as? [String: Any]
            #expect(error?["code"] as? String == "unavailable" && (error?["message"] as? String ?? "").contains("shutting down"))
            #expect(close?.closeCode == .goingAway)
        }
    }

    /// A connection a live session holds is never the idle one evicted at --max-connections: it had no request
    /// in progress and was the oldest, so a flood of idle connections closed the session first.
    @Test func aLiveSessionIsNotEvictedForIdleConnections() async throws {
        try await ServerTests.app(try ServerTests.settings { $0.maxConnections = 4 }).test(.live) { client in
            let port = try #require(client.port)
            let answer = Mutex("")
            try await client.ws("/v1/sessions") { inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 22).makeAsyncIterator()
                try await outbound.write(.text(#"{"reference": "upload", "metadata": \#(SessionRouteTests.cameras)}"#))
                try await outbound.write(.binary(ByteBuffer(bytes: try SessionRouteTests.file("reference.jpg"))))
                _ = try await messages.next()
                // Six idle connections past the limit of four, held past the eviction grace (1 s).
                let idle = (0..<6).map { _ in Self.rawConnection(port) }
                defer { for socket in idle { close(socket) } }
                try await Task.sleep(for: .milliseconds(1_600))
                try await outbound.write(.binary(try Self.frame(20)))
                let text = Self.text(try await messages.next())
                answer.withLock { $0 = text }
                try await outbound.close(.normalClosure, reason: nil)
            }
            let session = Self.object(answer.withLock { $0 })["session"] as? [String: Any]
            #expect(session?["source"] as? String == "robust", "\(answer.withLock { $0 })")
        }
    }

    /// A TCP connection to the worker on `port` that sends nothing.
    static func rawConnection(_ port: Int) -> Int32 { loopbackConnection(port) ?? -1 }

    @Test func aFrameBeforeTheOpeningClosesTheSocket() async throws {
        try await ServerTests.app(try ServerTests.settings()).test(.live) { client in
            let reply = Mutex("")
            let close = try await client.ws("/v1/sessions") { inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await outbound.write(.binary(try Self.frame(0)))
                let answer = Self.text(try await messages.next())
                reply.withLock { $0 = answer }
                _ = try await messages.next()
            }
            let error = Self.object(reply.withLock { $0 })["error"] as? [String: Any]
            #expect(error?["code"] as? String == "bad_input" && (error?["message"] as? String ?? "").contains("open the session first"))
            #expect(close?.closeCode == .policyViolation)
        }
    }
}
