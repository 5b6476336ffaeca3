import RephotoKit
import RephotoData
import Foundation

/// An evaluation's result folder: frames.csv, summary.json, report.html and thumbnails/<sequence>/<label>.jpg.
/// Summaries and reports are computed from the rows alone, so shards merge into exactly the unsharded result.
public enum EvaluationOutput {
    /// Creates `path` and checks it takes files, before any work, so a run never ends in "cannot write".
    /// `isEarlierRun` tells a folder an earlier run wrote, from its files' content: a name alone is no proof (probe:
    /// a user's own summary.json let the folder through, and was overwritten).
    public static func prepare(_ path: String, isEarlierRun: (URL) -> Bool = EvaluationOutput.isEarlierEvaluation) throws -> URL {
        guard !path.isEmpty else { throw RephotoError.badInput("--out is empty: name a folder for the results") }
        let folder = URL(fileURLWithPath: path)
        // Results replace their own earlier files and folders (thumbnails/ whole): a folder holding anything else
        // is refused, not emptied (probe: a user's thumbnails/sub/mine.jpg was deleted, another sequence's
        // frames.csv overwritten, exit 0). Hidden files (a Finder's .DS_Store) do not count.
        if let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            if names.contains("sequence.json") {
                throw RephotoError.badInput("\(path) is a sequence folder (it has sequence.json): its frames.csv would be overwritten; name a folder for the results")
            }
            let others = names.filter { !$0.hasPrefix(".") }.sorted()
            if !others.isEmpty, !isEarlierRun(folder) {
                throw RephotoError.badInput("\(path) holds files that no earlier run wrote (\(others.prefix(3).joined(separator: ", "))\(others.count > 3 ? ", ..." : "")), and they could be overwritten or deleted: name a new or empty folder")
            }
        }
        // Foundation's errors here say only "could not be completed": name the cause.
        var ancestor = folder
        var isDirectory: ObjCBool = false
        while !FileManager.default.fileExists(atPath: ancestor.path, isDirectory: &isDirectory), ancestor.path != "/" {
            ancestor.deleteLastPathComponent()
        }
        if !isDirectory.boolValue {
            throw RephotoError.badInput("\(path): cannot write results there (\(ancestor.path) is a file, not a folder)")
        }
        let probe = folder.appendingPathComponent(".rephoto-write-check-\(getpid())")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data().write(to: probe)
            try FileManager.default.removeItem(at: probe)
        } catch {
            throw RephotoError.badInput("\(path): cannot write results there (\(fileErrorReason(error)))")
        }
        return folder
    }

    /// Whether `folder` holds an evaluation's run.json or summary.json (an `evaluate merge` writes no run.json).
    public static func isEarlierEvaluation(_ folder: URL) -> Bool {
        (try? EvaluationRunState.load(folder)) != nil || (try? loadSummary(folder)) != nil
    }

    /// Writes frames.csv (sorted), thumbnails, report.html and, last, summary.json; `run` marks the summary
    /// complete or partial and gives its provenance, unless `provenance` names one.
    public static func write(_ outcome: EvaluationOutcome, to folder: URL, run: EvaluationRunState? = nil,
                             provenance: Provenance? = nil) throws -> EvaluationSummary {
        let rows = outcome.rows.sorted { ($0.sequence, $0.index) < ($1.sequence, $1.index) }
        var summary = EvaluationSummary.compute(rows: rows, broken: outcome.broken)
        if let run {
            summary.complete = run.state == .complete
            summary.framesPlanned = run.framesPlanned
        }
        summary.provenance = provenance ?? run?.provenance
        let fm = FileManager.default
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        try EvaluationRow.csv(rows).write(to: folder.appendingPathComponent("frames.csv"), atomically: true, encoding: .utf8)
        // An earlier run's thumbnails would otherwise stay beside this run's and pass for its own.
        let thumbnails = folder.appendingPathComponent("thumbnails")
        if fm.fileExists(atPath: thumbnails.path) { try fm.removeItem(at: thumbnails) }
        for (sequence, shots) in outcome.thumbnails {
            let dir = thumbnails.appendingPathComponent(sequence)
            try fm.createDirectory(at: dir, withIntermediateDirectories: true)
            for (label, jpeg) in shots { try jpeg.write(to: dir.appendingPathComponent("\(label).jpg")) }
        }
        try EvaluationReport.html(summary: summary, rows: rows, thumbnails: outcome.thumbnails)
            .write(to: folder.appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        // Last, and whole or not at all: a summary that says complete vouches for everything above (a full disk
        // stopped the report after the summary was written, and the folder claimed a finished run that run.json
        // still called in progress).
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (encoder.encode(JSONOutput.Versioned(summary)) + Data("\n".utf8)).write(to: folder.appendingPathComponent("summary.json"), options: .atomic)
        return summary
    }

    /// Reads a result folder back (rows, broken sequences, thumbnails).
    public static func load(_ folder: URL) throws -> EvaluationOutcome {
        let csvPath = folder.appendingPathComponent("frames.csv").path
        guard let text = try? String(contentsOfFile: csvPath, encoding: .utf8) else { throw RephotoError.badInput("\(csvPath): cannot read") }
        let rows = try EvaluationRow.parse(text, path: csvPath)
        let summary = try loadSummary(folder)
        var thumbnails: [String: [String: Data]] = [:]
        let thumbs = folder.appendingPathComponent("thumbnails")
        for sequence in (try? FileManager.default.contentsOfDirectory(atPath: thumbs.path)) ?? [] {
            for file in (try? FileManager.default.contentsOfDirectory(atPath: thumbs.appendingPathComponent(sequence).path)) ?? [] where file.hasSuffix(".jpg") {
                thumbnails[sequence, default: [:]][String(file.dropLast(4))] = try Data(contentsOf: thumbs.appendingPathComponent(sequence).appendingPathComponent(file))
            }
        }
        return EvaluationOutcome(rows: rows, broken: summary.brokenSequences, thumbnails: thumbnails)
    }

    public static func loadSummary(_ folder: URL) throws -> EvaluationSummary {
        let path = folder.appendingPathComponent("summary.json")
        do {
            // Bounded: a run's folder may hold anything under this name (a multi-gigabyte file was read whole).
            return try JSONDecoder().decode(EvaluationSummary.self, from: readSmallFile(path.path, limit: 64 << 20))
        } catch let error as RephotoError {
            throw error
        } catch let error as DecodingError {
            throw RephotoError.badInput("\(path.path): \(ConfigFile.describe(error))")
        } catch {
            throw RephotoError.badInput("\(path.path): cannot read (\(fileErrorReason(error)))")
        }
    }

    /// Combines shard folders; a sequence evaluated by two shards is an error (shards must be disjoint).
    /// The merge's provenance takes the shards' settings and the union of their sequences' digests.
    public static func merge(_ folders: [URL], commandLine: [String] = CommandLine.arguments) throws -> (outcome: EvaluationOutcome, provenance: Provenance) {
        var merged = EvaluationOutcome()
        var digests: [String: String] = [:]
        var owner: [String: String] = [:]
        var settings: (PipelineConfig, String)?
        for folder in folders {
            let run = try EvaluationRunState.load(folder)
            if let run, run.state != .complete {
                throw RephotoError.badInput("\(folder.path): that run is \(run.state.rawValue) (\(run.framesDone) of \(run.framesPlanned) frames); finish it with --resume before merging")
            }
            // One summary of runs made with different settings (AKAZE beside ORB) describes neither.
            if let run {
                if let (first, path) = settings, first != run.settings {
                    throw RephotoError.badInput("\(folder.path) was evaluated with other settings than \(path) (their run.json differ): merge the shards of one run")
                }
                settings = settings ?? (run.settings, folder.path)
            }
            let part = try load(folder)
            if let theirs = try loadSummary(folder).provenance?.sequences { digests.merge(theirs) { a, _ in a } }
            for sequence in Set(part.rows.map(\.sequence)) {
                if let other = owner[sequence] {
                    throw RephotoError.badInput("sequence '\(sequence)' appears in both \(other) and \(folder.path): shards overlap")
                }
                owner[sequence] = folder.path
            }
            merged.rows += part.rows
            merged.broken += part.broken
            merged.thumbnails.merge(part.thumbnails) { a, _ in a }
        }
        return (merged, Provenance(settings: settings?.0 ?? PipelineConfig(), sequences: digests.isEmpty ? nil : digests, commandLine: commandLine))
    }
}

/// Two evaluations side by side: for each figure, both values, the difference and which is better, and which
/// settings differ. Only runs over the same data compare (`check`): other sequences, other frame counts or other
/// truth make every difference meaningless.
public struct EvaluationComparison: Encodable, Sendable {
    public struct Line: Encodable, Sendable, Equatable {
        public var scope: String
        public var metric: String
        public var a: Double?
        public var b: Double?
        /// b − a.
        public var difference: Double?
        /// The smallest |b − a| that counts as a difference (`thresholds`): below it, "same".
        public var threshold: Double?
        /// "a", "b" or "same" (|b − a| below `threshold`); nil when a value is missing.
        public var better: String?
    }

    /// A setting that differs between the two runs, each side's value as `--set` takes it ("default" for the default).
    public struct SettingDifference: Encodable, Sendable, Equatable {
        public var path: String
        public var a: String
        public var b: String
    }

    /// The folders compared, as given.
    public var folderA: String
    public var folderB: String
    public var lines: [Line]
    /// nil when either summary predates provenance: the settings are then unknown.
    public var settingsDifferences: [SettingDifference]?

    /// Each figure's smallest difference that counts, and whether higher is better. mAA and rates: 0.01, the step
    /// of one frame in a hundred and about the run-to-run spread of RANSAC's draws on the bundled data; angles
    /// 0.1°; corners 0.5 px; scores 1 point; time 10 % of A's (timings vary that much between runs).
    static let metrics: [(name: String, higherIsBetter: Bool, threshold: @Sendable (Double) -> Double, value: @Sendable (EvaluationStatistics) -> Double?)] = [
        ("successRate", true, { _ in 0.01 }, { $0.successRate }), ("maa5", true, { _ in 0.01 }, { $0.maa5 }),
        ("maa10", true, { _ in 0.01 }, { $0.maa10 }),
        ("medianRotationErrorDegrees", false, { _ in 0.1 }, { $0.medianRotationErrorDegrees }),
        ("p90RotationErrorDegrees", false, { _ in 0.1 }, { $0.p90RotationErrorDegrees }),
        ("medianTranslationErrorDegrees", false, { _ in 0.1 }, { $0.medianTranslationErrorDegrees }),
        ("medianCornerErrorPixels", false, { _ in 0.5 }, { $0.medianCornerErrorPixels }), ("medianScore", true, { _ in 1 }, { $0.medianScore }),
        ("medianSensorVisionAngleDegrees", false, { _ in 0.1 }, { $0.medianSensorVisionAngleDegrees }),
        ("medianTotalMs", false, { abs($0) * 0.1 }, { $0.medianMilliseconds(.total) }),
    ]

    /// The rule `better` follows, for people.
    public static let rule = "better: the side whose value is better by at least the threshold (mAA and success rate 0.01, angles 0.1°, corners 0.5 px, score 1, time 10 % of A); smaller differences are \"same\""

    /// Refuses two runs over different data: other sequences, other frame counts, or (where both summaries carry
    /// the digests) another sequence.json or frames.csv under the same name.
    public static func check(_ a: EvaluationSummary, _ b: EvaluationSummary, folderA: String, folderB: String) throws {
        var differences: [String] = []
        let onlyA = Set(a.sequences.keys).subtracting(b.sequences.keys).sorted(), onlyB = Set(b.sequences.keys).subtracting(a.sequences.keys).sorted()
        if !onlyA.isEmpty { differences.append("only A has \(onlyA.joined(separator: ", "))") }
        if !onlyB.isEmpty { differences.append("only B has \(onlyB.joined(separator: ", "))") }
        for name in Set(a.sequences.keys).intersection(b.sequences.keys).sorted() {
            let fa = a.sequences[name]!.frames, fb = b.sequences[name]!.frames
            if fa != fb { differences.append("\(name) has \(fa) frames in A, \(fb) in B") }
            if let da = a.provenance?.sequences?[name], let db = b.provenance?.sequences?[name], da != db {
                differences.append("\(name)'s sequence.json or frames.csv differ")
            }
        }
        guard differences.isEmpty else {
            throw RephotoError.badInput("A (\(folderA)) and B (\(folderB)) evaluated different data: \(differences.joined(separator: "; ")); compare runs over the same sequences")
        }
    }

    public static func compare(_ a: EvaluationSummary, _ b: EvaluationSummary, folderA: String = "A", folderB: String = "B") -> EvaluationComparison {
        var lines: [Line] = []
        let scopes = [("overall", a.overall, b.overall)]
            + Set(a.sequences.keys).intersection(b.sequences.keys).sorted().map { ($0, a.sequences[$0]!, b.sequences[$0]!) }
        for (scope, sa, sb) in scopes {
            for metric in metrics {
                let va = metric.value(sa), vb = metric.value(sb)
                var line = Line(scope: scope, metric: metric.name, a: va, b: vb)
                if let va, let vb {
                    let threshold = metric.threshold(va)
                    line.difference = vb - va
                    line.threshold = threshold
                    line.better = abs(vb - va) < threshold || vb == va ? "same" : ((vb > va) == metric.higherIsBetter ? "b" : "a")
                }
                lines.append(line)
            }
        }
        var settings: [SettingDifference]?
        if let pa = a.provenance, let pb = b.provenance {
            func values(_ p: Provenance) -> [String: String] {
                Dictionary(p.settingsChanged.compactMap { item in item.firstIndex(of: "=").map { (String(item[..<$0]), String(item[item.index(after: $0)...])) } },
                           uniquingKeysWith: { a, _ in a })
            }
            let va = values(pa), vb = values(pb)
            let order = ParameterRegistry.parameters.map(\.path)
            settings = Set(va.keys).union(vb.keys).filter { va[$0] != vb[$0] }
                .sorted { (order.firstIndex(of: $0) ?? .max, $0) < (order.firstIndex(of: $1) ?? .max, $1) }
                .map { SettingDifference(path: $0, a: va[$0] ?? "default", b: vb[$0] ?? "default") }
        }
        return EvaluationComparison(folderA: folderA, folderB: folderB, lines: lines, settingsDifferences: settings)
    }
}
