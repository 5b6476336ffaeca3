import Foundation
import Glibc
import RephotoKit
import RephotoTestSupport
import Synchronization
import Testing
@testable import RephotoServer

/// `--session-pipelines`: sessions' robust updates run on a lane of that many threads of their own, at a lower CPU
/// priority, and past it wait for a later frame; tracked answers run on a live lane; the scores' pool is never theirs.
@Suite struct SessionPipelinesTests {
    /// A robust update that runs until the test lets it go.
    /// `nice`: where it records its thread's nice value (Linux keeps one per thread; `who` 0 is the calling thread).
    final class Recorded: Sendable { let nice = Atomic<Int32>(-100) }

    static func blockingJob(_ gate: DispatchSemaphore, pyramid: FramePyramid, frame: Int, recorded: Recorded? = nil) -> RobustUpdateJob {
        RobustUpdateJob(frame: frame, timestamp: nil, trigger: .schedule, pyramid: pyramid) {
            recorded?.nice.store(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), ordering: .relaxed)
            gate.wait()
            throw RephotoError.estimationFailed("test: released")
        }
    }

    /// Polls without holding a thread of the cooperative pool.
    static func waitUntil(_ condition: () -> Bool) async {
        for _ in 0..<6000 where !condition() { try? await Task.sleep(for: .milliseconds(5)) }
    }

    @Test func robustUpdatesLeaveScoringAPipeline() async throws {
        var settings = try ServerTests.settings()
        settings.concurrency = 2
        #expect(settings.sessionPipelinesLimit == 1)
        let pool = ComputePool(threads: 2, queueLimit: 8, name: "test-pipelines")
        defer { pool.shutdown() }
        let pipelines = SessionPipelines(settings: settings, metrics: ServerMetrics())
        defer { _ = pipelines.finish(waitingAtMost: 10) }
        #expect(pipelines.live.threads == 2 && pipelines.robust.threads == 1)
        let image = try Image(contentsOfFile: Fixtures.sample("graf1.png"), grayscale: true)
        let pyramid = try FramePyramid(image, config: TrackingConfig())
        let gate = DispatchSemaphore(value: 0)
        let recorded = Recorded()
        let first = Self.blockingJob(gate, pyramid: pyramid, frame: 1, recorded: recorded)
        #expect(pipelines.launch(first))
        await Self.waitUntil { pipelines.robust.running == 1 && recorded.nice.load(ordering: .relaxed) != -100 }
        // Its thread runs at a lower priority than the answers' and the scores' (Linux's per-thread nice value).
        let scores = try await pool.run { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
        #expect(recorded.nice.load(ordering: .relaxed) == min(19, scores + SessionPipelines.robustNice))
        // The one session pipeline is busy: another session's update is refused (it tries again on a later frame) ...
        let second = Self.blockingJob(gate, pyramid: pyramid, frame: 2)
        #expect(!pipelines.launch(second))
        #expect(!second.isFinished)
        // ... and a score still finds both pipelines, as does a tracked answer on the live lane.
        async let a = pool.run { 6 * 7 }
        async let b = pool.run { 6 * 7 }
        #expect(try await a + b == 84)
        let live = pipelines.live
        #expect(try await live.run { live.ownsCurrentThread })
        let answers = try await live.run { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
        #expect(answers == min(19, scores + SessionPipelines.liveNice) && answers < recorded.nice.load(ordering: .relaxed))
        gate.signal()
        await Self.waitUntil { first.isFinished && pipelines.robustInFlight == 0 }
        #expect(first.isFinished && pipelines.robustInFlight == 0)
        let third = Self.blockingJob(gate, pyramid: pyramid, frame: 3)
        #expect(pipelines.launch(third))
        gate.signal()
        await Self.waitUntil { third.isFinished }
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
