import RephotoTestSupport
import Foundation
import Testing

/// Issue 62: deploy/systemd/rephoto.service. `systemd-analyze verify` checks it as systemd would load it (every
/// key known, every value parsed, its commands executable), and the worker runs with the unit's environment and
/// answers the unit's own health check, then drains on the unit's stop signal.
@Suite struct SystemdUnitTests {
    static let unit = CLI.packageRoot.appendingPathComponent("deploy/systemd/rephoto.service")
    static let analyze = "/usr/bin/systemd-analyze"

    /// The unit with ExecStart= on this build's binary (verify refuses a command that does not exist), in a
    /// folder of its own, under its own name (verify names the file in every complaint).
    static func localCopy(_ text: String) throws -> String {
        let text = text.replacingOccurrences(of: "/usr/local/bin/rephoto", with: CLI.executable.path)
        let path = try Scratch.directory().appendingPathComponent("rephoto.service").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func verify(_ path: String) throws -> CLI.Run {
        try CLI.run(["verify", path], environment: ["SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": ""], executable: URL(fileURLWithPath: analyze))
    }

    @Test(.enabled("needs systemd-analyze (apt install systemd)") { FileManager.default.isExecutableFile(atPath: SystemdUnitTests.analyze) })
    func unitVerifies() throws {
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        let path = try Self.localCopy(text)
        let run = try Self.verify(path)
        // verify only warns about an unknown key or a value it cannot parse: no line may name the unit.
        #expect(run.status == 0 && !run.stderr.contains("rephoto.service") && !run.stdout.contains("rephoto.service"), "\(run.stdout)\(run.stderr)")
        // ... and it does read the file here: a misspelt key and a bad type are named.
        let broken = try Self.verify(Self.localCopy(text.replacingOccurrences(of: "Type=simple", with: "Type=simplex")
            .replacingOccurrences(of: "NoNewPrivileges=yes", with: "NoNewPrivilege=yes")))
        #expect(broken.stderr.contains("simplex") && broken.stderr.contains("NoNewPrivilege"), "\(broken.stderr)")

        // What the issue asks of it.
        for line in ["Type=simple", "DynamicUser=yes", "StateDirectory=rephoto", "ProtectSystem=strict", "NoNewPrivileges=yes",
                     "Restart=on-failure", "KillSignal=SIGTERM", "Environment=REPHOTO_CONCURRENCY=2", "MemoryMax=1300M", "TasksMax=64"] {
            #expect(text.split(separator: "\n").contains { $0 == line }, "\(line)")
        }
        // Stopping waits longer than the worker's drain (request timeout + 30 s).
        let settings = Self.settings(text)
        let stop = try #require(settings["TimeoutStopSec"].flatMap { Double($0) })
        let requestTimeout = try #require(Self.environment(text)["REPHOTO_REQUEST_TIMEOUT"].flatMap { Double($0) })
        #expect(stop > requestTimeout + 30)
    }

    static func settings(_ text: String) -> [String: String] {
        var keys: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { keys[parts[0]] = parts[1] }
        }
        return keys
    }

    static func environment(_ text: String) -> [String: String] {
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("Environment=") {
            let parts = line.dropFirst("Environment=".count).split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { environment[parts[0]] = parts[1] }
        }
        return environment
    }

    /// The worker started as the unit starts it (its REPHOTO_* variables; the state folder %S and the port
    /// replaced), the unit's ExecStartPost health check passes, a score is answered, and SIGTERM exits 0.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "the unit's health check runs curl"))
    func workerRunsWithTheUnitsEnvironment() throws {
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        let state = try Scratch.directory().path
        let port = 50_000 + Int(getpid() % 5_000)
        var environment = Self.environment(text).mapValues { $0.replacingOccurrences(of: "%S", with: state) }
        environment["REPHOTO_PORT"] = "\(port)"
        #expect(environment["REPHOTO_REFERENCE_STORE"] == "\(state)/rephoto/references")

        let worker = Process()
        worker.executableURL = CLI.executable
        worker.arguments = try #require(Self.settings(text)["ExecStart"]).split(separator: " ").dropFirst().map(String.init)
        worker.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        worker.standardOutput = FileHandle.nullDevice
        worker.standardError = FileHandle.nullDevice
        try worker.run()
        defer { if worker.isRunning { kill(worker.processIdentifier, SIGKILL) } }

        // ExecStartPost's command as systemd runs it: `/bin/sh -c '...'`, with the unit's environment.
        let post = try #require(Self.settings(text)["ExecStartPost"])
        let script = try #require(post.split(separator: "'", maxSplits: 1).last.map { String($0.dropLast()) })
        let check = try CLI.run(["-c", script], environment: environment, executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(check.status == 0, "\(check.stderr)")

        let datasets = CLI.packageRoot.appendingPathComponent("datasets/synth-approach").path
        let score = try CLI.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-F", "reference=@\(datasets)/reference.jpg",
                                 "-F", "retake=@\(datasets)/frame-0003.jpg", "http://127.0.0.1:\(port)/v1/retakes/score"],
                                executable: URL(fileURLWithPath: "/usr/bin/curl"))
        #expect(score.stdout == "200", "\(score.stdout)\(score.stderr)")
        kill(worker.processIdentifier, SIGTERM)
        worker.waitUntilExit()
        #expect(worker.terminationStatus == 0)
    }
}
