import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoEvaluation

/// Issue 62: `evaluate` and `tune` as Slurm array jobs (deploy/slurm/, scripts/slurm-evaluate) on a real
/// single-node Slurm that scripts/slurm-local starts on this machine. Skipped, saying why, where it cannot start.
/// Every command runs under `timeout`, so a stuck scheduler fails the test instead of hanging the suite.
@Suite(.serialized) struct SlurmTests {
    /// The cluster's state folder (short: munge's socket path must fit in 108 bytes) and its ports.
    static let stateFolder = "/tmp/rephoto-slurm-test-\(getpid())"
    static let port = 10_000 + Int(getpid() % 4_000) * 2  // below the ephemeral ports, apart from the workers' (20000-39999)

    /// A script or Slurm client from the package root, under `timeout` (then SIGKILL 10 s later). Spawned and
    /// reaped with posix_spawn and waitpid, its output through files: Foundation's Process once missed the exit of
    /// a command that had started daemons, and waited for ever.
    static func shell(_ arguments: [String], _ environment: [String: String], seconds: Int = 300) throws -> CLI.Run {
        let pid = try spawn(arguments, environment, seconds: seconds)
        return try reap(pid)
    }

    static func spawn(_ arguments: [String], _ environment: [String: String], seconds: Int) throws -> (pid: pid_t, out: String, err: String) {
        let folder = try Scratch.directory().path
        let out = folder + "/stdout", err = folder + "/stderr"
        let command = "cd \"$0\" && exec timeout --kill-after=10 \(seconds) \"$@\" <'/dev/null' >'\(out)' 2>'\(err)'"
        let argv = ["/bin/sh", "-c", command, CLI.packageRoot.path] + arguments
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        let cArguments = argv.map { strdup($0) } + [nil], cEnvironment = variables.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) }; cEnvironment.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/sh", nil, nil, cArguments, cEnvironment)
        guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO) }
        return (pid, out, err)
    }

    static func reap(_ child: (pid: pid_t, out: String, err: String)) throws -> CLI.Run {
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) == -1, errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return CLI.Run(status: code, stdout: read(child.out), stderr: read(child.err))
    }

    static var datasets: String { CLI.packageRoot.appendingPathComponent("datasets").path }

    /// frames.csv's rows without their timings, in (sequence, frame) order.
    static func rows(_ folder: String) throws -> [EvaluationRow] {
        try DurableRunTests.rows(folder).map(DurableRunTests.timeless).sorted { ($0.sequence, $0.index) < ($1.sequence, $1.index) }
    }

    /// summary.json without its timings, and without `complete` and `framesPlanned` (docs/evaluation.md: a merged
    /// summary leaves both out).
    static func provenance(_ folder: String) throws -> [String: Any] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/summary.json"))) as? [String: Any]
        return json?["provenance"] as? [String: Any] ?? [:]
    }

    static func summary(_ folder: String) throws -> NSDictionary {
        func strip(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                // What made each run differs (its command line and start), the settings and data do not: checked apart.
                return object.filter { !["medianTimeMs", "complete", "framesPlanned", "provenance"].contains($0.key) }.mapValues(strip)
            }
            if let array = value as? [Any] { return array.map(strip) }
            return value
        }
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/summary.json")))
        return try #require(strip(json) as? [String: Any]) as NSDictionary
    }

    @Test func evaluateAndTuneAsArrayJobs() throws {
        // The cluster: started here, stopped at the end whatever happens; cancelled (skipped, with the reason) where
        // it cannot start: no packages to install, no permission to run the daemons.
        var environment = ["SLURM_LOCAL_DIR": Self.stateFolder, "SLURM_LOCAL_PORT": "\(Self.port)", "REPHOTO": CLI.executable.path]
        let start = try Self.shell(["scripts/slurm-local", "start"], environment, seconds: 600)
        guard start.status == 0 else {
            let lines = start.stderr.split(separator: "\n")
            let reason = lines.last { $0.hasPrefix("slurm-local:") } ?? lines.last ?? "exit status \(start.status)"
            try Test.cancel("Slurm cannot start on this machine (scripts/slurm-local start: \(reason)); the Slurm test is skipped")
        }
        environment["SLURM_CONF"] = "\(Self.stateFolder)/slurm.conf"
        defer { _ = try? Self.shell(["scripts/slurm-local", "stop"], environment, seconds: 60) }
        let sinfo = try Self.shell(["sinfo", "-h", "-o", "%P %a %D %t"], environment, seconds: 30)
        #expect(sinfo.status == 0 && sinfo.stdout.contains("local"), "\(sinfo.stdout)\(sinfo.stderr)")

        // One process: the reference.
        let single = try Scratch.directory().appendingPathComponent("single").path
        let alone = try CLI.run(["evaluate", Self.datasets, "--out", single, "--jobs", "2", "--no-thumbnails"])
        #expect(alone.status == 0, "\(alone.stderr)")
        let expected = try Self.rows(single)
        #expect(expected.count == 70)

        // Three array tasks (the third shard holds no sequence: two are bundled) and the merge, waited for.
        let out = try Scratch.directory().appendingPathComponent("slurm-3").path
        let run = try Self.shell(["scripts/slurm-evaluate", Self.datasets, "--out", out, "--tasks", "3", "--wait", "--", "--no-thumbnails"], environment)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("array job ") && run.stdout.contains("merge job ") && run.stdout.contains("synth-approach"), "\(run.stdout)")
        #expect(try Self.rows(out + "/all") == expected)
        #expect(try Self.summary(out + "/all") == Self.summary(single))
        // The merged summary says what made it: the same settings over the same data as the single process.
        let made = try Self.provenance(out + "/all"), reference = try Self.provenance(single)
        #expect(made["settingsHash"] as? String == reference["settingsHash"] as? String && made["sequences"] as? [String: String] == reference["sequences"] as? [String: String],
                "\(made) against \(reference)")

        // A task cancelled mid-run (scancel on its index, SIGTERM as a pre-emption sends): the wrapper names it and
        // the merge does not run; resubmitted alone, it resumes: nothing lost, nothing counted twice.
        let killed = try Scratch.directory().appendingPathComponent("slurm-killed").path
        let wrapper = try Self.spawn(["scripts/slurm-evaluate", Self.datasets, "--out", killed, "--tasks", "3", "--wait", "--", "--no-thumbnails"],
                                     environment, seconds: 300)
        let deadline = Date().addingTimeInterval(240)
        var arrayJob: String?
        while Date() < deadline {
            if arrayJob == nil, let jobs = try? String(contentsOfFile: killed + "/slurm/jobs", encoding: .utf8) {
                arrayJob = jobs.split(separator: " ").dropFirst().first.map(String.init)
            }
            if arrayJob != nil, DurableRunTests.lines(killed + "/shard-0/frames.csv") >= 3 { break }
            usleep(20_000)
        }
        let job = try #require(arrayJob)
        let cancel = try Self.shell(["scancel", "\(job)_0"], environment, seconds: 30)
        #expect(cancel.status == 0, "\(cancel.stderr)")
        let reported = try Self.reap(wrapper)
        let message = reported.stderr
        #expect(reported.status == 1, "\(message)")
        #expect(message.contains("shard 0/3 failed or was cancelled") && message.contains("--only 0"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: killed + "/all/frames.csv"))
        let partial = try Self.rows(killed + "/shard-0")
        let state = try #require(try DurableRunTests.state(killed + "/shard-0"))
        #expect(state.state != .complete && partial.count >= 2 && partial.count < 40, "\(state.state) with \(partial.count) rows")

        let partialTimed = try DurableRunTests.rows(killed + "/shard-0")
        let again = try Self.shell(["scripts/slurm-evaluate", Self.datasets, "--out", killed, "--tasks", "3", "--only", "0", "--wait", "--", "--no-thumbnails"], environment)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        let log = try String(contentsOfFile: killed + "/slurm/shard-0.log", encoding: .utf8)
        #expect(log.contains("resuming \(killed)/shard-0: \(partial.count) of 40 frames already done"), "\(log)")
        let merged = try Self.rows(killed + "/all")
        #expect(Set(merged.map { "\($0.sequence)/\($0.index)" }).count == merged.count)
        #expect(merged == expected)
        #expect(try Self.summary(killed + "/all") == Self.summary(single))
        // The frames finished before the cancel kept their own timings: they were not evaluated again.
        let after = try DurableRunTests.rows(killed + "/shard-0")
        for row in partialTimed {
            #expect(after.first { $0.index == row.index }?.timeTotalMs == row.timeTotalMs, "frame \(row.index)")
        }

        // tune: two shards through deploy/slurm/tune.sbatch, then its merge job; the leaderboard of one process.
        let space = try TuneCommandTests.spaceFile()
        let tuneOne = try Scratch.directory().appendingPathComponent("tune-one").path
        let one = try CLI.run(["tune", space, "--data", Self.datasets, "--out", tuneOne, "--jobs", "2"])
        #expect(one.status == 0, "\(one.stderr)")
        let tuneOut = try Scratch.directory().appendingPathComponent("tune-slurm").path
        try FileManager.default.createDirectory(atPath: tuneOut, withIntermediateDirectories: true)  // for the logs
        let array = try Self.shell(["sbatch", "--parsable", "--array=0-1", "--output=\(tuneOut)/shard-%a.log",
                                    "deploy/slurm/tune.sbatch", "--out", tuneOut, "--shards", "2", space, Self.datasets], environment)
        #expect(array.status == 0, "\(array.stdout)\(array.stderr)")
        let arrayID = array.stdout.split(separator: "\n").first.map { String($0.split(separator: ";")[0]) } ?? ""
        let merge = try Self.shell(["sbatch", "--parsable", "--dependency=afterok:\(arrayID)", "--kill-on-invalid-dep=yes",
                                    "--output=\(tuneOut)/merge.log", "deploy/slurm/tune.sbatch", "--merge", "--out", tuneOut, "--shards", "2"], environment)
        #expect(merge.status == 0, "\(merge.stdout)\(merge.stderr)")
        let mergeID = merge.stdout.split(separator: "\n").first.map { String($0.split(separator: ";")[0]) } ?? ""
        // Both leave the queue when done (sbatch --wait would poll for up to 32 s more).
        let waited = try Self.shell(["sh", "-c", "while [ -n \"$(squeue -h -j \(arrayID),\(mergeID) -o %i)\" ]; do sleep 1; done"], environment)
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(FileManager.default.fileExists(atPath: tuneOut + "/slurm/merge.done"))
        #expect(try TuneCommandTests.ranking(tuneOut + "/all") == TuneCommandTests.ranking(tuneOne))
        #expect(try TuneCommandTests.trials(tuneOut + "/all").map(\.trial) == [0, 1, 2, 3])
    }
}
