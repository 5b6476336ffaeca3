import Foundation
import RephotoKit

/// How the CLI reports results and failures: one line on stderr for people; with --json also a JSON
/// object on stdout, so a machine reading stdout always gets JSON.
enum CLIOutput {
    nonisolated(unsafe) static var jsonMode = CommandLine.arguments.contains("--json")

    static func exitCode(for kind: RephotoError.Kind) -> Int32 {
        switch kind {
        case .badInput: 2
        case .estimationFailed: 3
        case .internal: 1
        }
    }

    static func fail(_ error: RephotoError) -> Never {
        let code = exitCode(for: error.kind)
        FileHandle.standardError.write(Data("rephoto: \(error.message)\n".utf8))
        if jsonMode {
            let object: [String: [String: String]] = ["error": ["kind": error.kind.rawValue, "message": error.message]]
            if let data = try? encoder.encode(object) { FileHandle.standardOutput.write(data + Data("\n".utf8)) }
        }
        exit(code)
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
