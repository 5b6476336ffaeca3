import Foundation
import RephotoTestSupport
import Testing

/// `rephoto pose --json` and `rephoto evaluate` give the stored golden answers (timings aside): refactors
/// must not change results. The check is scripts/check-golden, run here on the built binary.
@Suite struct GoldenTests {
    @Test func outputsEqualTheGoldenCopy() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [CLI.packageRoot.appendingPathComponent("scripts/check-golden").path, "--bin", CLI.executable.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
    }
}
