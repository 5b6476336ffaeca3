import RephotoTestSupport
import Foundation
import Synchronization
import Testing
import RephotoKit
import RephotoData

/// Robust updates off the answer path (`RobustUpdates`): joined a fixed number of frames later, or whenever another
/// pipeline finishes them; and the camera of an old reference combined over a session's robust updates.
@Suite struct RobustUpdatesTests {
    /// A launcher that holds its jobs until the test runs or refuses them, or takes none.
    final class HeldLauncher: RobustUpdateLauncher {
        let jobs = Mutex<[RobustUpdateJob]>([])
        let accepting = Atomic<Bool>(true)
        func launch(_ job: RobustUpdateJob) -> Bool {
            guard accepting.load(ordering: .relaxed) else { return false }
            jobs.withLock { $0.append(job) }
            return true
        }
        /// The jobs launched so far, handed over once.
        func take() -> [RobustUpdateJob] { jobs.withLock { taken in defer { taken = [] }; return taken } }
    }

    static func session(_ sequence: FrameSequence, robustEvery: Int, updates: RobustUpdates) throws -> (GuidanceSession, PoseEstimator) {
        var config = PipelineConfig()
        config.session.robustEvery = robustEvery
        let estimator = try PoseEstimator(config: config)
        let reference = try estimator.prepareReference(estimator.load(contentsOfFile: sequence.path(of: sequence.manifest.reference!)),
                                                       camera: sequence.camera())
        return (GuidanceSession(estimator: estimator, reference: reference, camera: try sequence.camera(), robustUpdates: updates), estimator)
    }

    static func angle(_ step: Step, _ truth: SIMD3<Double>) -> Double {
        let v = SIMD3(step.vector[0], step.vector[1], step.vector[2])
        return acos(max(-1, min(1, (v * truth).sum() / (step.baselines * (truth * truth).sum().squareRoot())))) * 180 / .pi
    }

    /// Joined two frames late, on the rendered walk: only the first frame waits for a robust update; every later one is
    /// answered from tracking, an update joined exactly `lag` frames after its own frame, and no answer rests on an
    /// update older than the last one joined. The step still points to the vantage point (median within 15°, as the
    /// inline session's test asks) and no rotation is confidently wrong.
    @Test func deferredUpdatesAreJoinedLagFramesLater() throws {
        let sequence = try GuidanceSessionTests.walk()
        let lag = 2
        let (session, estimator) = try Self.session(sequence, robustEvery: 6, updates: .deferred(lag: lag))
        var launchedAt: [Int] = [], joinedAt: [Int] = [], restsOn = 0, errors: [Double] = []
        for (index, frame) in sequence.currentFrames.enumerated() {
            let answer = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)), timestamp: frame.timestamp)
            let s = answer.session
            if index == 0 {
                #expect(s.source == .robust && s.trigger == .start && s.ageFrames == 0)
                continue
            }
            #expect(s.source == .tracked, "frame \(index): \(s.source) \(s.reason ?? "")")
            if s.trigger != nil { launchedAt.append(index) }
            if s.robustMilliseconds != nil {
                joinedAt.append(index)
                #expect(s.ageFrames == lag, "frame \(index) joined an update of frame \(index - s.ageFrames)")
                #expect(launchedAt.contains(index - lag))
                restsOn = index - lag
            }
            #expect(index - s.ageFrames == restsOn, "frame \(index) rests on frame \(index - s.ageFrames), the last joined is \(restsOn)")
            if abs((s.ageSeconds ?? -1) - Double(s.ageFrames) / 30) > 1e-9 { Issue.record("frame \(index): age \(s.ageSeconds ?? -1) s") }
            if let step = s.step, let truth = frame.truthTranslation { errors.append(Self.angle(step, truth)) }
            if let rotation = answer.result?.pose?.rotation, let truth = frame.truthRotation {
                #expect(Matrix3.angleDegrees(between: rotation, and: truth.rotationMatrix) < 10, "\(frame.file): a confident wrong rotation")
            }
        }
        #expect(launchedAt.count >= 3, "updates launched on \(launchedAt)")
        #expect(joinedAt.count >= launchedAt.count - 1, "launched \(launchedAt), joined \(joinedAt)")
        let sorted = errors.sorted()
        #expect(sorted.count >= 10 && sorted[sorted.count / 2] <= 15, "step errors \(errors)")
    }

    /// On another pipeline: a frame never waits for the update it launched, the frames while it runs rest on the older
    /// one, and the first frame after it finished joins it. An update that no pipeline takes, or that is refused after
    /// all, is tried again on the next frame.
    @Test func concurrentUpdatesNeverHoldAnAnswer() throws {
        let sequence = try GuidanceSessionTests.walk()
        let launcher = HeldLauncher()
        let (session, estimator) = try Self.session(sequence, robustEvery: 3, updates: .concurrent(launcher))
        let frames = try sequence.currentFrames.map { try estimator.load(contentsOfFile: sequence.path(of: $0.file)) }
        // Nothing else can answer the first frame: it waits for its own update, which never reaches the launcher.
        let first = try session.process(frames[0])
        #expect(first.session.source == .robust && launcher.take().isEmpty)
        for k in 1...2 { #expect(try session.process(frames[k]).session.source == .tracked) }
        let due = try session.process(frames[3])
        #expect(due.session.source == .tracked && due.session.trigger == .schedule && due.session.ageFrames == 3)
        let jobs = launcher.take()
        #expect(jobs.count == 1 && jobs.first?.frame == 3 && jobs.first?.isFinished == false)
        #expect(session.robustUpdateRunning)
        // Still running: answered from the older update's tracks, and no second update is launched.
        let waiting = try session.process(frames[4])
        #expect(waiting.session.source == .tracked && waiting.session.ageFrames == 4 && waiting.session.robustMilliseconds == nil)
        #expect(launcher.take().isEmpty)
        let job = try #require(jobs.first)
        let worker = Thread { job.run() }
        worker.start()
        while !job.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        let joined = try session.process(frames[5])
        #expect(joined.session.source == .tracked && joined.session.ageFrames == 2, "\(joined.session)")
        #expect(joined.evidence?.joined == .done(frame: 3), "\(String(describing: joined.evidence))")
        #expect((joined.session.robustMilliseconds ?? 0) > 0 && !session.robustUpdateRunning)

        // Frame 8 is due again (3 after frame 5's join rests on frame 3, at 6): no pipeline free, tried on the next.
        #expect(try session.process(frames[6]).session.trigger == .schedule)
        let refused = try #require(launcher.take().first)
        refused.refuse("test: the pool was full")
        launcher.accepting.store(false, ordering: .relaxed)
        let failed = try session.process(frames[7])
        #expect(failed.session.source == .tracked && failed.session.trigger == nil, "\(failed.session)")
        #expect(failed.evidence?.joined == .failed(frame: 6, kind: .unavailable), "\(String(describing: failed.evidence))")
        launcher.accepting.store(true, ordering: .relaxed)
        let retried = try session.process(frames[8])
        #expect(retried.session.trigger != nil && launcher.take().count == 1, "\(retried.session)")
    }

    /// An unrelated frame mid-session, updates joined later: the frame is held with its age, not guessed, and not made
    /// to wait; tracking resumes from the first update that succeeds on the real frames again.
    @Test func aLostFrameIsHeldWhileItsUpdateRuns() throws {
        let sequence = try GuidanceSessionTests.walk()
        let (session, estimator) = try Self.session(sequence, robustEvery: 100, updates: .deferred(lag: 1))
        let frames = sequence.currentFrames
        for frame in frames.prefix(3) { _ = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file))) }
        let noise = try Image(contentsOfFile: Fixtures.sample("baboon.jpg"), grayscale: true).resized(width: 640, height: 480)
        let held = try session.process(noise)
        #expect(held.session.source == .held && held.session.trigger == .support && held.session.ageFrames == 3)
        var sources: [SessionStatus.Source] = []
        for frame in frames[3..<10] {
            let answer = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)))
            sources.append(answer.session.source)
            if answer.session.source == .held { #expect(answer.session.ageFrames > 3) }
        }
        #expect(!sources.contains(.robust), "\(sources)")
        #expect(sources.last == .tracked, "\(sources)")
        #expect(sources.filter { $0 == .held }.count <= 4, "\(sources)")
        // A frame of another size: no earlier answer describes it, so it waits for its own update.
        let small = try estimator.load(contentsOfFile: sequence.path(of: frames[10].file)).resized(width: 320, height: 240)
        let resized = try session.process(small)
        #expect(resized.session.source == .robust && resized.session.trigger == .resized)
        #expect(resized.result?.currentSize == ImageSize(width: 320, height: 240))
    }

    /// The bundled approach's reference shrunk to 0.7 with its camera unknown, updates joined two frames late: the
    /// session combines the camera over its robust updates, which then lies within 3 % of the truth (0.7 f), and every
    /// tracked answer with a pose reports the session's camera. None is confidently wrong.
    @Test func aSessionCombinesAnOldPhotosCamera() throws {
        let sequence = try FrameSequence.load(from: Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach"))
        let camera = try #require(try sequence.camera())
        var config = PipelineConfig()
        config.session.robustEvery = 3
        let estimator = try PoseEstimator(config: config)
        let full = try estimator.load(contentsOfFile: sequence.path(of: sequence.manifest.reference!))
        let old = try full.resized(width: full.width * 7 / 10, height: full.height * 7 / 10)
        let reference = try estimator.prepareReference(old, camera: nil, cameraUnknown: true)
        let session = GuidanceSession(estimator: estimator, reference: reference, camera: camera, robustUpdates: .deferred(lag: 2))
        var trackedPoses = 0
        for frame in sequence.currentFrames {
            let answer = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)), timestamp: frame.timestamp)
            if answer.session.source == .tracked, answer.result?.pose != nil {
                trackedPoses += 1
                #expect(answer.result?.referenceCamera == session.referenceCamera, "\(frame.file)")
            }
            if let rotation = answer.result?.pose?.rotation, let truth = frame.truthRotation {
                #expect(Matrix3.angleDegrees(between: rotation, and: truth.rotationMatrix) < 10, "\(frame.file): a confident wrong rotation")
            }
        }
        let combined = try #require(session.referenceCamera)
        #expect((combined.frames ?? 0) >= 2, "combined over \(combined.frames ?? 0) updates")
        #expect(abs(combined.fx - 0.7 * camera.fx) / (0.7 * camera.fx) < 0.03, "\(combined.fx) px, truth \(0.7 * camera.fx)")
        #expect(trackedPoses >= sequence.currentFrames.count / 3, "tracked poses on \(trackedPoses) frames")
    }

    static func answer(focal: Double, sigma: Double, inliers: Int) -> SharedReferenceCamera.Answer {
        SharedReferenceCameraTests.answer(focal, sigma: sigma, inliers: inliers)
    }

    /// The session's camera: the first answer alone, then the combination once two hold (its median, here exactly the
    /// middle answer's focal length); a camera 10 % off the combination does not agree with it, one within its sigma does.
    @Test func theSessionCameraCombinesAndSaysWhatAgrees() throws {
        var camera = SessionReferenceCamera(config: ReferenceFocalConfig())
        #expect(camera.current == nil)
        camera.join(Self.answer(focal: 1000, sigma: 2, inliers: 100))
        #expect(camera.current?.fx == 1000 && camera.current?.frames == nil)
        camera.join(Self.answer(focal: 1100, sigma: 2, inliers: 100))
        camera.join(Self.answer(focal: 1020, sigma: 2, inliers: 100))
        let combined = try #require(camera.current)
        #expect(combined.frames == 3 && abs(combined.fx - 1020) < 1e-9)
        #expect(camera.agrees(with: Self.answer(focal: 1020 * 1.001, sigma: 2, inliers: 1).camera))
        #expect(!camera.agrees(with: Self.answer(focal: 1122, sigma: 2, inliers: 1).camera))
    }
}
