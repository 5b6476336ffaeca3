import Foundation
import RephotoKit
import RephotoTestSupport
import Synchronization
import Testing
@testable import RephotoServer

/// `--session-pipelines`: sessions' robust updates take at most that many of the compute pool's threads, so a score
/// always finds one; their tracked answers run on a lane of their own.
@Suite struct SessionPipelinesTests {
    /// A robust update that runs until the test lets it go.
    static func blockingJob(_ gate: DispatchSemaphore, pyramid: FramePyramid, frame: Int) -> RobustUpdateJob {
        RobustUpdateJob(frame: frame, timestamp: nil, trigger: .schedule, pyramid: pyramid) {
            gate.wait()
            throw RephotoError.estimationFailed("test: released")
        }
    }

    static func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<6000 where !condition() { Thread.sleep(forTimeInterval: 0.005) }
    }

    @Test func robustUpdatesLeaveScoringAPipeline() async throws {
        var settings = try ServerTests.settings()
        settings.concurrency = 2
        #expect(settings.sessionPipelinesLimit == 1)
        let pool = ComputePool(threads: 2, queueLimit: 8, name: "test-pipelines")
        defer { pool.shutdown() }
        let pipelines = SessionPipelines(settings: settings, pool: pool, metrics: ServerMetrics())
        defer { pipelines.live.shutdown() }
        #expect(pipelines.live.threads == 1)
        let image = try Image(contentsOfFile: Fixtures.sample("graf1.png"), grayscale: true)
        let pyramid = try FramePyramid(image, config: TrackingConfig())
        let gate = DispatchSemaphore(value: 0)
        let first = Self.blockingJob(gate, pyramid: pyramid, frame: 1)
        #expect(pipelines.launch(first))
        Self.waitUntil { pool.running == 1 }
        // The one session pipeline is busy: another session's update is refused (it tries again on a later frame) ...
        let second = Self.blockingJob(gate, pyramid: pyramid, frame: 2)
        #expect(!pipelines.launch(second))
        #expect(!second.isFinished)
        // ... and a score still finds a pipeline, as does a tracked answer on the live lane.
        #expect(try await pool.run { 6 * 7 } == 42)
        #expect(try await pipelines.live.run { Thread.current.name ?? "" }.hasPrefix("rephoto-live"))
        gate.signal()
        Self.waitUntil { first.isFinished && pipelines.robustInFlight == 0 }
        #expect(first.isFinished && pipelines.robustInFlight == 0)
        let third = Self.blockingJob(gate, pyramid: pyramid, frame: 3)
        #expect(pipelines.launch(third))
        gate.signal()
        Self.waitUntil { third.isFinished }
        #expect(third.isFinished)
    }

    @Test func theSettingIsChecked() throws {
        var settings = try ServerTests.settings()
        settings.concurrency = 4
        #expect(settings.sessionPipelinesLimit == 3)
        settings.concurrency = 1
        #expect(settings.sessionPipelinesLimit == 1)
        settings.concurrency = 2
        for bad in [0, 3] {
            settings.sessionPipelines = bad
            #expect { try settings.validate() } throws: { ($0 as? RephotoError)?.message.contains("--session-pipelines \(bad)") == true }
        }
        settings.sessionPipelines = 2
        try settings.validate()
    }
}
