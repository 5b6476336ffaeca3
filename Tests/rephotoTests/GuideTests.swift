import Foundation
import RephotoTestSupport
import Testing

/// The guide as a person meets it (docs/guide.md): the worker over HTTPS with `scripts/dev-cert`'s pair, and the page in
/// a real browser (headless Chromium, scripts/guide_browser.py), skipped with a message where Chromium or ffmpeg is missing.
@Suite(.serialized) struct GuideTests {
    static let chromium = "/usr/bin/chromium"

    static func which(_ tool: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
    }

    /// Runs `program` with `arguments`, killed after `seconds`; its status and its output (stdout then stderr).
    static func run(_ program: String, _ arguments: [String], seconds: Double) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.currentDirectoryURL = CLI.packageRoot
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let timer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        timer.cancel()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled(if: which("openssl") && which("curl"), "needs openssl and curl"))
    func theWorkerAnswersOverTLS() async throws {
        let folder = try Scratch.directory()
        let made = try Self.run(CLI.packageRoot.appendingPathComponent("scripts/dev-cert").path, ["--out", folder.path], seconds: 60)
        #expect(made.status == 0, "\(made.output)")
        let cert = folder.appendingPathComponent("cert.pem").path, key = folder.appendingPathComponent("key.pem").path
        let port = WorkerEdgeTests.port(71)
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["serve", "--port", "\(port)", "--tls-cert", cert, "--tls-key", key]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        var health = (status: Int32(-1), output: "")
        for _ in 0..<100 {
            health = try Self.run("/usr/bin/env", ["curl", "-sS", "--cacert", cert, "https://127.0.0.1:\(port)/healthz"], seconds: 10)
            if health.status == 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(health.status == 0 && health.output.contains("alive"), "\(health.output)")
        let page = try Self.run("/usr/bin/env", ["curl", "-sS", "--cacert", cert, "https://localhost:\(port)/"], seconds: 10)
        #expect(page.status == 0 && page.output.contains("Rephoto guide"), "\(page.output.prefix(300))")
        // The WebSocket upgrade goes through TLS too (WSS): 101 Switching Protocols.
        let upgrade = try Self.run("/usr/bin/env", ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "3", "--cacert", cert,
                                                    "-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                                                    "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "--http1.1",
                                                    "https://127.0.0.1:\(port)/v1/sessions"], seconds: 10)
        #expect(upgrade.output.hasSuffix("101"), "\(upgrade.output)")
        // Plain HTTP on the TLS port is not served.
        let plain = try Self.run("/usr/bin/env", ["curl", "-sS", "--max-time", "5", "http://127.0.0.1:\(port)/healthz"], seconds: 10)
        #expect(plain.status != 0 || !plain.output.contains("alive"))
        // A key without its certificate, or an unreadable pair, is refused at start.
        let half = try CLI.run(["serve", "--port", "0", "--tls-cert", cert])
        #expect(half.status == 2 && half.stderr.contains("--tls-cert and --tls-key go together"), "\(half.stderr)")
        let wrong = try CLI.run(["serve", "--port", "\(WorkerEdgeTests.port(72))", "--tls-cert", key, "--tls-key", key])
        #expect(wrong.status != 0 && wrong.stderr.contains("--tls-cert"), "\(wrong.stderr)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: chromium) && which("ffmpeg") && which("python3"),
                   "needs Chromium (/usr/bin/chromium), ffmpeg and python3: scripts/setup installs them"))
    func theGuideGuidesAHeadlessChromiumAlongTheApproach() throws {
        let out = CLI.packageRoot.appendingPathComponent(".build/guide-browser")
        let run = try Self.run("/usr/bin/env", ["python3", "scripts/guide_browser.py", "--bin", CLI.executable.path,
                                                "--sequence", "datasets/synth-approach", "--out", out.path, "--budget", "420"], seconds: 480)
        if run.status == 77 {
            print("GuideTests: skipped in the browser: \(run.output.split(separator: "\n").last ?? "")")
            return
        }
        #expect(run.status == 0, "\(run.output.suffix(3000))")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any] ?? [:]
        #expect(summary["passed"] as? Bool == true, "\(summary)")
        #expect((summary["answeredWithin60s"] as? Int ?? 0) >= 30 && (summary["convergedAnswers"] as? Int ?? 0) > 0, "\(summary)")
        #expect(summary["take"] as? Int == 200 && summary["linkOpened"] as? Bool == true, "\(summary)")
        for shot in ["guide-mid-approach.png", "guide-converged.png"] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(shot).path), "\(shot)")
        }
    }
}
