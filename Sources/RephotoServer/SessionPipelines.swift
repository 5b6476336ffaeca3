import Foundation
import RephotoKit
import Synchronization

/// The pipelines guidance sessions use (`--session-pipelines`), apart from the compute pool the scores run on, so no
/// session load takes a score's pipeline or queue place. A session's robust update (hundreds of milliseconds) runs on
/// `robust`, at most `limit` at once; its tracked answers (tens of milliseconds each) run on `live`, a lane of
/// `--concurrency` threads, so no answer waits behind a robust update (Bae et al. 2010 ran the two on separate threads
/// for this reason). CPU priority, highest first: scores (a session frame may be dropped, the newest winning; a score
/// may not), tracked answers, robust updates.
final class SessionPipelines: RobustUpdateLauncher {
    let limit: Int
    let robust: ComputePool
    let live: ComputePool
    private let metrics: ServerMetrics
    private let running = Atomic<Int>(0)
    /// The lanes' nice values over the worker's: the live lane below the scores, the robust lane below both.
    static let liveNice: Int32 = 4
    static let robustNice: Int32 = 10

    /// `lanes`: the live and robust lanes (`makeLanes(_:)` are made when nil).
    init(settings: ServerSettings, lanes: Lanes? = nil, metrics: ServerMetrics) {
        limit = settings.sessionPipelinesLimit
        let lanes = lanes ?? Self.makeLanes(settings)
        live = lanes.live
        robust = lanes.robust
        self.metrics = metrics
    }

    struct Lanes: Sendable {
        var live: ComputePool
        var robust: ComputePool
    }

    /// At most one tracked frame per session is in flight, so the live lane's queue never needs more than the sessions;
    /// no robust update waits for a thread (`launch` refuses past `limit`).
    static func makeLanes(_ settings: ServerSettings) -> Lanes {
        Lanes(live: ComputePool(threads: settings.concurrency, queueLimit: max(1, settings.maxSessions), name: "rephoto-live", nice: liveNice),
              robust: ComputePool(threads: settings.sessionPipelinesLimit, queueLimit: settings.sessionPipelinesLimit, name: "rephoto-robust",
                                  nice: robustNice))
    }

    /// Robust updates running now.
    var robustInFlight: Int { running.load(ordering: .relaxed) }

    func launch(_ job: RobustUpdateJob) -> Bool {
        var current = running.load(ordering: .relaxed)
        while true {
            guard current < limit else { return false }
            let (exchanged, now) = running.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = now
        }
        // Straight onto the lane's queue: no task of the cooperative pool stands between the session and its update.
        let queued = robust.submit {
            job.run()
            self.running.subtract(1, ordering: .relaxed)
        }
        guard queued else {
            running.subtract(1, ordering: .relaxed)
            return false
        }
        metrics.sessionRobustUpdates.increment()
        return true
    }

    /// Lets both lanes finish their work and end their threads, at most `seconds` each.
    func finish(waitingAtMost seconds: Double) -> Bool {
        let live = live.finish(waitingAtMost: seconds)
        return robust.finish(waitingAtMost: seconds) && live
    }
}
