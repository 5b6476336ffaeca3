import ArgumentParser
import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit
import RephotoSynthesis

struct EvaluateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Evaluate the vision and sensor paths over recorded sequences against their ground truth.",
        discussion: "Outputs in --out: frames.csv (rows as frames finish), run.json (in-progress, complete or interrupted), summary.json, report.html (docs/evaluation.md). SIGINT or SIGTERM lets the frames in flight finish, writes a partial summary and exits 130 or 143; --resume continues. Exit codes: 0 all frames estimated, 3 some frames could not be estimated, 2 some sequence could not be read or its intrinsics do not fit its images.",
        subcommands: [Run.self, Merge.self, Compare.self],
        defaultSubcommand: Run.self)

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run", abstract: "Evaluate sequences (the default subcommand).")

        @Argument(help: "Sequence folders, or folders to search for sequences (any folder with a sequence.json).")
        var paths: [String]
        @OptionGroup var pipeline: PipelineOptions
        @Option(name: [.short, .long], parsing: .unconditional, help: "Frames evaluated in parallel (default: the number of cores).") var jobs = ProcessInfo.processInfo.activeProcessorCount
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output folder.") var out = "evaluation"
        @Option(parsing: .unconditional, help: "Evaluate only shard i of n (0-based, i/n): every n-th sequence in sorted order, for job arrays.") var shard: String?
        @Flag(help: "Detect the reference again for every frame (for benchmarks: shows what caching saves).") var recomputeReference = false
        @Flag(help: "Skip the overlay thumbnails in the report.") var noThumbnails = false
        @Flag(help: "Continue the run in --out that was interrupted or killed: its finished frames are kept, not evaluated again (same settings and sequences required).")
        var resume = false
        @Option(parsing: .unconditional, help: "On SIGINT or SIGTERM: seconds the frames in flight may take to finish before the partial results are written.")
        var grace = 30.0
        @Flag(help: "Run each sequence as one guidance session in frame order (tracking between robust updates, session.* settings), and again with a robust update on every frame; writes session.csv, session.json and session.html (docs/evaluation.md).")
        var session = false
        @Option(parsing: .unconditional, help: "With --session: join each robust update this many frames after the frame it ran on, as the worker's concurrent updates are (0: inline, the frame waits for it; default 2). Deterministic.")
        var robustLag: Int?

        func run() throws {
            if session { return try runSessions() }
            if let robustLag { throw RephotoError.badInput("--robust-lag \(robustLag) applies to --session runs only") }
            guard jobs >= 1 else { throw RephotoError.badInput("--jobs \(jobs) must be at least 1") }
            guard grace >= 0, grace <= 86_400 else { throw RephotoError.badInput("--grace \(grace) must be a number of seconds from 0 to 86400 (a day)") }
            // Parallel frames share the cores with OpenCV's own threads: one each. Process state, so set before any work.
            if jobs > 1 { try OpenCVRuntime.configure(threads: 1) }
            let started = Date()
            let settings = try pipeline.resolve()
            var sequences = try SequenceDiscovery.find(paths)
            try OutputPaths.checkFolder(out, apartFrom: sequences.map(\.path))
            let output = try EvaluationOutput.prepare(out)
            if let shard {
                let parts = shard.split(separator: "/").compactMap { Int($0) }
                guard parts.count == 2, parts[1] >= 1, (0..<parts[1]).contains(parts[0]) else {
                    throw RephotoError.badInput("--shard '\(shard)' must be i/n with 0 <= i < n")
                }
                sequences = SequenceDiscovery.shard(sequences, index: parts[0], count: parts[1])
            }
            guard !sequences.isEmpty || shard != nil else { throw RephotoError.badInput("no sequence.json found under \(paths.joined(separator: ", "))") }
            var evaluator = try Evaluator(config: settings, jobs: jobs)
            evaluator.recomputeReference = recomputeReference
            evaluator.thumbnails = !noThumbnails
            let (loaded, broken) = Evaluator.load(sequences)
            let planned = loaded.map { $0.currentFrames.count }.reduce(0, +)
            if !resume, let earlier = try? EvaluationRunState.load(output) {
                // Replaced, as documented, but said: a long run is not lost unnoticed.
                CLIOutput.message("replacing the earlier evaluation in \(out) (\(earlier.framesDone) frames; --resume would have continued it)")
            }
            let provenance = Provenance(settings: settings, sequences: Provenance.digests(of: loaded.compactMap { s in s.directory.map { (s.manifest.name, $0.path) } }),
                                        started: started)
            let run = try EvaluationRun(folder: output, settings: settings, sequences: sequences, framesPlanned: planned, resume: resume, provenance: provenance)
            if resume { CLIOutput.message("resuming \(out): \(run.resumedRows.count) of \(planned) frames already done") }
            // Past the grace period the frames still running are abandoned: what is finished is written.
            let interruption = Interruption(grace: grace) { code in
                if (try? run.finish(broken: broken, thumbnails: [:], interrupted: true)) != nil {
                    CLIOutput.message("interrupted: \(run.framesDone) of \(planned) frames in \(out)/; continue with --resume")
                    // _exit, not exit: frames still running on other threads would meet OpenCV's static
                    // destructors (a SIGSEGV seen in CI). Everything is already written, unbuffered.
                    _exit(code)
                }
            }
            let failures = FailedRows(run.resumedRows)
            evaluator.onRow = { run.record($0); failures.note($0) }
            evaluator.shouldStop = { interruption.requested }
            let progress = Progress(label: "evaluate", logInterval: 5)
            let outcome = evaluator.run(loaded, finished: run.resumedRows) { progress.update($0, of: $1) }
            let interrupted = interruption.requested
            guard let summary = try run.finish(broken: broken + outcome.broken, thumbnails: outcome.thumbnails, interrupted: interrupted) else {
                throw ExitCode(interruption.exitCode)  // the deadline wrote the results and is exiting
            }
            print(EvaluateCommand.table(summary))
            if let line = failures.line { print(line) }
            print("results in \(CLIOutput.visible(out))/ (frames.csv, summary.json, report.html)")
            for broken in summary.brokenSequences { CLIOutput.message("not evaluated: \(broken.error)") }
            if interrupted {
                CLIOutput.message("interrupted: \(run.framesDone) of \(planned) frames in \(out)/ (summary marked partial); continue with --resume")
                throw ExitCode(interruption.exitCode)
            }
            try EvaluateCommand.exit(for: summary)
        }
    }

    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Combine shard result folders into one summary and report.")

        @Argument(help: "Result folders of the shards.") var folders: [String]
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output folder.") var out = "evaluation"

        func run() throws {
            try OutputPaths.checkFolder(out, apartFrom: folders)
            let output = try EvaluationOutput.prepare(out)
            let (outcome, provenance) = try EvaluationOutput.merge(folders.map { URL(fileURLWithPath: $0) })
            // A run state left by an earlier evaluation in --out would describe that run, not this merge.
            try? FileManager.default.removeItem(at: output.appendingPathComponent(EvaluationRunState.fileName))
            let summary = try EvaluationOutput.write(outcome, to: output, provenance: provenance)
            print(EvaluateCommand.table(summary))
            try EvaluateCommand.exit(for: summary)
        }
    }

    struct Compare: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Two result folders of the same data side by side: the settings that differ, each figure, the difference (B − A) and which is better by more than its threshold (docs/evaluation.md).")

        @Argument(help: "Result folder A.") var a: String
        @Argument(help: "Result folder B.") var b: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let first = try EvaluationOutput.loadSummary(URL(fileURLWithPath: a)), second = try EvaluationOutput.loadSummary(URL(fileURLWithPath: b))
            try EvaluationComparison.check(first, second, folderA: a, folderB: b)
            let comparison = EvaluationComparison.compare(first, second, folderA: a, folderB: b)
            if json { return try CLIOutput.printJSON(comparison) }
            print(EvaluateCommand.comparisonTable(comparison, first.provenance, second.provenance))
        }
    }

    /// The comparison for a terminal: A and B named by their folders, the settings that differ, then the figures.
    static func comparisonTable(_ comparison: EvaluationComparison, _ a: Provenance?, _ b: Provenance?) -> String {
        func f(_ v: Double?) -> String { v.map { String(format: "%.4g", $0) } ?? "–" }
        func made(_ p: Provenance?) -> String { p.map { " (\($0.detector), started \($0.started))" } ?? "" }
        var lines = ["A: " + CLIOutput.visible(comparison.folderA) + made(a), "B: " + CLIOutput.visible(comparison.folderB) + made(b)]
        if let differences = comparison.settingsDifferences {
            lines.append(differences.isEmpty ? "settings: the same" : "settings that differ:")
            for d in differences { lines.append("  \(d.path): A \(d.a), B \(d.b)") }
        } else {
            lines.append("settings: unknown (a summary written before provenance was recorded)")
        }
        // Columns as wide as their widest entry: a long sequence name must not push the row out of line.
        let scope = max(5, comparison.lines.map { CLIOutput.visible($0.scope).count }.max() ?? 0)
        let metric = max(6, comparison.lines.map(\.metric.count).max() ?? 0)
        lines.append(["scope".padding(scope), "metric".padding(metric), "A".padding(10), "B".padding(10), "B−A".padding(10), "better"].joined(separator: " "))
        for l in comparison.lines {
            lines.append([CLIOutput.visible(l.scope).padding(scope), l.metric.padding(metric), f(l.a).padding(10), f(l.b).padding(10),
                          f(l.difference).padding(10), l.better.map { $0 == "same" ? "same" : $0.uppercased() } ?? "–"].joined(separator: " "))
        }
        lines.append(EvaluationComparison.rule)
        return lines.joined(separator: "\n")
    }

    static func table(_ summary: EvaluationSummary) -> String {
        func f(_ v: Double?, _ d: Int = 2) -> String { v.map { String(format: "%.\(d)f", $0) } ?? "–" }
        var lines = ["sequence                 frames  failed  mAA@5  mAA@10  rot.mAA@10  rot° med  transl° med  score med  sensor° med"]
        let all = [("all", summary.overall)] + summary.sequences.keys.sorted().map { ($0, summary.sequences[$0]!) }
        for (name, s) in all {
            lines.append([name.padding(24), String(s.frames).padding(7), String(s.failures).padding(7), f(s.maa5, 3).padding(6),
                          f(s.maa10, 3).padding(7), f(s.rotationMaa10, 3).padding(11), f(s.medianRotationErrorDegrees).padding(9), f(s.medianTranslationErrorDegrees).padding(12),
                          f(s.medianScore, 1).padding(10), f(s.medianSensorVisionAngleDegrees)].joined(separator: " "))
        }
        // Where the mAA went: poses the gate refused and translations left undetermined, by cause.
        func counts(_ c: [String: Int]?) -> String { (c ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
        if let failed = summary.overall.failureKinds, !failed.isEmpty {
            let common = summary.overall.commonFailureReason.map { reason in
                let frames = summary.overall.commonFailureFrames ?? 1
                return frames > 1 ? "; most often (\(frames) frames): " + CLIOutput.visible(reason) : "; first: " + CLIOutput.visible(reason)
            }
            lines.append("failed: " + counts(failed) + (common ?? ""))
        }
        if let refused = summary.overall.poseRefusals, !refused.isEmpty { lines.append("poses refused: " + counts(refused)) }
        if let undetermined = summary.overall.undeterminedTranslations, !undetermined.isEmpty {
            lines.append("translations undetermined: " + counts(undetermined))
        }
        if let focal = summary.overall.medianReferenceFocalErrorPercent {
            lines.append("old cameras: median focal length error \(f(focal, 2)) %")
        }
        return lines.joined(separator: "\n")
    }

    static func exit(for summary: EvaluationSummary) throws {
        if !summary.brokenSequences.isEmpty { throw ExitCode(2) }
        if summary.overall.failures > 0 { throw ExitCode(3) }
    }
}

extension EvaluateCommand.Run {
    /// `--session`: one thread, both runs timed alike; SIGINT or SIGTERM stops after the frame in flight, writing nothing.
    func runSessions() throws {
        guard !resume, shard == nil else { throw RephotoError.badInput("--session runs whole sequences afresh: --resume and --shard do not apply") }
        let started = Date()
        let settings = try pipeline.resolve()
        let sequences = try SequenceDiscovery.find(paths)
        try OutputPaths.checkFolder(out, apartFrom: sequences.map(\.path))
        guard !sequences.isEmpty else { throw RephotoError.badInput("no sequence.json found under \(paths.joined(separator: ", "))") }
        let output = try EvaluationOutput.prepare(out)
        let (loaded, broken) = Evaluator.load(sequences)
        let robustLag = robustLag ?? 2
        guard (0...1000).contains(robustLag) else { throw RephotoError.badInput("--robust-lag \(robustLag) must be 0 to 1000 frames") }
        var evaluator = try SessionEvaluator(config: settings)
        evaluator.robustLag = robustLag
        let interruption = Interruption(grace: grace) { code in _exit(code) }
        evaluator.shouldStop = { interruption.requested }
        let progress = Progress(label: "sessions", logInterval: 5)
        var (rows, summary) = try evaluator.run(loaded) { progress.update($0, of: $1) }
        if interruption.requested { throw ExitCode(interruption.exitCode) }
        summary.brokenSequences = broken + summary.brokenSequences
        summary.provenance = Provenance(settings: settings, sequences: Provenance.digests(of: loaded.compactMap { s in s.directory.map { (s.manifest.name, $0.path) } }),
                                        started: started)
        try SessionEvaluationSummary.write(rows: rows, summary: summary, to: output)
        print(EvaluateCommand.sessionTable(summary))
        print("results in \(CLIOutput.visible(out))/ (session.csv, session.json, session.html)")
        for entry in summary.brokenSequences { CLIOutput.message("not evaluated: \(entry.error)") }
        if !summary.brokenSequences.isEmpty { throw ExitCode(2) }
        if (summary.runs["session"]?["all"]?.failedFrames ?? 0) > 0 { throw ExitCode(3) }
    }
}

extension EvaluateCommand {
    /// The session table, at most 100 columns for sequence names up to 24 characters: the figures a person compares
    /// at a glance; the rest (mean time, quadrilateral difference, step error where undetermined) are in session.json.
    static func sessionTable(_ summary: SessionEvaluationSummary) -> String {
        func f(_ v: Double?, _ d: Int = 1) -> String { v.map { String(format: "%.\(d)f", $0) } ?? "–" }
        let names = Set((summary.runs["session"] ?? [:]).keys).subtracting(["all"]).sorted() + ["all"]
        let width = min(24, max(8, names.map { CLIOutput.visible($0).count }.max() ?? 0))
        func cut(_ name: String) -> String { let v = CLIOutput.visible(name); return v.count <= width ? v : String(v.prefix(width - 1)) + "…" }
        var lines = ["sequence".padding(width) + " run     frames rob/trk/held ms trk p50/p95 ms rob p50 mAA@10 wrong step° conv."]
        for name in names {
            for run in ["robust", "session"] {
                guard let s = summary.runs[run]?[name] else { continue }
                lines.append([cut(name).padding(width), run.padding(7), String(s.frames).padding(6), "\(s.robustFrames)/\(s.trackedFrames)/\(s.heldFrames)".padding(12),
                              "\(f(s.medianTrackedMs))/\(f(s.p95TrackedMs))".padding(15), f(s.medianRobustMs).padding(10), f(s.maa10, 3).padding(6),
                              String(s.confidentWrong).padding(5), f(s.medianStepErrorDegrees).padding(5), s.firstConvergedFrame.map(String.init) ?? "–"].joined(separator: " "))
            }
        }
        lines.append("rob/trk/held: robust updates (answered or joined), tracked, held frames; conv.: first converged")
        return lines.joined(separator: "\n")
    }
}

extension String {
    func padding(_ width: Int) -> String { padding(toLength: max(width, count), withPad: " ", startingAt: 0) }
}

/// The frames of a run that failed, as they finish on the evaluator's threads: the terminal names them, so that a
/// failure is found without reading frames.csv.
final class FailedRows: @unchecked Sendable {  // `rows` is read and written under `lock`
    private let lock = NSLock()
    private var rows: [EvaluationRow] = []

    init(_ earlier: [EvaluationRow]) { rows = earlier.filter(\.failed) }

    func note(_ row: EvaluationRow) {
        if row.failed { lock.withLock { rows.append(row) } }
    }

    /// "failed frames: SEQUENCE #INDEX (FILE), ..." for the first five in sequence and frame order (the reasons are
    /// in the table's "failed:" line and in frames.csv).
    var line: String? {
        let failed = lock.withLock { rows }.sorted { ($0.sequence, $0.index) < ($1.sequence, $1.index) }
        guard !failed.isEmpty else { return nil }
        let named = failed.prefix(5).map { "\(CLIOutput.visible($0.sequence)) #\($0.index) (\(CLIOutput.visible($0.file)))" }
        let more = failed.count > 5 ? ", and \(failed.count - 5) more (frames.csv, column failure_reason)" : ""
        return "failed frames: " + named.joined(separator: ", ") + more
    }
}
