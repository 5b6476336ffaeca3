import Foundation
import RephotoData
import RephotoKit

/// One tuning run and its folder (docs/tuning.md): what it was made with (`Manifest`, tune.json), a fresh start or
/// a resume, the search, the held-out check; and the merge of the folders of shards. `rephoto tune` parses its
/// flags into one and prints what it returns.
public struct TuningRun {
    /// What a tuning folder was made with: a resume or a merge must match it.
    public struct Manifest: Codable, Equatable, Sendable {
        public var objective: TuningObjective
        public var maxMsPerFrame: Double?
        public var base: String  // the base configuration as JSON
        /// Each tuning sequence as "name (N frames)": another data set under the same names is refused.
        public var sequences: [String]
        public var holdout: [String]? = nil
        /// "i/n" when sharded; a resume must run the same shard, a merge takes every shard of one run.
        public var shard: String? = nil
        /// Each tuning sequence's digests as `evaluate --resume` keeps them (EvaluationRunState), in `sequences`
        /// order: the same name and frame count is no proof that the truth or the images are the same. Absent
        /// in folders written before they were added.
        public var sequenceDigests: [String]? = nil
        public var imageDigests: [String]? = nil

        public func unsharded() -> Manifest {
            var copy = self
            copy.shard = nil
            return copy
        }

        /// The settings alone; the data's digests are compared on their own, to name the sequence that changed.
        public func withoutDigests() -> Manifest {
            var copy = self
            copy.sequenceDigests = nil
            copy.imageDigests = nil
            return copy
        }

        /// The first sequence whose digests differ from `earlier`'s (absent digests are not compared). Image
        /// stamps (modification times) only with `images`: shards merged from other machines differ in them.
        public func changedSequence(since earlier: Manifest, images: Bool) -> String? {
            func differ(_ a: [String]?, _ b: [String]?) -> Int? {
                guard let a, let b else { return nil }
                return zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? (a.count == b.count ? nil : min(a.count, b.count))
            }
            func name(_ index: Int) -> String { index < sequences.count ? sequences[index] : "a sequence" }
            if let index = differ(earlier.sequenceDigests, sequenceDigests) { return "\(name(index)) (sequence.json or frames.csv)" }
            if images, let index = differ(earlier.imageDigests, imageDigests) { return "\(name(index)) (a file added, removed or rewritten)" }
            return nil
        }
    }

    /// The search space file (YAML or JSON) and the folders searched for sequences.
    public var space: String
    public var data: [String]
    public var objective: TuningObjective
    /// Trials slower than this median per frame rank after all others.
    public var maxMsPerFrame: Double?
    /// Frames evaluated in parallel.
    public var jobs: Int
    /// The run's folder.
    public var out: String
    /// "i/n": only trials i, i+n, i+2n...
    public var shard: String?
    /// Continue the run in `out`, keeping its finished trials.
    public var resume = false
    /// Base pipeline settings under the space's values (a file).
    public var config: String?
    /// The fraction of the sequences held out of the search.
    public var holdout: Double?
    /// A folder that keeps features across runs.
    public var cache: String?
    /// `--trials` and `--timeout`.
    public var budget = TuningBudget()

    public init(space: String, data: [String], objective: TuningObjective = .maa10, jobs: Int = 1, out: String) {
        self.space = space
        self.data = data
        self.objective = objective
        self.jobs = jobs
        self.out = out
    }

    /// What a run found: the outputs' summary (leaderboard.csv and the rest are written), the held-out line,
    /// what the caches saved, and, when no configuration estimated anything, how many trials failed on every frame.
    public struct Outcome: Sendable {
        public var summary: String
        public var heldOut: String?
        public var caches: String
        public var noWinner: Int?
    }

    /// `progress(done, total, best so far)`; `warn` takes what a person should know but does not stop the run.
    public func run(progress: @escaping (Int, Int, TrialRecord?) -> Void = { _, _, _ in }, warn: (String) -> Void = { _ in }) throws -> Outcome {
        guard jobs >= 1 else { throw RephotoError.badInput("--jobs \(jobs) must be at least 1") }
        if let maxMsPerFrame { guard maxMsPerFrame > 0, maxMsPerFrame.isFinite else { throw RephotoError.badInput("--max-ms-per-frame \(maxMsPerFrame) must be positive") } }
        let started = Date()
        if let trials = budget.trials { try TuningBudget.checkTrials(trials) }
        if let timeout = budget.timeout, !(timeout > 0 && timeout.isFinite) { throw RephotoError.badInput("--timeout \(timeout) must be a positive duration") }
        let parsed = try TuningSpace.load(from: space).budgeted(trials: budget.trials)
        // Exactly two whole numbers: empty or extra parts (0//2, /0/2, 0/a/2) were dropped and read as 0/2.
        let parsedShard = try shard.map { text -> (index: Int, count: Int) in
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map { Int($0) }
            guard parts.count == 2, let index = parts[0], let count = parts[1], count >= 1, (0..<count).contains(index) else {
                throw RephotoError.badInput("--shard '\(text)' must be i/n with 0 <= i < n")
            }
            return (index, count)
        }
        let spaceText = try TuningRun.text(space)
        let base = try config.map { try PipelineConfig.load(from: $0) } ?? PipelineConfig()
        guard !data.isEmpty else { throw RephotoError.badInput("--data needs at least one sequence folder") }
        let folders = try SequenceDiscovery.find(data)
        let (loaded, broken) = Evaluator.load(folders)
        if let first = broken.first { throw RephotoError.badInput("\(first.path): \(first.error)") }
        guard !loaded.isEmpty else { throw RephotoError.badInput("no sequence.json found under \(data.joined(separator: ", "))") }
        var sequences = loaded, heldOut: [FrameSequence] = []
        if let holdout {
            guard holdout > 0, holdout < 1 else { throw RephotoError.badInput("--holdout \(holdout) must be a fraction between 0 and 1") }
            (sequences, heldOut) = Tuner.split(loaded, holdout: holdout)
            guard !sequences.isEmpty, !heldOut.isEmpty else {
                throw RephotoError.badInput("--holdout \(holdout) leaves no sequence on one side of \(loaded.count)")
            }
        }
        if cache?.isEmpty == true { throw RephotoError.badInput("--cache needs a folder") }
        let disk = try cache.map { try FeatureCacheDirectory(URL(fileURLWithPath: $0)) }
        if let disk, !disk.isWritable {
            warn("warning: --cache \(disk.root.path) is not writable: features are read from it, new ones are not kept")
        }
        var tuner = Tuner(space: parsed, sequences: sequences, objective: objective, jobs: jobs, maxMsPerFrame: maxMsPerFrame, base: base,
                          cache: disk)
        if let shard, let parsedShard {
            tuner.shard = parsedShard
            let count = try parsed.configurationCount()
            if parsedShard.index >= count {
                warn("warning: shard \(shard) has no trials (the space has \(count)): nothing to run")
            }
        }
        try tuner.validate()
        if jobs > 1 { try OpenCVRuntime.configure(threads: 1) }
        // After OpenCV's start-up settings: the check decodes images.
        for sequence in loaded { try Evaluator.checkCameras(sequence) }

        let folder = URL(fileURLWithPath: out)
        let manifest = Manifest(objective: objective, maxMsPerFrame: maxMsPerFrame, base: ParameterRegistry.json(of: base),
                                sequences: sequences.map { "\($0.manifest.name) (\($0.currentFrames.count) frames)" },
                                holdout: holdout == nil ? nil : heldOut.map { "\($0.manifest.name) (\($0.currentFrames.count) frames)" },
                                shard: shard == nil ? nil : "\(tuner.shard.index)/\(tuner.shard.count)",
                                sequenceDigests: sequences.map { EvaluationRunState.digest(ofSequenceAt: $0.directory?.path ?? "") },
                                imageDigests: sequences.map { EvaluationRunState.imageDigest(ofSequenceAt: $0.directory?.path ?? "", results: folder.path) })
        try TuningRun.prepare(folder, space: spaceText, manifest: manifest, resume: resume, warn: warn)
        let provenance = Provenance(settings: base, sequences: Provenance.digests(of: sequences.compactMap { s in s.directory.map { (s.manifest.name, $0.path) } }),
                                    started: started)
        tuner.deadline = budget.timeout.map { ContinuousClock.now + .seconds($0) }
        let records = try tuner.run(in: folder, progress: progress)
        let count = try parsed.configurationCount()
        // A line edited by hand outside the space's trials is not part of this run.
        let all = try Tuner.readTrials(folder.appendingPathComponent(Tuner.trialsFile)).values.filter { (0..<count).contains($0.trial) }
        let planned = stride(from: tuner.shard.index, to: count, by: tuner.shard.count).reduce(0) { n, _ in n + 1 }
        let mostFrames = sequences.map { $0.currentFrames.count }.max() ?? 0
        let stopped = tuner.pastDeadline() && (parsed.strategy == .halving
            ? !(all.contains { ($0.framesPerSequence ?? mostFrames) >= mostFrames }) || all.count < count
            : all.count < planned)
        let summary = try Tuner.writeOutputs(all.isEmpty ? records : all, space: parsed, objective: objective, base: base, to: folder,
                                             provenance: provenance, stoppedAtTimeout: stopped)
        let finished = all.isEmpty ? records : all
        func caches() -> String {
            let counts = tuner.featureCache.counts, stages = tuner.stageCache.counts
            let fromDisk = cache.map { ", \(counts.loaded) read from \($0)" } ?? ""
            return "feature cache: \(counts.detections) detections, \(counts.reuses) reused\(fromDisk); searches: \(stages.runs) run, \(stages.reuses) reused"
        }
        var outcome = Outcome(summary: summary, caches: caches())
        if !finished.isEmpty, finished.allSatisfy({ $0.metrics.frames > 0 && $0.metrics.failures == $0.metrics.frames }) {
            // Outputs are written, but no configuration estimated anything: that is not a winner.
            outcome.noWinner = finished.count
            return outcome
        }
        if !heldOut.isEmpty, let best = Tuner.ranked(all.isEmpty ? records : all, objective).first {
            // The winner on sequences the search never saw: a large drop is overfitting.
            let config = try parsed.config(for: try best.parameters.map { pair in
                (pair[0], try ParameterRegistry.parameter(pair[0])!.parse(pair[1]))
            }, base: base)
            var evaluator = try Evaluator(config: config, jobs: jobs)
            evaluator.thumbnails = false
            evaluator.featureCache = tuner.featureCache
            evaluator.stageCache = tuner.stageCache
            let metrics = TrialMetrics(rows: evaluator.run(heldOut).rows)
            func count(_ n: Int) -> String { n == 1 ? "1 sequence" : "\(n) sequences" }
            let text = String(format: "held out (%@): %@ %@ against %@ on the %@ tuned\n", count(heldOut.count), objective.rawValue,
                              objective.rounded(objective.value(of: metrics)), objective.rounded(best.objective), count(sequences.count))
            outcome.heldOut = text
            let summaryFile = folder.appendingPathComponent("summary.txt")
            let earlier = (try? String(contentsOf: summaryFile, encoding: .utf8)) ?? ""
            try (earlier + text).write(to: summaryFile, atomically: true, encoding: .utf8)
        }
        outcome.caches = caches()
        return outcome
    }

    /// Combines the folders of the shards of one run (same space, settings and data) into `out`; returns the
    /// outputs' summary.
    public static func merge(_ folders: [String], out: String, warn: (String) -> Void = { _ in }) throws -> String {
        guard let first = folders.first else { throw RephotoError.badInput("give the shard folders to merge") }
        let spaceText = try TuningRun.text("\(first)/space.yaml")
        let manifest = try TuningRun.manifest("\(first)/tune.json")
        // Keyed by trial and rung: successive halving's earlier rungs stay, as in the run's own trials.jsonl.
        var records: [[Int]: TrialRecord] = [:]
        var shards: [String: String] = [:]
        var digests: [String: String] = [:]
        for folder in folders {
            let text = try TuningRun.text("\(folder)/space.yaml")
            let other = try TuningRun.manifest("\(folder)/tune.json")
            guard text == spaceText, other.unsharded().withoutDigests() == manifest.unsharded().withoutDigests() else {
                throw RephotoError.badInput("\(folder) was tuned with another space or other settings than \(first)")
            }
            if let changed = other.changedSequence(since: manifest, images: false) {
                throw RephotoError.badInput("\(folder) was tuned on other data than \(first): \(changed) differs")
            }
            // Shards of different splits overlap and leave gaps: i/3 and j/2 are not one run.
            if let a = manifest.shard, let b = other.shard, a.split(separator: "/").last != b.split(separator: "/").last {
                throw RephotoError.badInput("\(folder) is shard \(b) but \(first) is shard \(a): merge the shards of one split")
            }
            // A whole run beside a shard, or one shard twice (the same folder given twice), overlaps too.
            guard (manifest.shard == nil) == (other.shard == nil) else {
                throw RephotoError.badInput("\(folder) is \(other.shard.map { "shard \($0)" } ?? "a whole run") but \(first) is \(manifest.shard.map { "shard \($0)" } ?? "a whole run"): merge the shards of one split")
            }
            let shard = other.shard ?? "the whole run"
            if let twice = shards[shard] {
                throw RephotoError.badInput("\(folder) and \(twice) are both \(shard == "the whole run" ? shard : "shard \(shard)"): give each shard once")
            }
            shards[shard] = folder
            for record in try Tuner.readRecords(URL(fileURLWithPath: "\(folder)/\(Tuner.trialsFile)")) { records[[record.trial, record.rung ?? 0]] = record }
            // A shard that has not finished has no tuning.json yet: its data's digests come from the shards that have.
            if let theirs = TuningResult.load(URL(fileURLWithPath: folder))?.provenance?.sequences { digests.merge(theirs) { a, _ in a } }
        }
        let space = try TuningSpace.parse(spaceText)
        let count = try space.configurationCount()
        records = records.filter { (0..<count).contains($0.key[0]) }
        // The leaderboard ranks each configuration at its last rung.
        let latest = Tuner.latest(records.values)
        if latest.count < count {
            // A partial merge is useful while shards still run, but its winner is provisional: say so.
            warn("warning: \(count - latest.count) of \(count) trials are missing (a shard not merged or not finished): the best may be among them")
        }
        let base = try PipelineConfig.decode(Data(manifest.base.utf8))
        let folder = URL(fileURLWithPath: out)
        try TuningRun.prepare(folder, space: spaceText, manifest: manifest.unsharded(), resume: false, warn: warn)
        let lines = try records.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }).map { try Tuner.trialLine(records[$0]!) }
        try lines.reduce(Data(), +).write(to: folder.appendingPathComponent(Tuner.trialsFile), options: .atomic)
        return try Tuner.writeOutputs(Array(latest.values), space: space, objective: manifest.objective, base: base, to: folder,
                                      provenance: Provenance(settings: base, sequences: digests.isEmpty ? nil : digests))
    }

    static func text(_ path: String) throws -> String {
        guard let text = String(data: try readSmallFile(path, limit: 1 << 20), encoding: .utf8) else {
            throw RephotoError.badInput("\(path): not UTF-8 text")
        }
        return text
    }

    public static func manifest(_ path: String) throws -> Manifest {
        do {
            return try JSONDecoder().decode(Manifest.self, from: readSmallFile(path, limit: 1 << 20))
        } catch let error as RephotoError {
            throw error
        } catch {
            throw RephotoError.badInput("\(path): not a tuning run's tune.json")
        }
    }

    /// A fresh folder (an earlier run's outputs removed), or on --resume the same space and settings.
    static func prepare(_ folder: URL, space: String, manifest: Manifest, resume: Bool, warn: (String) -> Void) throws {
        let fm = FileManager.default
        let spaceFile = folder.appendingPathComponent("space.yaml"), manifestFile = folder.appendingPathComponent("tune.json")
        if resume {
            guard let oldSpace = try? text(spaceFile.path), let oldManifest = try? TuningRun.manifest(manifestFile.path) else {
                throw RephotoError.badInput("--resume: \(folder.path) holds no tuning run")
            }
            guard oldSpace == space, oldManifest.withoutDigests() == manifest.withoutDigests() else {
                throw RephotoError.badInput("--resume: \(folder.path) was tuned with another space or other settings")
            }
            // Kept trials were scored against the data as it was: as `evaluate --resume`, refuse a change.
            if let changed = manifest.changedSequence(since: oldManifest, images: true) {
                throw RephotoError.badInput("--resume: \(changed) changed since the run in \(folder.path) began; start afresh without --resume")
            }
            return
        }
        // Empty, under a file, not writable, or holding what no tuning run wrote: one clear line.
        _ = try EvaluationOutput.prepare(folder.path) { (try? TuningRun.manifest($0.appendingPathComponent("tune.json").path)) != nil }
        if let earlier = try? Tuner.readRecords(folder.appendingPathComponent(Tuner.trialsFile)), !earlier.isEmpty {
            // Replaced as `evaluate` replaces an earlier run, but said: a long sweep is not lost unnoticed. Halving
            // evaluates a configuration once per rung: both counts, so the message says what is thrown away.
            let trials = Set(earlier.map(\.trial)).count
            let what = trials == earlier.count ? "\(trials) trials" : "\(trials) trials, \(earlier.count) records over the rungs"
            warn("replacing the earlier tuning run in \(folder.path) (\(what); --resume would have continued it)")
        }
        for name in ["space.yaml", "tune.json", Tuner.trialsFile, "leaderboard.csv", "best.yaml", "summary.txt", "pareto.svg", "sensitivity.svg",
                     TuningResult.fileName, "tuning.html"] {
            try? fm.removeItem(at: folder.appendingPathComponent(name))
        }
        try space.write(to: spaceFile, atomically: true, encoding: .utf8)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(JSONOutput.Versioned(manifest)).write(to: manifestFile)
    }
}
