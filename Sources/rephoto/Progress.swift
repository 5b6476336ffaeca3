import Foundation

/// A one-line progress display on stderr when stderr is a terminal. Elsewhere (a log file, a batch job) nothing,
/// or with `logInterval` plain lines: at the first update, then at most one per `logInterval` seconds, and at the
/// end, so that a log shows a long run is alive.
struct Progress {
    let label: String
    let enabled = isatty(STDERR_FILENO) != 0
    let start = ContinuousClock.now
    var logInterval: Double?
    private let lastLine = LastLine()

    init(label: String, logInterval: Double? = nil) {
        self.label = label
        self.logInterval = logInterval
    }

    func update(_ done: Int, of total: Int, note: String = "") {
        guard enabled else {
            if let logInterval, lastLine.due(interval: logInterval, final: done == total) {
                CLIOutput.standardError(Data("\(label): \(done)/\(total) frames\(note.isEmpty ? "" : " " + note)\n".utf8))
            }
            return
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let width = 30, filled = total > 0 ? width * done / total : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = String(format: "\r%@ [%@] %d/%d  %.1f/s  ETA %.0fs %@", label, bar, done, total, rate, eta, note)
        CLIOutput.standardError(Data(line.utf8))
        if done == total { CLIOutput.standardError(Data("\n".utf8)) }
    }

    /// Runs `body`, one call that reports nothing while it runs; on a terminal, once it has taken a second, a line
    /// shows `note` and the seconds so far, each second, and is ended when `body` returns.
    func during<T>(_ note: String, _ body: () throws -> T) rethrows -> T {
        guard enabled else { return try body() }
        let ticker = Ticker()
        Thread.detachNewThread { [label] in ticker.run(label: label, note: note) }
        defer { ticker.finish() }
        return try body()
    }
}

/// When a log line was last written (updates come from several threads).
private final class LastLine: @unchecked Sendable {  // `written` is read and written under `lock`
    private let lock = NSLock()
    private var written: Date?

    /// Whether a line is due now (the first, the last, or `interval` seconds after the one before), noting it.
    func due(interval: Double, final: Bool) -> Bool {
        lock.withLock {
            let now = Date()
            guard final || written.map({ now.timeIntervalSince($0) >= interval }) ?? true else { return false }
            written = now
            return true
        }
    }
}

/// The line `Progress.during` keeps: its thread waits on the condition a second at a time until told to finish.
private final class Ticker: @unchecked Sendable {  // every field is read and written under `condition`
    private let condition = NSCondition()
    private var done = false, ended = false

    func run(label: String, note: String) {
        let start = Date()
        var shown = false
        condition.lock()
        while !done {
            if !condition.wait(until: Date().addingTimeInterval(1)), !done {
                CLIOutput.standardError(Data(String(format: "\r%@: %@  %.0fs", label, note, Date().timeIntervalSince(start)).utf8))
                shown = true
            }
        }
        if shown { CLIOutput.standardError(Data(String(format: "\r%@: %@  %.1fs\n", label, note, Date().timeIntervalSince(start)).utf8)) }
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    /// Returns once the thread has written its last line, so nothing is written after the caller's output.
    func finish() {
        condition.lock()
        done = true
        condition.broadcast()
        while !ended { condition.wait() }
        condition.unlock()
    }
}
