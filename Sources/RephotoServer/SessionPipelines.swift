import Foundation
import RephotoKit
import Synchronization

/// The compute pipelines guidance sessions may use (`--session-pipelines`). A session's robust update runs on the
/// compute pool, at most `limit` at once, so scoring keeps the pool's other threads under any session load; its tracked
/// answers (tens of milliseconds each) run on `live`, a lane of `limit` threads of their own, so no answer waits behind
/// a robust update (Bae et al. 2010 ran the two on separate threads for this reason).
final class SessionPipelines: RobustUpdateLauncher {
    let limit: Int
    let pool: ComputePool
    let live: ComputePool
    private let metrics: ServerMetrics
    private let running = Atomic<Int>(0)

    /// `live`: the lane (one of `makeLane(_:)` is made when nil).
    init(settings: ServerSettings, pool: ComputePool, live: ComputePool? = nil, metrics: ServerMetrics) {
        limit = settings.sessionPipelinesLimit
        self.pool = pool
        self.metrics = metrics
        self.live = live ?? Self.makeLane(settings)
    }

    /// The live lane: at most one tracked frame per session is in flight, so its queue never needs more than the sessions.
    static func makeLane(_ settings: ServerSettings) -> ComputePool {
        ComputePool(threads: settings.sessionPipelinesLimit, queueLimit: max(1, settings.maxSessions), name: "rephoto-live")
    }

    /// Robust updates running or waiting for a compute thread.
    var robustInFlight: Int { running.load(ordering: .relaxed) }

    func launch(_ job: RobustUpdateJob) -> Bool {
        var current = running.load(ordering: .relaxed)
        while true {
            guard current < limit else { return false }
            let (exchanged, now) = running.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = now
        }
        metrics.sessionRobustUpdates.increment()
        Task {
            do {
                try await self.pool.run { job.run() }
            } catch {
                job.refuse("no compute pipeline took the robust update: \(error)")
            }
            self.running.subtract(1, ordering: .relaxed)
        }
        return true
    }
}
