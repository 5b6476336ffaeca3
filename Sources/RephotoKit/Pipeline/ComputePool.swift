import Foundation

/// A fixed set of threads of its own that runs CPU-bound work (OpenCV) for async callers. Estimation blocks
/// its thread for tens to hundreds of milliseconds; on Swift's cooperative pool, which has one thread per
/// core, that would stall every other task of the process (an HTTP event loop's handlers among them). Here
/// the awaiting task is suspended and its cooperative thread stays free.
///
/// Bounded twice: `threads` pieces of work run at once, and at most `queueLimit` wait; past that `run` fails
/// at once with `RephotoError.Kind.unavailable` rather than letting latency grow. Work that has started runs to
/// completion; queued work whose caller has given up (`abandoned`) is dropped when its turn comes, so a burst
/// of timed-out requests does not hold the threads for answers nobody reads.
public final class ComputePool: @unchecked Sendable {
    public let threads: Int
    public let queueLimit: Int

    private let condition = NSCondition()
    // A FIFO: `head` is the next job; taken slots are cleared at once so a finished job's captures (images,
    // results) are released, and the array is compacted once most of it is taken.
    private var jobs: [(@Sendable () -> Void)?] = []
    private var head = 0
    private var busy = 0
    private var skippedCount = 0
    private var stopping = false
    private var threadIDs = Set<pthread_t>()
    private var alive: Int

    /// `threads` at least 1; `queueLimit` nil for no limit. Thread names are `name-1`, `name-2`, ... `nice`: how much
    /// lower than the process's its threads' CPU priority is (0 to 19, Linux's per-thread nice value; raising it back
    /// would need privileges, so it is set once, as each thread starts).
    public init(threads: Int, queueLimit: Int? = nil, name: String = "rephoto-compute", nice: Int32 = 0) {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit ?? Int.max)
        alive = self.threads
        for i in 1...self.threads {
            let threadName = "\(name)-\(i)"
            // Each running thread keeps the pool alive until shutdown() lets it end; the pool keeps no reference
            // back, so nothing is left once they have. Named from inside: a name set before start is lost on Linux.
            let thread = Thread {
                Thread.current.name = threadName
                // Linux keeps the nice value per thread, and `who` 0 is the calling one.
                if nice > 0 {
                    let which = __priority_which_t(PRIO_PROCESS.rawValue)
                    _ = setpriority(which, 0, min(19, getpriority(which, 0) + nice))
                }
                self.work()
            }
            // Estimation allocates deep OpenCV call stacks; give them room like a main thread's.
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Runs `work` on one of the pool's threads and returns its result to the awaiting task. When `abandoned`
    /// says true as the work's turn comes, the work is skipped and `run` fails as unavailable.
    public func run<T: Sendable>(unless abandoned: (@Sendable () -> Bool)? = nil,
                                 _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let job: @Sendable () -> Void = { [weak self] in
                if abandoned?() == true {
                    self?.countSkipped()
                    continuation.resume(throwing: RephotoError(.unavailable, "the caller gave up before the work started"))
                    return
                }
                continuation.resume(with: Result { try work() })
            }
            if let refusal = enqueue(job) { continuation.resume(throwing: refusal) }
        }
    }

    /// Queues `work` for one of the pool's threads without waiting for it (nor needing an async caller); false when the
    /// queue is full or the pool is shut down, and `work` is then not run.
    public func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        enqueue(work) == nil
    }

    /// Queued work dropped because its caller had given up, since the pool started.
    public var skipped: Int { condition.withLock { skippedCount } }
    private func countSkipped() { condition.withLock { skippedCount += 1 } }

    /// Work waiting for a thread.
    public var queued: Int { condition.withLock { jobs.count - head } }
    /// Work running now.
    public var running: Int { condition.withLock { busy } }
    /// Whether the calling thread is one of this pool's.
    public var ownsCurrentThread: Bool { condition.withLock { threadIDs.contains(pthread_self()) } }

    /// Lets queued work finish, then ends the threads; later `run` calls fail as unavailable.
    public func shutdown() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
    }

    /// `shutdown()`, then waits until every thread has ended (queued and abandoned work included), at most
    /// `seconds`; false when some work was still running then. A process must not exit while a pool thread is
    /// inside OpenCV: exit destroys OpenCV's static state under it.
    @discardableResult
    public func finish(waitingAtMost seconds: Double) -> Bool {
        shutdown()
        let deadline = Date().addingTimeInterval(seconds)
        return condition.withLock {
            while alive > 0 {
                if !condition.wait(until: deadline) { return alive == 0 }
            }
            return true
        }
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) -> RephotoError? {
        condition.withLock {
            if stopping { return RephotoError(.unavailable, "the compute pool is shut down") }
            if jobs.count - head >= queueLimit {
                return RephotoError(.unavailable, "compute queue full: \(threads) running, \(queueLimit) waiting")
            }
            jobs.append(job)
            condition.signal()
            return nil
        }
    }

    private func work() {
        condition.withLock { _ = threadIDs.insert(pthread_self()) }
        defer {
            condition.withLock {
                _ = threadIDs.remove(pthread_self())
                alive -= 1
                condition.broadcast()
            }
        }
        while true {
            let job: (@Sendable () -> Void)? = condition.withLock {
                while head == jobs.count && !stopping { condition.wait() }
                guard head < jobs.count else { return nil }
                let next = jobs[head]
                jobs[head] = nil
                head += 1
                if head * 2 >= jobs.count {
                    jobs.removeFirst(head)
                    head = 0
                }
                busy += 1
                return next
            }
            guard let job else { return }
            job()
            condition.withLock { busy -= 1 }
        }
    }
}
