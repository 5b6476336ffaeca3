import Foundation
import Synchronization

/// When a guidance session's robust updates (the full pipeline on one frame) reach its answers. Bae et al. 2010 run
/// the robust estimate and the tracking on separate threads, so the display never waits for the slow one.
public enum RobustUpdates: Sendable {
    /// On the frame that needs one, before that frame is answered: such a frame waits for it.
    case inline
    /// Computed on the frame that needs one and joined `lag` frames later, as one on another pipeline would be, the
    /// frames between answered from tracking. Deterministic (`rephoto evaluate --session --robust-lag`); `lag` >= 1.
    case deferred(lag: Int)
    /// On another pipeline (`launcher`), joined by the first frame after it has finished: no answer waits for it.
    case concurrent(any RobustUpdateLauncher)

    /// Frames between a robust update's frame and the one it is joined on: nil when not fixed (concurrent).
    var lag: Int? {
        switch self {
        case .inline: 0
        case .deferred(let lag): max(1, lag)
        case .concurrent: nil
        }
    }
}

/// Runs a session's robust updates off the session's thread (the worker: on its compute pool).
public protocol RobustUpdateLauncher: Sendable {
    /// Starts `job` now and returns true, or returns false when no pipeline is free for it (the session tries again
    /// on a later frame). A started job must end in `job.run()` or `job.refuse(_:)`: the session waits for either.
    func launch(_ job: RobustUpdateJob) -> Bool
}

/// One robust update in flight: the frame it runs on, the pyramid its correspondences are carried forward from, and,
/// once done, its outcome. Holds no reference to the session: it may outlive it.
public final class RobustUpdateJob: Sendable {
    /// The session frame the update runs on.
    public let frame: Int
    let timestamp: Double?
    let trigger: SessionStatus.Trigger
    let pyramid: FramePyramid
    private let work: @Sendable () throws -> RobustUpdate
    private let result = Mutex<Outcome?>(nil)

    enum Outcome: Sendable {
        case done(RobustUpdate, milliseconds: Double)
        case failed(RephotoError, milliseconds: Double)
    }

    package init(frame: Int, timestamp: Double?, trigger: SessionStatus.Trigger, pyramid: FramePyramid,
         work: @escaping @Sendable () throws -> RobustUpdate) {
        self.frame = frame
        self.timestamp = timestamp
        self.trigger = trigger
        self.pyramid = pyramid
        self.work = work
    }

    /// Computes the update on the calling thread; the session joins it on its next frame.
    public func run() {
        let start = ContinuousClock.now
        let outcome: Outcome
        do {
            outcome = .done(try work(), milliseconds: milliseconds(since: start))
        } catch let error as RephotoError {
            outcome = .failed(error, milliseconds: milliseconds(since: start))
        } catch {
            outcome = .failed(RephotoError(.internal, "\(error)"), milliseconds: milliseconds(since: start))
        }
        result.withLock { $0 = $0 ?? outcome }
    }

    /// Ends the job without computing it (its pipeline could not take it after all).
    public func refuse(_ reason: String) {
        result.withLock { $0 = $0 ?? .failed(RephotoError(.unavailable, reason), milliseconds: 0) }
    }

    /// Whether `run` or `refuse` has ended it.
    public var isFinished: Bool { result.withLock { $0 != nil } }

    var outcome: Outcome? { result.withLock { $0 } }
}

/// What a robust update found: the frame's result and, with the reference's camera unknown, the camera its matches
/// give on their own (an answer to combine), whatever camera the pose was solved on.
package struct RobustUpdate: Sendable {
    package var result: PoseResult
    package var cameraAnswer: SharedReferenceCamera.Answer?
}
