import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import RephotoKit
import RephotoTestSupport
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
            #expect(body["frames"] as? String == "/v1/sessions/\(id)/frames")
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
        let settings = try ServerTests.settings { $0.maxSessions = 1; $0.sessionIdleTimeout = 0.3 }
        try await ServerTests.app(settings).test(.router) { http in
            let first = try await Self.open(http)
            let upload = Upload().adding("reference", try Self.file("reference.jpg"))
            try await http.execute(uri: "/v1/sessions", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .serviceUnavailable && response.headers[.retryAfter] == "1")
                #expect(String(buffer: response.body).contains("--max-sessions"))
            }
            try await Task.sleep(for: .milliseconds(600))
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
        let sessions = LiveSessions(limit: 2, idleTimeout: 60, metrics: metrics)
        let estimator = try PoseEstimator()
        let reference = try estimator.prepareReference(estimator.decode(try Self.file("reference.jpg")), camera: nil)
        let id = try sessions.add(GuidanceSession(estimator: estimator, reference: reference, camera: nil))
        let first = try await sessions.frame(id) { _, skipped in
            for _ in 0..<2 {
                await #expect { try await sessions.frame(id) { _, _ in 0 } } throws: { error in
                    (error as? ServerError)?.status == .tooManyRequests && (error as? ServerError)?.envelope.error.code == "busy"
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
}
