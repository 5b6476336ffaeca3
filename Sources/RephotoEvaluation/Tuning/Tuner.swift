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
    /// Shared by every trial: images are decoded and detected once per feature setting.
    public let featureCache = FeatureCache()

    public init(space: TuningSpace, sequences: [FrameSequence], objective: TuningObjective, jobs: Int,
                maxMsPerFrame: Double? = nil, base: PipelineConfig = PipelineConfig()) {
        self.space = space
        self.sequences = sequences
        self.objective = objective
        self.jobs = jobs
        self.maxMsPerFrame = maxMsPerFrame
        self.base = base
    }

    public static let trialsFile = "trials.jsonl"

    /// The trials of this shard in order; those already in `folder/trials.jsonl` are kept, not run again.
    public func run(in folder: URL, progress: ((Int, Int, TrialRecord?) -> Void)? = nil) throws -> [TrialRecord] {
        let configurations = try space.configurations()
        let mine = configurations.indices.filter { $0 % shard.count == shard.index }
        let file = folder.appendingPathComponent(Self.trialsFile)
        var done = try Self.readTrials(file)
        let handle = try Self.appending(file)
        defer { try? handle.close() }
        var best: TrialRecord?
        for record in done.values { best = better(record, best) }
        var finished = mine.filter { done[$0] != nil }.count
        progress?(finished, mine.count, best)
        for trial in mine where done[trial] == nil {
            let values = configurations[trial]
            let config = try space.config(for: values, base: base)
            var evaluator = try Evaluator(config: config, jobs: jobs)
            evaluator.thumbnails = false
            evaluator.featureCache = featureCache
            let rows = evaluator.run(sequences).rows
            let metrics = TrialMetrics(rows: rows)
            let record = TrialRecord(trial: trial, parameters: values.map { [$0.path, $0.value.description] }, metrics: metrics,
                                     objective: objective.value(of: metrics),
                                     tooSlow: maxMsPerFrame.map { (metrics.msPerFrame ?? .infinity) > $0 } ?? false)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            handle.write(try encoder.encode(record) + Data("\n".utf8))
            done[trial] = record
            best = better(record, best)
            finished += 1
            progress?(finished, mine.count, best)
        }
        return mine.compactMap { done[$0] }
    }

    func better(_ a: TrialRecord, _ b: TrialRecord?) -> TrialRecord {
        guard let b else { return a }
        return Self.ranked([a, b], objective) .first!
    }

    /// Sorted best first: within the time limit before over it, defined objectives before undefined, then by
    /// the objective, then by trial index (ties stay in trial order, so shards merged rank as one run).
    public static func ranked(_ records: [TrialRecord], _ objective: TuningObjective) -> [TrialRecord] {
        records.sorted { a, b in
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

    /// Finished trials of a trials.jsonl; a torn last line (a kill mid-write) is dropped.
    public static func readTrials(_ file: URL) throws -> [Int: TrialRecord] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [:] }
        var out: [Int: TrialRecord] = [:]
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let record = try? JSONDecoder().decode(TrialRecord.self, from: Data(line)) else { continue }
            out[record.trial] = record
        }
        return out
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

    /// leaderboard.csv, best.yaml and summary.txt of a set of trials; returns the summary text.
    @discardableResult
    public static func writeOutputs(_ records: [TrialRecord], space: TuningSpace, objective: TuningObjective, base: PipelineConfig,
                                    to folder: URL) throws -> String {
        let ranked = ranked(records, objective)
        let paths = space.dimensions.map(\.path)
        func number(_ v: Double?) -> String { v.map { String($0) } ?? "" }
        var csv = (["rank", "trial", "objective", "maa5", "maa10", "rotation_maa10", "median_rotation_deg", "median_score", "frames",
                    "failures", "ms_per_frame", "too_slow"] + paths).joined(separator: ",") + "\n"
        for (rank, r) in ranked.enumerated() {
            let values = paths.map { path in r.parameters.first { $0.first == path }?.last ?? "" }
            let m = r.metrics
            csv += ([String(rank + 1), String(r.trial), number(r.objective), number(m.maa5), number(m.maa10), number(m.rotationMaa10),
                     number(m.medianRotationErrorDegrees), number(m.medianScore), String(m.frames), String(m.failures),
                     number(m.msPerFrame), String(r.tooSlow)] + values).joined(separator: ",") + "\n"
        }
        try csv.write(to: folder.appendingPathComponent("leaderboard.csv"), atomically: true, encoding: .utf8)
        guard let best = ranked.first else { return "no trial finished" }
        let values = try best.parameters.map { pair -> (path: String, value: ParameterValue) in
            guard let parameter = ParameterRegistry.parameter(pair[0]) else { throw RephotoError.badInput("unknown parameter \(pair[0])") }
            return (pair[0], try parameter.parse(pair[1]))
        }
        let config = try space.config(for: values, base: base)
        try ParameterRegistry.yaml(of: config).write(to: folder.appendingPathComponent("best.yaml"), atomically: true, encoding: .utf8)
        let summary = """
            \(records.count) trials; best by \(objective.rawValue): trial \(best.trial), \(number(best.objective)) \
            (\(best.metrics.failures) of \(best.metrics.frames) frames failed, \(String(format: "%.0f", best.metrics.msPerFrame ?? 0)) ms per frame)
            \(best.parameters.map { "  \($0[0]) = \($0[1])" }.joined(separator: "\n"))
            leaderboard.csv, best.yaml (rephoto pose/evaluate/serve --config) in \(folder.path)

            """
        try summary.write(to: folder.appendingPathComponent("summary.txt"), atomically: true, encoding: .utf8)
        return summary
    }
}
