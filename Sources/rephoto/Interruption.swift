import Dispatch
import Foundation

/// SIGINT and SIGTERM as a request to stop: no new work starts, work in flight may finish for `grace`
/// seconds, then `deadline` runs (it writes what is finished and exits). A second signal runs it at once.
final class Interruption: @unchecked Sendable {
    private let lock = NSLock()
    private var signalNumber: Int32?
    private var sources: [DispatchSourceSignal] = []
    private let grace: Double
    private let deadline: @Sendable (Int32) -> Void

    init(grace: Double, deadline: @escaping @Sendable (_ exitCode: Int32) -> Void) {
        self.grace = grace
        self.deadline = deadline
        for number in [SIGINT, SIGTERM] {
            // The default action would kill the process before anything is written.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.received(number) }
            source.resume()
            sources.append(source)
        }
    }

    var requested: Bool { lock.withLock { signalNumber != nil } }

    /// The conventional exit code of a process ended by the signal: 128 + its number.
    var exitCode: Int32 { lock.withLock { 128 + (signalNumber ?? SIGINT) } }

    private func received(_ number: Int32) {
        let first = lock.withLock { () -> Bool in
            defer { if signalNumber == nil { signalNumber = number } }
            return signalNumber == nil
        }
        let code = exitCode
        guard first else {
            CLIOutput.standardError(Data("\nrephoto: second signal: writing what is finished now\n".utf8))
            deadline(code)
            return
        }
        let name = number == SIGINT ? "SIGINT" : "SIGTERM"
        CLIOutput.standardError(Data("\nrephoto: \(name): finishing the frames in flight (at most \(Int(grace)) s), then writing partial results\n".utf8))
        DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [deadline] in deadline(code) }
    }
}

/// SIGINT and SIGTERM end the process at once, after `cleanup` (it removes what the command was writing), with
/// one line on stderr and the conventional exit code 128 + the signal's number. Kept for the process's life.
enum ImmediateInterruption {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []  // written once, on the main thread
    private static let stopping = NSLock()
    nonisolated(unsafe) private static var signalled = false  // under `stopping`

    /// Called before the process ends on an error: once a signal's cleanup has begun, the command's own failure
    /// (its files removed under it) is not the outcome, the signal is; this waits for the handler's exit.
    static func yieldToSignal() {
        guard stopping.withLock({ signalled }) else { return }
        while true { pause() }
    }

    static func install(_ cleanup: @escaping @Sendable () -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                stopping.withLock { signalled = true }
                cleanup()
                CLIOutput.standardError(Data("\nrephoto: \(number == SIGINT ? "SIGINT" : "SIGTERM"): stopped; nothing was written\n".utf8))
                _exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
    }
}
