import Foundation
import RephotoKit

/// How the CLI reports results and failures: one line on stderr for people; with --json also the library's
/// error envelope on stdout, so a machine reading stdout always gets JSON. Exit codes are the library's
/// (`RephotoError.exitCode`): 2 bad input, 3 could not estimate, 1 internal.
enum CLIOutput {
    nonisolated(unsafe) static var jsonMode = CommandLine.arguments.contains("--json")

    static func fail(_ error: RephotoError) -> Never {
        FileHandle.standardError.write(Data("rephoto: \(error.message)\n".utf8))
        if jsonMode, let data = try? encoder.encode(ErrorEnvelope(error)) {
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
        exit(error.exitCode)
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return e
    }()

    static func printJSON<T: Encodable>(_ value: T) throws {
        let data = try encoder.encode(value)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
