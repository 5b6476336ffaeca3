import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoEvaluation
import Testing

/// `rephoto tune` on a tiny space over two synthetic sequences.
@Suite struct TuneCommandTests {
    static let space = Fixtures.tuningSpace

    static func data() throws -> String {
        let root = SequenceCommandTests.directory()
        try EvaluateCommandTests.synth(root, "alpha", seed: 1)
        try EvaluateCommandTests.synth(root, "beta", seed: 2)
        return root
    }

    static func spaceFile(_ text: String = space) throws -> String {
        let path = SequenceCommandTests.directory() + ".yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The leaderboard without its timing columns (which differ from run to run).
    static func ranking(_ folder: String) throws -> [String] {
        let lines = try String(contentsOfFile: "\(folder)/leaderboard.csv", encoding: .utf8).split(separator: "\n").map(String.init)
        let header = lines[0].split(separator: ",").map(String.init)
        let drop = Set(["ms_per_frame", "too_slow"].compactMap { header.firstIndex(of: $0) })
        return lines.map { line in line.split(separator: ",", omittingEmptySubsequences: false).enumerated().filter { !drop.contains($0.offset) }.map(\.element).joined(separator: ",") }
    }

    static func trials(_ folder: String) throws -> [TrialRecord] {
        try Tuner.readTrials(URL(fileURLWithPath: "\(folder)/trials.jsonl")).values.sorted { $0.trial < $1.trial }
    }

    @Test func gridResumeShardsAndBestConfig() throws {
        let data = try Self.data(), space = try Self.spaceFile()
        // A newline in the folder's name is written escaped in the report that names it, which stays whole lines.
        let whole = SequenceCommandTests.directory() + "-a\nb"
        let run = try CLI.run(["tune", space, "--data", data, "--out", whole, "--jobs", "2"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("4 trials; best by maa10"))
        #expect(run.stdout.contains(" in \(whole.replacingOccurrences(of: "\n", with: "\\n"))\n"), "\(run.stdout)")
        // Only matching and estimation vary: every image is detected once. The two sequences' references are
        // the same rendering (the seed moves the trajectory only), so 7 distinct images serve 32 lookups.
        // Per frame: one neighbour search, one homography per ratio, one essential search per trial.
        #expect(run.stdout.contains("feature cache: 7 detections, 25 reused; searches: 42 run, 30 reused"), "\(run.stdout)")

        // The grid: exactly the four combinations, the last parameter varying fastest.
        let records = try Self.trials(whole)
        #expect(records.map(\.parameters) == [
            [["matching.ratio", "0.7"], ["pose.essential.threshold", "0.5"]], [["matching.ratio", "0.7"], ["pose.essential.threshold", "2"]],
            [["matching.ratio", "0.9"], ["pose.essential.threshold", "0.5"]], [["matching.ratio", "0.9"], ["pose.essential.threshold", "2"]],
        ])
        #expect(records.allSatisfy { $0.metrics.frames == 6 })

        // Killed after two trials, mid-write of the third: --resume ends with the same leaderboard.
        let killed = SequenceCommandTests.directory()
        try FileManager.default.createDirectory(atPath: killed, withIntermediateDirectories: true)
        for file in ["space.yaml", "tune.json"] { try FileManager.default.copyItem(atPath: "\(whole)/\(file)", toPath: "\(killed)/\(file)") }
        let lines = try String(contentsOfFile: "\(whole)/trials.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(try lines.allSatisfy { try (JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["schemaVersion"] as? Int == 2 })
        #expect(try (JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(whole)/tune.json"))) as? [String: Any])?["schemaVersion"] as? Int == 2)
        try (lines.prefix(2).joined(separator: "\n") + "\n" + lines[2].prefix(40)).write(toFile: "\(killed)/trials.jsonl", atomically: true, encoding: .utf8)
        let resumed = try CLI.run(["tune", space, "--data", data, "--out", killed, "--jobs", "2", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try Self.ranking(killed) == Self.ranking(whole))
        #expect(try Self.trials(killed).prefix(2).map(\.metrics) == records.prefix(2).map(\.metrics))  // kept, not rerun

        // Two shards sharing a feature folder, merged: the unsharded leaderboard. The second shard detects
        // nothing: it reads what the first wrote.
        let features = SequenceCommandTests.directory()
        let shards = try (0..<2).map { i -> String in
            let folder = SequenceCommandTests.directory()
            let shard = try CLI.run(["tune", space, "--data", data, "--out", folder, "--jobs", "1", "--shard", "\(i)/2", "--cache", features])
            #expect(shard.status == 0, "\(shard.stderr)")
            #expect(shard.stdout.contains(i == 0 ? "feature cache: 7 detections, 9 reused, 0 read from" : "feature cache: 0 detections, 9 reused, 7 read from"),
                    "\(shard.stdout)")
            #expect(try Self.trials(folder).map(\.trial) == (i == 0 ? [0, 2] : [1, 3]))
            return folder
        }
        let merged = SequenceCommandTests.directory()
        let merge = try CLI.run(["tune", "merge"] + shards + ["--out", merged])
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(try Self.ranking(merged) == Self.ranking(whole))
        // One shard alone merges with a warning (its winner is provisional); a shard of another split is refused.
        let partial = try CLI.run(["tune", "merge", shards[0], "--out", SequenceCommandTests.directory()])
        #expect(partial.status == 0 && partial.stderr.contains("2 of 4 trials are missing"), "\(partial.stderr)")
        let otherSplit = SequenceCommandTests.directory()
        try FileManager.default.copyItem(atPath: shards[1], toPath: otherSplit)
        let manifest = try String(contentsOfFile: "\(otherSplit)/tune.json", encoding: .utf8)
        try manifest.replacingOccurrences(of: "\"1\\/2\"", with: "\"1\\/3\"").replacingOccurrences(of: "\"1/2\"", with: "\"1/3\"")
            .write(toFile: "\(otherSplit)/tune.json", atomically: true, encoding: .utf8)
        let mixed = try CLI.run(["tune", "merge", shards[0], otherSplit, "--out", SequenceCommandTests.directory()])
        #expect(mixed.status == 2 && mixed.stderr.contains("merge the shards of one split"), "\(mixed.stderr)")
        // A whole run beside a shard, and one shard twice, overlap as well (both were merged, found by probing).
        let wholeAndShard = try CLI.run(["tune", "merge", whole, shards[0], "--out", SequenceCommandTests.directory()])
        #expect(wholeAndShard.status == 2 && wholeAndShard.stderr.contains("is shard 0/2 but ") && wholeAndShard.stderr.contains(" is a whole run"), "\(wholeAndShard.stderr)")
        let twice = try CLI.run(["tune", "merge", shards[0], shards[0], "--out", SequenceCommandTests.directory()])
        #expect(twice.status == 2 && twice.stderr.contains("are both shard 0/2: give each shard once"), "\(twice.stderr)")
        // A damaged record that is not the torn last line is refused, by line, on resume and on merge (it was kept).
        let damaged = SequenceCommandTests.directory()
        try FileManager.default.copyItem(atPath: whole, toPath: damaged)
        var damagedLines = try String(contentsOfFile: "\(damaged)/trials.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)
        damagedLines[1] = #"{"trial": "x"}"#
        try (damagedLines.joined(separator: "\n") + "\n").write(toFile: "\(damaged)/trials.jsonl", atomically: true, encoding: .utf8)
        for arguments in [["tune", space, "--data", data, "--out", damaged, "--jobs", "1", "--resume"],
                          ["tune", "merge", damaged, "--out", SequenceCommandTests.directory()]] {
            let run = try CLI.run(arguments)
            #expect(run.status == 2 && run.stderr.contains("trials.jsonl line 2 is not a trial record"), "\(arguments[1]): \(run.stderr)")
        }

        // best.yaml through `rephoto evaluate` reproduces the best trial's metric exactly.
        let best = try #require(Tuner.ranked(records, .maa10).first)
        let evaluation = SequenceCommandTests.directory()
        let evaluate = try CLI.run(["evaluate", data, "--config", "\(whole)/best.yaml", "--out", evaluation, "--no-thumbnails"])
        #expect(evaluate.status == 0 || evaluate.status == 3, "\(evaluate.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(evaluation)/summary.json"))) as? [String: Any]
        let overall = try #require(summary?["overall"] as? [String: Any])
        // Within the last digit: JSONSerialization does not always parse the shortest form back exactly.
        func same(_ a: Any?, _ b: Double?) -> Bool {
            guard let a = a as? Double, let b else { return a == nil && b == nil }
            return abs(a - b) <= 1e-12
        }
        #expect(same(overall["maa10"], best.objective))
        #expect(overall["failures"] as? Int == best.metrics.failures)

        // Every trial, cached, equals the same configuration evaluated without the cache.
        for record in records {
            let folder = SequenceCommandTests.directory()
            let sets = record.parameters.flatMap { ["--set", "\($0[0])=\($0[1])"] } + ["--set", "features.maxDimension=320"]
            let plain = try CLI.run(["evaluate", data, "--out", folder, "--no-thumbnails"] + sets)
            #expect(plain.status == 0 || plain.status == 3, "\(plain.stderr)")
            let stats = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(folder)/summary.json"))) as? [String: Any]
            let o = try #require(stats?["overall"] as? [String: Any])
            #expect(same(o["maa10"], record.metrics.maa10) && same(o["maa5"], record.metrics.maa5), "trial \(record.trial)")
            #expect(same(o["rotationMaa10"], record.metrics.rotationMaa10), "trial \(record.trial)")
        }
    }

    /// Successive halving: 9 configurations on 1 frame per sequence, the best 3 on all 3 frames; a run killed
    /// in the second rung resumes to the same leaderboard.
    @Test func successiveHalvingKeepsTheBestThirdAndResumes() throws {
        let data = try Self.data()
        let space = try Self.spaceFile("""
            strategy: halving
            trials: 9
            eta: 3
            minFrames: 1
            seed: 5
            fixed: {features.maxDimension: 320}
            parameters:
              matching.ratio: {min: 0.6, max: 0.95, step: 0.05}
              pose.essential.threshold: {min: 0.5, max: 2, count: 4, log: true}
            """)
        let whole = SequenceCommandTests.directory()
        let run = try CLI.run(["tune", space, "--data", data, "--out", whole, "--jobs", "2"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try String(contentsOfFile: "\(whole)/trials.jsonl", encoding: .utf8).split(separator: "\n")
        let records = try lines.map { try JSONDecoder().decode(TrialRecord.self, from: Data($0.utf8)) }
        let first = records.filter { $0.rung == 0 }, second = records.filter { $0.rung == 1 }
        #expect(first.count == 9 && first.allSatisfy { $0.metrics.frames == 2 && $0.framesPerSequence == 1 })
        #expect(second.count == 3 && second.allSatisfy { $0.metrics.frames == 6 })
        #expect(Set(second.map(\.trial)) == Set(Tuner.ranked(first, .maa10).prefix(3).map(\.trial)))
        #expect(try Self.trials(whole).count == 9)  // the leaderboard: each configuration at its last rung

        let killed = SequenceCommandTests.directory()
        try FileManager.default.createDirectory(atPath: killed, withIntermediateDirectories: true)
        for file in ["space.yaml", "tune.json"] { try FileManager.default.copyItem(atPath: "\(whole)/\(file)", toPath: "\(killed)/\(file)") }
        try (lines.prefix(10).joined(separator: "\n") + "\n").write(toFile: "\(killed)/trials.jsonl", atomically: true, encoding: .utf8)
        let resumed = try CLI.run(["tune", space, "--data", data, "--out", killed, "--jobs", "2", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try Self.ranking(killed) == Self.ranking(whole))

        // A merge keeps every rung's record, as the run's own file does; replacing it counts both.
        let merged = SequenceCommandTests.directory()
        let merge = try CLI.run(["tune", "merge", whole, "--out", merged])
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(try String(contentsOfFile: "\(merged)/trials.jsonl", encoding: .utf8).split(separator: "\n").count == 12)
        #expect(try Self.ranking(merged) == Self.ranking(whole))
        let again = try CLI.run(["tune", "merge", whole, "--out", merged])
        #expect(again.status == 0 && again.stderr.contains("(9 trials, 12 records over the rungs;"), "\(again.stderr)")

        // Resuming with other data under the same sequence names is refused.
        let fewer = SequenceCommandTests.directory()
        for name in ["alpha", "beta"] {
            let run = try CLI.run(["synth", "--out", "\(fewer)/\(name)", "--name", name, "--frames", "2", "--width", "240", "--height", "180",
                                   "--textures", CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let other = try CLI.run(["tune", space, "--data", fewer, "--out", killed, "--resume"])
        #expect(other.status == 2 && other.stderr.contains("another space or other settings"), "\(other.stderr)")

        // Refused before the folder is touched: the earlier run in it stays whole.
        let before = try String(contentsOfFile: "\(whole)/trials.jsonl", encoding: .utf8)
        let sharded = try CLI.run(["tune", space, "--data", data, "--out", whole, "--shard", "0/2"])
        #expect(sharded.status == 2 && sharded.stderr.contains("cannot be sharded"), "\(sharded.stderr)")
        #expect(!sharded.stderr.contains("replacing"), "\(sharded.stderr)")
        #expect(try String(contentsOfFile: "\(whole)/trials.jsonl", encoding: .utf8) == before)
    }

    /// --holdout: a deterministic split by name, the best configuration reported on both sides.
    @Test func holdoutSplitsBySequenceAndReportsBothSides() throws {
        let data = try Self.data(), space = try Self.spaceFile()
        let runs = try (0..<2).map { _ -> (String, CLI.Run) in
            let folder = SequenceCommandTests.directory()
            return (folder, try CLI.run(["tune", space, "--data", data, "--out", folder, "--jobs", "2", "--holdout", "0.5"]))
        }
        for (folder, run) in runs {
            #expect(run.status == 0, "\(run.stderr)")
            // Both figures rounded for people, as the best's: four decimals.
            #expect(run.stdout.range(of: #"held out \(1 sequence\): maa10 (\d\.\d{4}|-) against \d\.\d{4} on the 1 sequence tuned"#, options: .regularExpression) != nil,
                    "\(run.stdout)")
            #expect(try Self.trials(folder).allSatisfy { $0.metrics.frames == 3 })  // only the tuning sequence
            for file in ["pareto.svg", "sensitivity.svg"] {
                let svg = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
                #expect(svg.hasPrefix("<svg") && svg.contains("<circle"), "\(file)")
            }
        }
        let manifests = try runs.map { try String(contentsOfFile: "\($0.0)/tune.json", encoding: .utf8) }
        #expect(manifests[0] == manifests[1])
        #expect(manifests[0].contains("\"holdout\""))
    }

    /// A search in which no configuration estimates anything has no winner: outputs are written, exit 3. A
    /// second run into the same folder says it replaces the first.
    @Test func aSearchWhereEveryFrameFailsExitsThree() throws {
        let data = try Self.data(), space = try Self.spaceFile("parameters: {maxBytes: [1, 2]}")
        let out = SequenceCommandTests.directory()
        let run = try CLI.run(["tune", space, "--data", data, "--out", out, "--jobs", "1"])
        #expect(run.status == 3 && run.stderr.contains("every frame failed in all 2 trials"), "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(out)/leaderboard.csv"))
        // The medians count failures, unlike evaluate's of the same old names: named so, every frame failed here.
        let line = try String(contentsOfFile: "\(out)/trials.jsonl", encoding: .utf8).split(separator: "\n")[0]
        #expect(line.contains("\"medianRotationErrorFailedAt180Degrees\":180") && line.contains("\"medianScoreFailedAt0\":0"), "\(line)")
        #expect(!line.contains("\"medianRotationErrorDegrees\"") && !line.contains("\"medianScore\""), "\(line)")
        // A trials.jsonl written under the old names still reads (resume, merge).
        let legacy = #"{"frames":6,"failures":6,"maa10":0,"maa5":0,"medianRotationErrorDegrees":180,"medianScore":0,"rotationMaa10":0}"#
        let old = try JSONDecoder().decode(TrialMetrics.self, from: Data(legacy.utf8))
        #expect(old.medianRotationErrorFailedAt180Degrees == 180 && old.medianScoreFailedAt0 == 0)
        let again = try CLI.run(["tune", space, "--data", data, "--out", out, "--jobs", "1"])
        #expect(again.stderr.contains("replacing the earlier tuning run in \(out) (2 trials"), "\(again.stderr)")
        // A FIFO where trials.jsonl should be neither hangs a resume nor a fresh run.
        try FileManager.default.removeItem(atPath: "\(out)/trials.jsonl")
        #expect(mkfifo("\(out)/trials.jsonl", 0o600) == 0)
        let resumed = try CLI.run(["tune", space, "--data", data, "--out", out, "--jobs", "1", "--resume"])
        #expect(resumed.status == 2 && resumed.stderr.contains("trials.jsonl: not a regular file"), "\(resumed.stderr)")
        let fresh = try CLI.run(["tune", space, "--data", data, "--out", out, "--jobs", "1"])
        #expect(fresh.status == 3, "\(fresh.stderr)")
    }

    /// A configuration that breaks a rule between parameters (varied with varied, fixed or the --config base)
    /// is refused before any trial runs, naming the trial and its values, and an earlier run in --out stays.
    @Test func anInvalidCombinationIsRefusedBeforeAnyTrial() throws {
        let data = try Self.data()
        let base = try CLI.temporaryFile("base.yaml", Data("features: {orb: {levels: 2}}\n".utf8))
        let cases: [(space: String, extra: [String], named: String)] = [
            ("fixed: {features.maxDimension: 320}\nparameters:\n  pose.minIterations: [100, 5000]\n  pose.essential.maxIterations: [10000, 1000]\n", [],
             "trial 3 (pose.minIterations = 5000, pose.essential.maxIterations = 1000) is not a valid configuration: pose.minIterations = 5000 must be at most pose.essential.maxIterations = 1000"),
            ("fixed: {pose.minIterations: 5000}\nparameters:\n  pose.essential.maxIterations: [10000, 1000]\n", [],
             "trial 1 (pose.essential.maxIterations = 1000) is not a valid configuration: pose.minIterations = 5000 must be at most"),
            ("parameters:\n  features.orb.firstLevel: [0, 3]\n", ["--config", base],
             "trial 1 (features.orb.firstLevel = 3) is not a valid configuration: features.orb.firstLevel = 3 is out of range"),
            // 900,000 trials, the first invalid near the end: found in trial order, each ruled combination checked once.
            ("fixed: {pose.essential.maxIterations: 89}\nparameters:\n  pose.minIterations: {min: 1, max: 90, step: 1}\n"
             + "  homography.threshold: {min: 1, max: 10.9, step: 0.1}\n  pose.essential.threshold: {min: 0.5, max: 10.4, step: 0.1}\n", [],
             "trial 890000 (pose.minIterations = 90, homography.threshold = 1, pose.essential.threshold = 0.5) is not a valid configuration"),
        ]
        for (text, extra, named) in cases {
            let out = SequenceCommandTests.directory()
            let run = try CLI.run(["tune", try Self.spaceFile(text), "--data", data, "--out", out, "--jobs", "1"] + extra)
            #expect(run.status == 2 && run.stderr.contains(named), "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(out)/trials.jsonl"))  // no trial ran
        }
    }

    /// Data changed under the same names and frame counts (the truth negated) is refused by --resume and by a
    /// merge, as `evaluate --resume` refuses it: kept trials were scored against the old truth.
    @Test func aResumeOrMergeRefusesChangedData() throws {
        let data = try Self.data(), space = try Self.spaceFile()
        let first = SequenceCommandTests.directory()
        let run = try CLI.run(["tune", space, "--data", data, "--out", first, "--jobs", "1", "--shard", "0/2"])
        #expect(run.status == 0, "\(run.stderr)")
        let csv = "\(data)/alpha/frames.csv"
        var lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let columns = ["gt_tx", "gt_ty", "gt_tz"].compactMap { lines[0].firstIndex(of: $0) }
        #expect(columns.count == 3)
        for row in 1..<lines.count {
            for column in columns where !lines[row][column].isEmpty {
                lines[row][column] = lines[row][column].hasPrefix("-") ? String(lines[row][column].dropFirst()) : "-" + lines[row][column]
            }
        }
        try (lines.map { $0.joined(separator: ",") }.joined(separator: "\n") + "\n").write(toFile: csv, atomically: true, encoding: .utf8)
        let resumed = try CLI.run(["tune", space, "--data", data, "--out", first, "--jobs", "1", "--shard", "0/2", "--resume"])
        #expect(resumed.status == 2 && resumed.stderr.contains("--resume: alpha (3 frames) (sequence.json or frames.csv) changed since the run in"),
                "\(resumed.stderr)")
        let second = SequenceCommandTests.directory()
        let other = try CLI.run(["tune", space, "--data", data, "--out", second, "--jobs", "1", "--shard", "1/2"])
        #expect(other.status == 0, "\(other.stderr)")
        let merge = try CLI.run(["tune", "merge", first, second, "--out", SequenceCommandTests.directory()])
        #expect(merge.status == 2 && merge.stderr.contains("was tuned on other data than \(first): alpha (3 frames) (sequence.json or frames.csv) differs"),
                "\(merge.stderr)")
    }

    /// A value holding commas (a matrix) is quoted in leaderboard.csv: every row has the header's fields.
    @Test func theLeaderboardQuotesValuesWithCommas() throws {
        let space = try Self.spaceFile("fixed: {features.maxDimension: 320}\nparameters:\n"
            + "  sensor.cameraFromDevice: [\"[[1,0,0],[0,-1,0],[0,0,-1]]\", \"[[1,0,0],[0,1,0],[0,0,1]]\"]\n")
        let out = SequenceCommandTests.directory()
        let run = try CLI.run(["tune", space, "--data", try Self.data(), "--out", out, "--jobs", "1"])
        #expect(run.status == 0 || run.status == 3, "\(run.stderr)")
        let text = try String(contentsOfFile: "\(out)/leaderboard.csv", encoding: .utf8)
        #expect(text.contains(",\"[[1, 0, 0], [0, -1, 0], [0, 0, -1]]\"\n") && text.contains(",\"[[1, 0, 0], [0, 1, 0], [0, 0, 1]]\"\n"), "\(text)")
        // Fields: commas outside quotes, plus one.
        func fields(_ line: Substring) -> Int { line.reduce(into: (1, false)) { s, c in if c == "\"" { s.1.toggle() } else if c == ",", !s.1 { s.0 += 1 } }.0 }
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3 && lines.allSatisfy { fields($0) == 17 }, "\(text)")
    }

    /// A --shard that is not exactly i/n is refused (empty or extra parts were dropped and read as 0/2).
    @Test(arguments: ["0/a/2", "0//2", "/0/2", "0/2/", "2/2", "a/2", "0/0"])
    func aMalformedShardIsRefused(shard: String) throws {
        let run = try CLI.run(["tune", try Self.spaceFile(), "--data", "/nonexistent", "--out", SequenceCommandTests.directory(), "--shard", shard])
        #expect(run.status == 2 && run.stderr.contains("--shard '\(shard)' must be i/n with 0 <= i < n"), "\(run.stderr)")
    }

    /// The last shard of a million-configuration grid runs its one trial without listing the others (it
    /// took over a gigabyte).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/time")))
    func aShardOfAHugeGridListsNothing() throws {
        let space = try Self.spaceFile("""
            fixed: {features.maxDimension: 320}
            parameters:
              matching.ratio: {min: 0.5, max: 0.599, step: 0.001}
              homography.threshold: {min: 1, max: 10.9, step: 0.1}
              pose.essential.threshold: {min: 0.5, max: 10.4, step: 0.1}
            """)
        let out = SequenceCommandTests.directory()
        let peak = SequenceCommandTests.directory() + ".txt"
        let run = try CLI.run(["-f", "%M", "-o", peak, CLI.executable.path, "tune", space, "--data", try Self.data(), "--out", out, "--jobs", "1",
                               "--shard", "999999/1000000"], executable: URL(fileURLWithPath: "/usr/bin/time"))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Self.trials(out).map(\.parameters) == [[["matching.ratio", "0.599"], ["homography.threshold", "10.9"], ["pose.essential.threshold", "10.4"]]])
        let kilobytes = try #require(Int(String(contentsOfFile: peak, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kilobytes < 500_000, "peak \(kilobytes) KB")
    }

    /// A search space of nested YAML aliases (a "billion laughs") is refused before it is expanded.
    @Test func anAliasBombSpaceIsRefused() throws {
        let run = try CLI.run(["tune", try Self.spaceFile(Fixtures.yamlAliasBomb), "--data", try Self.data(), "--out", SequenceCommandTests.directory()])
        #expect(run.status == 2 && run.stderr.contains("search space has more than 100000 values, counting each copy a YAML alias makes"), "\(run.stderr)")
        #expect(run.stderr.filter { $0 == "\n" }.count == 1, "\(run.stderr)")
    }

    /// A shard past the space's last trial runs nothing, and says so.
    @Test func anEmptyShardSaysSo() throws {
        let data = try Self.data(), space = try Self.spaceFile()
        let run = try CLI.run(["tune", space, "--data", data, "--out", SequenceCommandTests.directory(), "--shard", "7/8"])
        #expect(run.status == 0 && run.stderr.contains("shard 7/8 has no trials (the space has 4)"), "\(run.stderr)")
    }

    @Test(arguments: [
        ("fixed: [features.maxDimension, 320]\nparameters: {matching.ratio: [0.8]}", "fixed must map parameters to values"),
        ("parameters: [matching.ratio, 0.8]", "parameters must map parameters"),
        ("parameters: {features.orb.levels: [0, 8]}", "features.orb.levels"),
        ("parameters: {matching.ratoi: [0.8]}", "matching.ratoi"),
        ("parameters: {pose.essential.threshold: {min: 2, max: 1, step: 0.5}}", "pose.essential.threshold"),
        ("strategy: random\nparameters: {matching.ratio: [0.8]}", "trials"),
        ("parameters: {matching.ratio: []}", "matching.ratio"),
        // Keys of another form are refused, not ignored: the grid would silently differ from the file.
        ("parameters: {matching.ratio: {min: 0.7, max: 0.9, step: 0.1, count: 3}}", "'count' does not belong in a linear range"),
        ("parameters: {pose.essential.threshold: {min: 0.5, max: 2, count: 4, log: true, step: 0.5}}", "'step' does not belong in a log range"),
        ("parameters: {matching.ratio: {min: 0.7, max: 0.9, stpe: 0.1}}", "'stpe'"),
        ("parameters: {features.orb.levels: {min: 4, max: 8, step: 0.5}}", "features.orb.levels is an integer"),
        ("parameters: {features.orb.levels: {min: 2, max: 4, count: 5, log: true}}", "rounds to only 3 distinct values of 5"),
        ("parameters:\n", "parameters must name at least one parameter"),
        // Keys the strategy does not read, and a log flag that is not a boolean, were ignored.
        ("trials: 5\nparameters: {matching.ratio: [0.8]}", "trials does not apply to strategy grid"),
        ("eta: 2\nparameters: {matching.ratio: [0.8]}", "eta does not apply to strategy grid"),
        ("minFrames: 2\nparameters: {matching.ratio: [0.8]}", "minFrames does not apply to strategy grid"),
        ("seed: 7\nparameters: {matching.ratio: [0.8]}", "seed does not apply to strategy grid"),
        ("strategy: random\ntrials: 2\neta: 2\nparameters: {matching.ratio: [0.8]}", "eta does not apply to strategy random"),
        ("parameters: {pose.essential.threshold: {min: 0.5, max: 2, count: 3, log: maybe}}", "pose.essential.threshold: log must be true or false, got the single value 'maybe'"),
        // A number or a flag in quotes is a string, which --config refuses: so does the space (it was read as the number).
        ("strategy: random\ntrials: \"3\"\nparameters: {matching.ratio: [0.8]}", "trials = \"3\" is quoted, which makes it a string: write it without quotes"),
        ("fixed: {pose.minInliers: '12'}\nparameters: {matching.ratio: [0.8]}", "pose.minInliers = \"12\" is quoted"),
        ("parameters: {matching.ratio: {min: \"0.7\", max: 0.9, step: 0.1}}", "matching.ratio: min = \"0.7\" is quoted"),
        ("{\"parameters\": {\"matching.ratio\": [\"0.8\"]}}", "matching.ratio = \"0.8\" is quoted"),
        ("parameters: {pose.essential.threshold: {min: 0.5, max: 2, count: 3, log: \"true\"}}", "pose.essential.threshold: log = \"true\" is quoted"),
        // Past what an integer holds: refused as out of range, not a trap in the conversion.
        ("parameters: {features.maxKeypoints: {min: 1e19, max: 1e19, step: 1}}", "features.maxKeypoints = 1e+19 is out of range"),
        ("parameters: {features.maxKeypoints: {min: 1, max: 1e30, count: 3, log: true}}", "features.maxKeypoints = 1000000000000000.0 is out of range"),
    ])
    func invalidSpacesAreRefusedBeforeAnyWork(text: String, named: String) throws {
        let space = try Self.spaceFile(text)
        let run = try CLI.run(["tune", space, "--data", "/nonexistent", "--out", SequenceCommandTests.directory()])
        #expect(run.status == 2)
        #expect(run.stderr.contains(named), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
    }
}
