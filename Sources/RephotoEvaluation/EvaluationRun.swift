import Crypto
import RephotoKit
import Foundation

/// `run.json` of a result folder: whether the run that owns the folder is in progress, complete or
/// interrupted, and what it was asked to do, so a reader never takes an unfinished or earlier run for the
/// current one and `--resume` can continue it. Documented in docs/evaluation.md.
public struct EvaluationRunState: Codable, Equatable, Sendable {
    public enum State: String, Codable, Sendable {
        case inProgress = "in-progress"
        case complete
        case interrupted
    }

    public var state: State
    /// ISO 8601, UTC.
    public var started: String
    public var updated: String
    /// Every parameter of the run: `--resume` refuses other settings.
    public var settings: PipelineConfig
    /// The sequence folders (resolved paths, sorted) the run evaluates.
    public var sequences: [String]
    public var framesPlanned: Int
    public var framesDone: Int
    /// SHA-256 of each sequence's sequence.json and frames.csv, in `sequences` order: `--resume` refuses a
    /// sequence whose truth changed since (its kept rows were scored against the old one). Absent in run
    /// states written before it was added.
    public var sequenceDigests: [String]?
    /// SHA-256 of the relative path, size and modification time of every other file in each sequence folder,
    /// in `sequences` order: `--resume` refuses a sequence whose images were replaced since (reading every
    /// image to hash it would cost a run's worth of decoding). Absent in run states written before it was added.
    public var imageDigests: [String]?
    /// What made the run (the latest invocation, a resume included). Absent in run states written before it was added.
    public var provenance: Provenance?

    public static let fileName = "run.json"

    /// The digest `sequenceDigests` holds for the sequence folder at `path` (its images are not read: the
    /// truth and the frame list are what a kept row depends on besides them). `tune` keeps them too.
    public static func digest(ofSequenceAt path: String) -> String {
        var hash = SHA256()
        for name in ["sequence.json", "frames.csv"] {
            hash.update(data: Data(name.utf8))
            hash.update(data: (try? Data(contentsOf: URL(fileURLWithPath: path).appendingPathComponent(name))) ?? Data())
        }
        return hash.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The digest `imageDigests` holds for the sequence folder at `path`: every file but sequence.json and
    /// frames.csv, by relative path, size and modification time, in path order; files under `results` (a
    /// result folder inside the sequence, which the run itself rewrites) are left out.
    public static func imageDigest(ofSequenceAt path: String, results: String) -> String {
        let root = URL(fileURLWithPath: path)
        let skip = URL(fileURLWithPath: results).standardizedFileURL.resolvingSymlinksInPath().path + "/"
        var stamps: [String] = []
        let keys: [URLResourceKey] = [.isRegularFileKey, .fileSizeKey, .contentModificationDateKey]
        if let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys) {
            for case let file as URL in files {
                guard let values = try? file.resourceValues(forKeys: Set(keys)), values.isRegularFile == true,
                      !file.standardizedFileURL.resolvingSymlinksInPath().path.hasPrefix(skip) else { continue }
                let relative = String(file.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count))
                guard relative != "/sequence.json" && relative != "/frames.csv" else { continue }
                let time = values.contentModificationDate?.timeIntervalSince1970 ?? 0
                stamps.append("\(relative)\u{0}\(values.fileSize ?? -1)\u{0}\(time)")
            }
        }
        var hash = SHA256()
        for stamp in stamps.sorted() { hash.update(data: Data((stamp + "\n").utf8)) }
        return hash.finalize().map { String(format: "%02x", $0) }.joined()
    }

    public static func load(_ folder: URL) throws -> EvaluationRunState? {
        let path = folder.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: path.path) else { return nil }
        do {
            return try JSONDecoder().decode(EvaluationRunState.self, from: readSmallFile(path.path, limit: 1 << 20))
        } catch let error as RephotoError {
            throw error
        } catch {
            throw RephotoError.badInput("\(path.path): not a readable run state (\(fileErrorReason(error)))")
        }
    }

    func write(to folder: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (encoder.encode(JSONOutput.Versioned(self)) + Data("\n".utf8)).write(to: folder.appendingPathComponent(Self.fileName), options: .atomic)
    }

    static func now() -> String { ISO8601DateFormatter().string(from: Date()) }
}

/// A durable evaluation run in a result folder. Rows reach frames.csv as frames finish (one write each, so
/// a killed process keeps every finished row), `run.json` says where the run stands, and `finish` writes the
/// sorted frames.csv, summary.json and report.html, marked partial when the run was interrupted.
public final class EvaluationRun: @unchecked Sendable {
    public let folder: URL
    public private(set) var state: EvaluationRunState
    /// Rows of an earlier, resumed run of this folder: their frames are not evaluated again.
    public let resumedRows: [EvaluationRow]
    private let lock = NSLock()
    private var rows: [EvaluationRow] = []
    private var stream: FileHandle?
    private var finished = false

    /// Starts a run in `folder` (already checked writable). Without `resume`, every earlier result in it is
    /// removed first, so nothing there can pass for this run's. With `resume`, an earlier run of the same
    /// settings and sequences continues: its finished rows are kept and its frames skipped.
    public init(folder: URL, settings: PipelineConfig, sequences: [URL], framesPlanned: Int, resume: Bool,
                provenance: Provenance? = nil) throws {
        self.folder = folder
        let paths = sequences.map { $0.standardizedFileURL.resolvingSymlinksInPath().path }.sorted()
        let digests = paths.map(EvaluationRunState.digest(ofSequenceAt:))
        let imageDigests = paths.map { EvaluationRunState.imageDigest(ofSequenceAt: $0, results: folder.path) }
        let csv = folder.appendingPathComponent("frames.csv")
        let fm = FileManager.default
        var kept: [EvaluationRow] = []
        if resume {
            guard let earlier = try EvaluationRunState.load(folder) else {
                throw RephotoError.badInput("--resume: \(folder.path) holds no run to resume (no \(EvaluationRunState.fileName))")
            }
            guard earlier.settings == settings else {
                throw RephotoError.badInput("--resume: the run in \(folder.path) used other settings; give the same --config, --set and options, or start afresh without --resume")
            }
            guard earlier.sequences == paths else {
                throw RephotoError.badInput("--resume: the run in \(folder.path) evaluated other sequences (\(earlier.sequences.joined(separator: ", ")))")
            }
            if let before = earlier.sequenceDigests, let changed = zip(paths, zip(before, digests)).first(where: { $1.0 != $1.1 })?.0 {
                throw RephotoError.badInput("--resume: \(changed) changed since the run in \(folder.path) began (sequence.json or frames.csv); start afresh without --resume")
            }
            if let before = earlier.imageDigests, let changed = zip(paths, zip(before, imageDigests)).first(where: { $1.0 != $1.1 })?.0 {
                throw RephotoError.badInput("--resume: \(changed) changed since the run in \(folder.path) began (a file added, removed or rewritten); start afresh without --resume")
            }
            kept = try Self.readRows(csv)
            state = earlier
        } else {
            for name in ["frames.csv", "summary.json", "report.html", "thumbnails", EvaluationRunState.fileName] {
                let item = folder.appendingPathComponent(name)
                if fm.fileExists(atPath: item.path) { try fm.removeItem(at: item) }
            }
            let now = EvaluationRunState.now()
            state = EvaluationRunState(state: .inProgress, started: now, updated: now, settings: settings, sequences: paths,
                                       framesPlanned: framesPlanned, framesDone: 0)
        }
        state.sequenceDigests = digests
        state.imageDigests = imageDigests
        state.provenance = provenance
        resumedRows = kept
        state.state = .inProgress
        state.framesPlanned = framesPlanned
        state.framesDone = kept.count
        state.updated = EvaluationRunState.now()
        // The stream holds the kept rows too, rewritten whole: a torn last line of a killed run is dropped.
        try (try EvaluationRow.csv(kept)).write(to: csv, atomically: true, encoding: .utf8)
        try state.write(to: folder)
        stream = try FileHandle(forWritingTo: csv)
        try stream?.seekToEnd()
    }

    /// Appends one finished frame's row to frames.csv at once. Rows arriving after `finish` are dropped.
    public func record(_ row: EvaluationRow) {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        rows.append(row)
        if let line = try? EvaluationRow.csvLine(row) {
            // A failed write (disk full) must not stop the run: finish rewrites frames.csv from memory.
            try? stream?.write(contentsOf: Data(line.utf8))
        }
    }

    /// Writes the final frames.csv (sorted), summary.json, report.html and thumbnails, and marks the run
    /// complete, or interrupted with a partial summary. Safe to call from any thread; only the first call counts.
    @discardableResult
    public func finish(broken: [BrokenSequence], thumbnails: [String: [String: Data]], interrupted: Bool) throws -> EvaluationSummary? {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return nil }
        finished = true
        try? stream?.close()
        stream = nil
        let all = resumedRows + rows
        state.state = interrupted ? .interrupted : .complete
        state.framesDone = all.count
        state.updated = EvaluationRunState.now()
        let outcome = EvaluationOutcome(rows: all, broken: broken, thumbnails: interrupted ? [:] : thumbnails)
        let summary = try EvaluationOutput.write(outcome, to: folder, run: state)
        try state.write(to: folder)
        return summary
    }

    public var framesDone: Int {
        lock.lock()
        defer { lock.unlock() }
        return resumedRows.count + rows.count
    }

    /// Rows of a frames.csv that a killed run may have left mid-line: an unterminated last line is dropped.
    static func readRows(_ csv: URL) throws -> [EvaluationRow] {
        guard let data = FileManager.default.contents(atPath: csv.path), !data.isEmpty else { return [] }
        var text = String(decoding: data, as: UTF8.self)
        if !text.hasSuffix("\n"), let cut = text.lastIndex(of: "\n") { text = String(text[...cut]) }
        return try EvaluationRow.parse(text, path: csv.path)
    }
}
