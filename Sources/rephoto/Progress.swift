import Foundation

/// A one-line progress display on stderr, only when stderr is a terminal (CI logs stay clean).
struct Progress {
    let label: String
    let enabled = isatty(STDERR_FILENO) != 0
    let start = ContinuousClock.now

    func update(_ done: Int, of total: Int, note: String = "") {
        guard enabled else { return }
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
}
