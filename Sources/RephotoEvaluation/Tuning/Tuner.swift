import Foundation
import RephotoData
import RephotoKit

/// One evaluated configuration, as a line of trials.jsonl.
public struct TrialRecord: Codable, Equatable, Sendable {
    /// Index in the space's trial order (stable across shards and resumes).
    public var trial: Int
    /// The varied parameters of this trial, path and value as text, in the space's order.
    public var parameters: [[String]]
    public var metrics: TrialMetrics
    /// The objective's value (nil when the metric is undefined, e.g. no ground truth).
    public var objective: Double?
    /// Over --max-ms-per-frame: ranked after every configuration within it.
    public var tooSlow: Bool
    /// Successive halving: the rung (0 first) and the frames per sequence it used; absent otherwise.
    public var rung: Int?
    public var framesPerSequence: Int?
}

/// `rephoto tune`: every configuration of a space evaluated with the evaluator's own code over the same
/// sequences; trials appended to trials.jsonl as they finish, so a killed run resumes where it stopped.
public struct Tuner: Sendable {
    public var space: TuningSpace
    public var sequences: [FrameSequence]
    public var objective: TuningObjective
    public var jobs: Int
    public var maxMsPerFrame: Double?
    /// Only trials with index % count == index (0-based): a deterministic slice for job arrays.
    public var shard: (index: Int, count: Int) = (0, 1)
    public var base: PipelineConfig
    /// Shared by every trial: images are decoded and detected once per feature setting (and, with a disk
    /// layer, once across runs).
    public let featureCache: FeatureCache
    /// Shared by every trial: each neighbour, homography and essential search runs once per setting it reads.
    public let stageCache = StageCache()
    /// `--timeout`: no trial starts after this instant (the one running finishes); each invocation runs at least
    /// one trial, so a run always makes progress.
    public var deadline: ContinuousClock.Instant?

    func pastDeadline() -> Bool { deadline.map { ContinuousClock.now >= $0 } ?? false }

    public init(space: TuningSpace, sequences: [FrameSequence], objective: TuningObjective, jobs: Int,
                maxMsPerFrame: Double? = nil, base: PipelineConfig = PipelineConfig(), cache: FeatureCacheDirectory? = nil) {
        featureCache = FeatureCache(disk: cache)
        self.space = space
        self.sequences = sequences
        self.objective = objective
        self.jobs = jobs
        self.maxMsPerFrame = maxMsPerFrame
        self.base = base
    }

    public static let trialsFile = "trials.jsonl"

    /// A deterministic split by sequence name: ordered by FNV-1a of the name, the first round(fraction x count)
    /// sequences (at least one, never all) are held out. The same set always splits the same way.
    public static func split(_ sequences: [FrameSequence], holdout fraction: Double) -> (tuning: [FrameSequence], heldOut: [FrameSequence]) {
        func hash(_ name: String) -> UInt64 {
            name.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        }
        guard sequences.count >= 2 else { return (sequences, []) }
        let count = min(sequences.count - 1, max(1, Int((fraction * Double(sequences.count)).rounded())))
        let names = Set(sequences.sorted { (hash($0.manifest.name), $0.manifest.name) < (hash($1.manifest.name), $1.manifest.name) }
                                 .prefix(count).map(\.manifest.name))
        return (sequences.filter { !names.contains($0.manifest.name) }, sequences.filter { names.contains($0.manifest.name) })
    }

    /// Everything a run would refuse, checked before --out is touched (an earlier run there is replaced only
    /// by one that can go ahead): a sharded halving, and every configuration this shard evaluates, with the
    /// cross-parameter rules between varied, fixed and base values. Trials are deterministic given the space
    /// and seed, so none is refused halfway (a run that stopped at the first invalid trial, and a resume that
    /// stopped there again, had no leaderboard).
    public func validate() throws {
        if space.strategy == .halving && shard.count > 1 {
            throw RephotoError.badInput("successive halving needs every result of a rung: it cannot be sharded")
        }
        let configurations = try space.configurations()
        // Each value was checked alone when the space was read, and the fixed and base values are the same in
        // every trial: each combination of the values that rules read is validated once (a million-trial grid
        // took over a minute validating them all).
        let ruled = space.dimensions.indices.filter { ParameterRegistry.crossCheckedPaths.contains(space.dimensions[$0].path) }
        var checked = Set<[String]>()
        for trial in stride(from: shard.index, to: configurations.count, by: shard.count) {
            let values = configurations[trial]
            guard checked.insert(ruled.map { "\(values[$0].value)" }).inserted else { continue }
            do {
                _ = try space.config(for: values, base: base)
            } catch let error as RephotoError {
                let named = values.map { "\($0.path) = \($0.value)" }.joined(separator: ", ")
                throw RephotoError.badInput("trial \(trial) (\(named)) is not a valid configuration: \(error.message)")
            }
        }
    }

    /// The trials of this shard in order; those already in `folder/trials.jsonl` are kept, not run again.
    public func run(in folder: URL, progress: ((Int, Int, TrialRecord?) -> Void)? = nil) throws -> [TrialRecord] {
        if space.strategy == .halving { return try runHalving(in: folder, progress: progress) }
        let configurations = try space.configurations()
        let mine = Array(stride(from: shard.index, to: configurations.count, by: shard.count))
        let file = folder.appendingPathComponent(Self.trialsFile)
        var done = try Self.readTrials(file)
        let handle = try Self.appending(file)
        defer { try? handle.close() }
        var best: TrialRecord?
        for record in done.values { best = better(record, best) }
        var finished = mine.filter { done[$0] != nil }.count
        progress?(finished, mine.count, best)
        var ran = 0
        for trial in mine where done[trial] == nil {
            if ran > 0 && pastDeadline() { break }
            ran += 1
            let record = try evaluate(trial, configurations[trial], on: sequences)
            try Self.append(record, to: handle)
            done[trial] = record
            best = better(record, best)
            finished += 1
            progress?(finished, mine.count, best)
        }
        return mine.compactMap { done[$0] }
    }

    /// One trial: the configuration through the evaluator (sharing the feature cache) over `sequences`.
    func evaluate(_ trial: Int, _ values: [(path: String, value: ParameterValue)], on sequences: [FrameSequence],
                  rung: Int? = nil, frames: Int? = nil) throws -> TrialRecord {
        let config = try space.config(for: values, base: base)
        var evaluator = try Evaluator(config: config, jobs: jobs)
        evaluator.thumbnails = false
        evaluator.featureCache = featureCache
        evaluator.stageCache = stageCache
        let metrics = TrialMetrics(rows: evaluator.run(sequences).rows)
        return TrialRecord(trial: trial, parameters: values.map { [$0.path, $0.value.description] }, metrics: metrics,
                           objective: objective.value(of: metrics),
                           tooSlow: maxMsPerFrame.map { (metrics.msPerFrame ?? .infinity) > $0 } ?? false, rung: rung, framesPerSequence: frames)
    }

    static func append(_ record: TrialRecord, to handle: FileHandle) throws {
        handle.write(try trialLine(record))
    }

    /// One record of trials.jsonl, its line ending included: the one encoding every writer of the file uses.
    public static func trialLine(_ record: TrialRecord) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(JSONOutput.Versioned(record)) + Data("\n".utf8)
    }

    /// Successive halving: every configuration on the first `minFrames` frames of each sequence, then the best
    /// 1/eta on eta times as many, until every frame is used. Each rung's records stay in trials.jsonl, so a
    /// resumed run recomputes the same survivors and repeats no evaluation.
    func runHalving(in folder: URL, progress: ((Int, Int, TrialRecord?) -> Void)?) throws -> [TrialRecord] {
        guard shard.count == 1 else { throw RephotoError.badInput("successive halving needs every result of a rung: it cannot be sharded") }
        let configurations = try space.configurations()
        let file = folder.appendingPathComponent(Self.trialsFile)
        var done: [String: TrialRecord] = [:]
        for r in try Self.readRecords(file) { done["\(r.trial)/\(r.rung ?? 0)"] = r }
        let handle = try Self.appending(file)
        defer { try? handle.close() }
        let most = sequences.map { $0.currentFrames.count }.max() ?? 0
        // The whole plan first, for the progress line.
        var plan: [(alive: Int, frames: Int)] = []
        var count = configurations.count, frames = min(space.minFrames, most)
        while true {
            plan.append((count, frames))
            if frames >= most { break }
            count = max(1, Int((Double(count) / Double(space.eta)).rounded(.up)))
            frames = min(most, frames * space.eta)
        }
        let total = plan.map(\.alive).reduce(0, +)
        var finished = 0, best: TrialRecord?, ran = 0
        var alive = Array(configurations.indices)
        var latest: [Int: TrialRecord] = [:]
        for (rung, step) in plan.enumerated() {
            let subset = sequences.map { $0.limited(toFrames: step.frames) }
            var results: [TrialRecord] = []
            for trial in alive {
                let record: TrialRecord
                if let earlier = done["\(trial)/\(rung)"] {
                    record = earlier
                } else if ran > 0 && pastDeadline() {
                    return Self.ranked(Array(latest.values), objective)
                } else {
                    ran += 1
                    record = try evaluate(trial, configurations[trial], on: subset, rung: rung, frames: step.frames)
                    try Self.append(record, to: handle)
                }
                results.append(record)
                latest[trial] = record
                finished += 1
                if rung == plan.count - 1 { best = better(record, best) }
                progress?(finished, total, best)
            }
            if rung + 1 < plan.count { alive = Self.ranked(results, objective).prefix(plan[rung + 1].alive).map(\.trial) }
        }
        return Self.ranked(Array(latest.values), objective)
    }

    func better(_ a: TrialRecord, _ b: TrialRecord?) -> TrialRecord {
        guard let b else { return a }
        return Self.ranked([a, b], objective) .first!
    }

    /// How equal objectives are ranked, for people (summary.txt, tuning.json, docs/tuning.md).
    public static let tieRule = "equal objectives rank by trial id, lower first (the earlier in the space's order): a resumed or sharded run names the same winner; time is not used, since it varies from run to run"

    /// Sorted best first: within the time limit before over it, defined objectives before undefined, then by
    /// the objective, then by trial index (`tieRule`: ties stay in trial order, so shards merged rank as one run).
    public static func ranked(_ records: [TrialRecord], _ objective: TuningObjective) -> [TrialRecord] {
        records.sorted { a, b in
            // Successive halving: a configuration that reached a later rung was judged on more frames.
            if (a.rung ?? 0) != (b.rung ?? 0) { return (a.rung ?? 0) > (b.rung ?? 0) }
            if a.tooSlow != b.tooSlow { return !a.tooSlow }
            switch (a.objective, b.objective) {
            case (nil, nil): return a.trial < b.trial
            case (nil, _): return false
            case (_, nil): return true
            case let (x?, y?):
                if x != y { return objective.higherIsBetter ? x > y : x < y }
                return a.trial < b.trial
            }
        }
    }

    /// Finished trials of a trials.jsonl, each at its last rung; a torn last line (a kill mid-write) is dropped.
    public static func readTrials(_ file: URL) throws -> [Int: TrialRecord] {
        latest(try readRecords(file))
    }

    /// Each trial's record at its last rung (what a leaderboard ranks).
    public static func latest(_ records: some Sequence<TrialRecord>) -> [Int: TrialRecord] {
        var out: [Int: TrialRecord] = [:]
        for record in records where (out[record.trial]?.rung ?? -1) <= (record.rung ?? 0) { out[record.trial] = record }
        return out
    }

    /// Every record of a trials.jsonl, one per trial and rung (a later line wins), ordered by trial then rung:
    /// successive halving keeps each rung's record, and a merge or a count must not lose them.
    public static func readRecords(_ file: URL) throws -> [TrialRecord] {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path) else { return [] }
        // A FIFO or device in its place would block the read (or never end): only a regular file is a record.
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw RephotoError.badInput("\(file.path): not a regular file")
        }
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        var out: [[Int]: TrialRecord] = [:]
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where !line.isEmpty {
            do {
                let record = try JSONDecoder().decode(TrialRecord.self, from: Data(line))
                out[[record.trial, record.rung ?? 0]] = record
            } catch {
                // A kill mid-write tears only the last line, which has no newline yet; any other line that is no
                // record is damage, and was kept silently in the resumed file and merged.
                if index == lines.count - 1 { continue }
                throw RephotoError.badInput("\(file.path) line \(index + 1) is not a trial record (\(ConfigFile.describe(error))): the file is damaged; remove the line, or start the run afresh")
            }
        }
        return out.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { out[$0]! }
    }

    private static func appending(_ file: URL) throws -> FileHandle {
        if !FileManager.default.fileExists(atPath: file.path) {
            guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
                throw RephotoError.badInput("cannot create \(file.path)")
            }
        } else if let data = FileManager.default.contents(atPath: file.path), let last = data.last, last != UInt8(ascii: "\n") {
            // A torn last line: cut it so the next record starts on a line of its own.
            let keep = data.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
            try data.prefix(keep).write(to: file)
        }
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        return handle
    }

    /// leaderboard.csv, tuning.json, tuning.html, the two SVGs, best.yaml and summary.txt of a set of trials;
    /// returns the summary text.
    @discardableResult
    public static func writeOutputs(_ records: [TrialRecord], space: TuningSpace, objective: TuningObjective, base: PipelineConfig,
                                    to folder: URL, provenance: Provenance? = nil, stoppedAtTimeout: Bool = false) throws -> String {
        let ranked = ranked(records, objective)
        let paths = space.dimensions.map(\.path)
        func number(_ v: Double?) -> String { v.map { String($0) } ?? "" }
        var rows = [["rank", "trial", "objective", "maa5", "maa10", "rotation_maa10", "median_rotation_deg_failed_at_180",
                     "median_score_failed_at_0", "frames", "failures", "pose_refusals", "undetermined_translations", "ms_per_frame", "too_slow", "rung", "frames_per_sequence"] + paths]
        for (rank, r) in ranked.enumerated() {
            let values = paths.map { path in r.parameters.first { $0.first == path }?.last ?? "" }
            let m = r.metrics
            rows.append([String(rank + 1), String(r.trial), number(r.objective), number(m.maa5), number(m.maa10), number(m.rotationMaa10),
                         number(m.medianRotationErrorFailedAt180Degrees), number(m.medianScoreFailedAt0), String(m.frames), String(m.failures),
                         TrialMetrics.counts(m.poseRefusals), TrialMetrics.counts(m.undeterminedTranslations),
                         number(m.msPerFrame), String(r.tooSlow), r.rung.map(String.init) ?? "", r.framesPerSequence.map(String.init) ?? ""]
                        + values)
        }
        // Quoted as frames.csv is (RFC 4180): a matrix value holds commas, and split its row into extra fields.
        let csv = try CSVText.make(rows)
        try csv.write(to: folder.appendingPathComponent("leaderboard.csv"), atomically: true, encoding: .utf8)
        try TuningPlots.pareto(records, objective: objective).write(to: folder.appendingPathComponent("pareto.svg"), atomically: true, encoding: .utf8)
        try TuningPlots.sensitivity(records, dimensions: space.dimensions, objective: objective)
            .write(to: folder.appendingPathComponent("sensitivity.svg"), atomically: true, encoding: .utf8)
        let result = TuningResult.compute(records, space: space, objective: objective, provenance: provenance, stoppedAtTimeout: stoppedAtTimeout)
        try (JSONOutput.encoder(pretty: true).encode(JSONOutput.Versioned(result)) + Data("\n".utf8))
            .write(to: folder.appendingPathComponent(TuningResult.fileName), options: .atomic)
        try TuningReport.html(result, records: records, space: space).write(to: folder.appendingPathComponent("tuning.html"), atomically: true, encoding: .utf8)
        guard let best = ranked.first else { return "no trial finished\n" }
        let values = try best.parameters.map { pair -> (path: String, value: ParameterValue) in
            guard let parameter = ParameterRegistry.parameter(pair[0]) else { throw RephotoError.badInput("unknown parameter \(pair[0])") }
            return (pair[0], try parameter.parse(pair[1]))
        }
        let config = try space.config(for: values, base: base)
        try ParameterRegistry.yaml(of: config).write(to: folder.appendingPathComponent("best.yaml"), atomically: true, encoding: .utf8)
        let summary = """
            \(records.count) trials; best by \(objective.rawValue): trial \(best.trial), \(objective.rounded(best.objective)) \
            (\(best.metrics.failures) of \(best.metrics.frames) frames failed, \(String(format: "%.0f", best.metrics.msPerFrame ?? 0)) ms per frame\
            \(best.metrics.poseRefusals?.isEmpty == false ? "; poses refused: " + TrialMetrics.counts(best.metrics.poseRefusals) : ""))
            \(best.parameters.map { "  \($0[0]) = \($0[1])" }.joined(separator: "\n"))
            \(result.notes.map { $0 + "\n" }.joined())leaderboard.csv, tuning.json, tuning.html, best.yaml (rephoto pose/evaluate/serve --config) in \(folder.path.visible)

            """
        try summary.write(to: folder.appendingPathComponent("summary.txt"), atomically: true, encoding: .utf8)
        return summary
    }
}
