import RephotoTestSupport
import Foundation
import Synchronization
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct ConcurrencyTests {
    /// One prepared reference shared by concurrent tasks gives exactly the sequential answers.
    @Test func sharedReferenceFromManyTasks() async throws {
        let estimator = try PoseEstimator()
        let reference = try estimator.prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        let current = [try Fixtures.image("graf3.png"), try Fixtures.image("graf1.png")]
        let sequential = try current.map { try estimator.estimate(reference: reference, current: $0, camera: nil).homography }
        let parallel = try await withThrowingTaskGroup(of: (Int, Matrix3).self) { group in
            for i in 0..<8 {
                group.addTask { (i, try estimator.estimate(reference: reference, current: current[i % 2], camera: nil).homography) }
            }
            var out: [Int: Matrix3] = [:]
            for try await (i, h) in group { out[i] = h }
            return out
        }
        for (i, h) in parallel { #expect(h == sequential[i % 2]) }
        #expect(parallel.count == 8)
    }

    /// OpenCV's thread count is process state that crashes its TBB backend when changed under running work:
    /// once work has started, a change is refused at once (never waited for), and the work goes on unchanged.
    @Test func openCVSettingsAreRefusedOnceWorkHasStarted() throws {
        let image = try Fixtures.image("graf1.png").resized(width: 400, height: 320)
        let before = try Features(image: image, config: FeatureConfig()).keypoints
        #expect(OpenCVRuntime.hasStarted)
        let start = ContinuousClock.now
        let error = #expect(throws: RephotoError.self) { try OpenCVRuntime.configure(threads: 1) }
        #expect(error?.cause == .openCVStarted, "\(error?.message ?? "")")
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(try Features(image: image, config: FeatureConfig()).keypoints == before)
    }

    @Test func referenceFromOtherFeatureSettingsIsRefused() throws {
        let reference = try PoseEstimator().prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        var config = PipelineConfig()
        config.features.detector = .orb
        #expect(throws: RephotoError.self) { try PoseEstimator(config: config).estimate(reference: reference, current: try Fixtures.image("graf3.png"), camera: nil) }
    }
}

@Suite struct MatchIndexTests {
    /// The reference's prebuilt FLANN index gives the same matches as building one per frame, the same on
    /// every run, and the same when searched from many tasks at once.
    @Test(arguments: [DetectorKind.akaze, .sift])
    func prebuiltIndexIsDeterministicAndShareable(detector: DetectorKind) async throws {
        var config = PipelineConfig()
        config.features.detector = detector
        config.matching.matcher = .flann
        let estimator = try PoseEstimator(config: config)
        let reference = try estimator.prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        #expect(reference.matchIndex != nil)
        let current = try Features(image: try Fixtures.image("graf3.png"), config: config.features)
        let perFrame = try Matcher.match(reference: reference.features, current: current, config: config.matching)
        let indexed = try Matcher.match(reference: reference.features, current: current, config: config.matching, index: reference.matchIndex)
        let samePerFrame = indexed.matches == perFrame.matches
        #expect(samePerFrame, "\(indexed.count) indexed vs \(perFrame.count) per-frame matches")
        let again = try estimator.prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        let sameAgain = try Matcher.match(reference: again.features, current: current, config: config.matching, index: again.matchIndex).matches == indexed.matches
        #expect(sameAgain)
        let matching = config.matching
        let parallel = try await withThrowingTaskGroup(of: [Match].self) { group in
            for _ in 0..<6 {
                group.addTask { try Matcher.match(reference: reference.features, current: current, config: matching, index: reference.matchIndex).matches }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let sameParallel = parallel.allSatisfy { $0 == indexed.matches }
        #expect(sameParallel)
        // And with AKAZE the estimate through the index still meets the published graf homography.
        if detector == .akaze {
            let result = try estimator.estimate(reference: reference, current: try Fixtures.image("graf3.png"), camera: nil)
            #expect(try #require(try Fixtures.errors(result, GroundTruth(homography: try Fixtures.graf13())).cornerErrorPixels) < 2)
        }
    }
}

/// A count shared with work on other threads.
private final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add(_ n: Int) { lock.withLock { count += n } }
}

@Suite struct ComputePoolTests {
    /// Work runs on the pool's own threads, never on Swift's cooperative pool, so a task that only needs the
    /// cooperative threads (an event loop's) keeps running while every pool thread is busy.
    @Test func workRunsOffTheCooperativePool() async throws {
        let pool = ComputePool(threads: 2, name: "test-pool")
        defer { pool.shutdown() }
        let gate = DispatchSemaphore(value: 0)
        // Four blocking jobs: two hold both pool threads, two wait in the queue, until the gate opens.
        let jobs = (0..<4).map { _ in
            Task { try await pool.run { () -> Bool in
                gate.wait()
                return pool.ownsCurrentThread
            } }
        }
        while pool.running < 2 { try await Task.sleep(for: .milliseconds(1)) }
        // Meanwhile the cooperative pool still runs other tasks: had the jobs taken its threads, this would hang.
        let ticks = Atomic<Int>(0)
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(1))
            ticks.add(1, ordering: .relaxed)
        }
        #expect(ticks.load(ordering: .relaxed) == 20)
        #expect(pool.running == 2)
        #expect(!pool.ownsCurrentThread)  // this task runs on a cooperative thread
        for _ in 0..<4 { gate.signal() }
        for job in jobs { #expect(try await job.value) }
    }

    /// A full queue refuses at once with `unavailable`, so latency cannot grow without bound.
    @Test func fullQueueRefusesAtOnce() async throws {
        let pool = ComputePool(threads: 1, queueLimit: 1)
        defer { pool.shutdown() }
        let gate = DispatchSemaphore(value: 0)
        let running = Task { try await pool.run { gate.wait(); return 1 } }
        while pool.running == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let queued = Task { try await pool.run { 2 } }
        while pool.queued == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let error = await #expect(throws: RephotoError.self) { try await pool.run { 3 } }
        #expect(error?.kind == .unavailable)
        gate.signal()
        #expect(try await running.value == 1)
        #expect(try await queued.value == 2)
    }

    /// Queued work whose caller has given up is dropped when its turn comes (it never runs) and `run` fails as
    /// unavailable; work whose caller still waits runs.
    @Test func abandonedQueuedWorkIsSkipped() async throws {
        let pool = ComputePool(threads: 1)
        defer { pool.shutdown() }
        let gate = DispatchSemaphore(value: 0)
        let ran = Tally(), gaveUp = Tally()
        let running = Task { try await pool.run { gate.wait(); return 1 } }
        while pool.running == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let dropped = Task { try await pool.run(unless: { gaveUp.value > 0 }) { ran.add(1); return 2 } }
        let kept = Task { try await pool.run(unless: { false }) { ran.add(10); return 3 } }
        while pool.queued < 2 { try await Task.sleep(for: .milliseconds(1)) }
        gaveUp.add(1)
        gate.signal()
        #expect(try await running.value == 1)
        do {
            _ = try await dropped.value
            Issue.record("the abandoned work ran")
        } catch let error as RephotoError {
            #expect(error.kind == .unavailable)
        }
        #expect(try await kept.value == 3)
        #expect(ran.value == 10 && pool.skipped == 1)
    }

    /// A finished job's captures (images, results) are released, not kept by the queue: a worker that runs for
    /// months must not hold its last thousand requests.
    @Test func finishedWorkIsReleased() async throws {
        let pool = ComputePool(threads: 1)
        defer { pool.shutdown() }
        weak var released: Payload?
        do {
            let payload = Payload()
            released = payload
            #expect(try await pool.run { payload.value } == 7)
        }
        for _ in 0..<200 where released != nil { try await Task.sleep(for: .milliseconds(1)) }
        #expect(released == nil)
    }

    /// The async estimate gives exactly the synchronous answer.
    @Test func asyncEstimateEqualsSynchronous() async throws {
        let pool = ComputePool(threads: 2)
        defer { pool.shutdown() }
        let estimator = try PoseEstimator()
        let reference = try await estimator.prepareReference(try Fixtures.image("graf1.png"), camera: nil, on: pool)
        let current = try Fixtures.image("graf3.png")
        let viaPool = try await estimator.estimate(reference: reference, current: current, camera: nil, on: pool)
        let direct = try estimator.estimate(reference: reference, current: current, camera: nil)
        #expect(viaPool.homography == direct.homography && viaPool.counts == direct.counts)
    }

    /// `finish` waits for work nobody awaits any more (a timed-out request's) and ends the threads; with too
    /// short a wait it says the work is still running.
    @Test func finishWaitsForAbandonedWork() async throws {
        let pool = ComputePool(threads: 1)
        let started = DispatchSemaphore(value: 0)
        let abandoned = Task { try await pool.run { started.signal(); Thread.sleep(forTimeInterval: 0.5); return 1 } }
        started.wait()
        #expect(pool.finish(waitingAtMost: 0.05) == false)
        #expect(pool.finish(waitingAtMost: 10))
        #expect(pool.running == 0)
        #expect(try await abandoned.value == 1)
        await #expect(throws: RephotoError.self) { try await pool.run { 2 } }
    }
}

private final class Payload: Sendable {
    let value = 7
}
