import ArgumentParser
import Foundation
import RephotoKit

@main
struct Rephoto: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rephoto",
        abstract: "Pose estimation for rephotography: where to move the camera to retake a reference photo.",
        discussion: "Documents named in this help (docs/*.md, datasets/README.md) are in the repository and, with scripts/install-cli, in PREFIX/share/doc/rephoto/ under the same paths (~/.local/share/doc/rephoto by default).",
        version: RephotoVersion.description,
        subcommands: [PoseCommand.self, AlignCommand.self, ServeCommand.self, EvaluateCommand.self, TuneCommand.self, SynthCommand.self, ImportCommand.self, CalibrateCommand.self, DefaultsCommand.self])

    /// Exit codes: 0 success, 1 internal error, 2 bad input (including bad arguments), 3 could not estimate.
    static func main() async {
        // Past `ulimit -f` a write fails with EFBIG, reported, instead of the signal killing the process silently
        // in the middle of an atomic write (probe: exit 153, no message, a temporary file left behind).
        signal(SIGXFSZ, SIG_IGN)
        do {
            // OpenCV's own log lines would break the one-line-error contract on stderr: every failure is reported.
            try OpenCVRuntime.configure(logLevel: .silent)
            var command = try parseAsRoot()
            if var async = command as? AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
            CLIOutput.finish()
        } catch let error as RephotoError {
            CLIOutput.fail(error)
        } catch let error as ExitCode {
            ImmediateInterruption.yieldToSignal()
            Foundation.exit(error.rawValue)
        } catch let error as NSError where error.domain == NSCocoaErrorDomain || error.domain == NSPOSIXErrorDomain {
            // A file error no command turned into words (a full disk under evaluate printed Foundation's dump).
            let path = (error.userInfo[NSFilePathErrorKey] as? String) ?? (error.userInfo[NSURLErrorKey] as? URL)?.path
            CLIOutput.fail(RephotoError.badInput((path.map { "\($0): " } ?? "") + "cannot write or read (\(fileErrorReason(error)))"))
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            // Usage errors are bad input: one line, exit 2 (ArgumentParser would use 64).
            CLIOutput.fail(RephotoError.badInput(UnknownSubcommand.message(Array(CommandLine.arguments.dropFirst())) ?? oneLine(message(for: error))))
        }
    }
}

/// ArgumentParser's multi-line messages as one line, lists included ("one of the following: a, b, c"), so the
/// one-line error contract holds without cutting the message short.
func oneLine(_ message: String) -> String {
    var text = ""
    var inList = false
    for raw in message.split(separator: "\n") {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line.isEmpty || line.hasPrefix("Usage:") || line.hasPrefix("See '") { continue }
        if line.hasPrefix("- ") {
            text += (inList ? ", " : " ") + line.dropFirst(2)
            inList = true
        } else {
            text += (text.isEmpty ? "" : " ") + line
            inList = false
        }
    }
    return text.isEmpty ? "bad arguments" : text
}
