import Foundation
import RephotoData
import RephotoKit

/// One frame of a sequence run as a guidance session (`rephoto evaluate --session`): `session.csv`'s row. Column
/// names are a documented, stable contract (docs/evaluation.md).
public struct SessionRow: Equatable, Sendable {
    /// `session` (the configured schedule) or `robust` (the same session with a robust update on every frame).
    public var run = ""
    public var sequence = ""
    public var index = 0
    public var file = ""
    /// Where the frame's answer came from; nil when the session threw (`failed` in the CSV: `sourceText`).
    public var source: AnswerSource?
    public var trigger: String?
    public var ageFrames: Int?
    /// Decoding and the session's work on the answer path, milliseconds.
    public var timeMs = 0.0
    /// A robust update answered or joined on this frame: its own time, milliseconds.
    public var robustMs: Double?
    public var tracks: Int?
    public var rotationErrorDegrees: Double?
    public var translationErrorDegrees: Double?
    /// max(rotation, translation) error, an undetermined translation or a failure counting 180° (as frames.csv).
    public var pairErrorDegrees: Double?
    /// Angle between the step and the truth's direction to the reference's vantage point.
    public var stepErrorDegrees: Double?
    public var stepSigmaDegrees: Double?
    public var stepDetermined: Bool?
    /// Why the frame's pose has no translation (`UndeterminedTranslation`), if it has none.
    public var poseTranslationUndetermined: String?
    public var converged = false
    /// A pose reported with its rotation over 10° or its translation over 30° off the truth.
    public var confidentWrong = false
    /// The navigation quadrilateral's corners x0, y0, ... x3, y3, current-frame pixels.
    public var quadrilateral: [Double]?
    /// Session rows: the largest corner distance to the robust run's quadrilateral on the same frame, pixels.
    public var quadrilateralDifferencePixels: Double?
    /// An unknown reference camera: the answer's focal length against the truth, signed percent (as frames.csv).
    public var referenceFocalErrorPercent: Double?
    /// What the person was told on this frame: the answer's hints (`session.hints`), "; "-separated; empty when
    /// there was nothing to do (aligned and converged) or no answer.
    public var hints = ""

    public static let columns = [
        "run", "sequence", "index", "file", "source", "trigger", "age_frames", "time_ms", "robust_ms", "tracks", "rotation_error_deg",
        "translation_error_deg", "pair_error_deg", "step_error_deg", "step_sigma_deg", "step_determined", "pose_translation_undetermined",
        "converged", "confident_wrong", "quad_x0", "quad_y0", "quad_x1", "quad_y1", "quad_x2", "quad_y2", "quad_x3", "quad_y3", "quad_diff_px", "reference_focal_error_percent", "hints",
    ]

    /// The source as the CSV and the report write it: its name, or `failed`.
    public var sourceText: String { source?.rawValue ?? "failed" }

    var fields: [String] {
        func n(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "" }
        func b(_ v: Bool?) -> String { v.map { $0 ? "true" : "false" } ?? "" }
        let quad = quadrilateral.map { $0.map { String(format: "%.3f", $0) } } ?? Array(repeating: "", count: 8)
        return [run, sequence, String(index), file, sourceText, trigger ?? "", ageFrames.map(String.init) ?? "", n(timeMs), n(robustMs), tracks.map(String.init) ?? "",
                n(rotationErrorDegrees), n(translationErrorDegrees), n(pairErrorDegrees), n(stepErrorDegrees), n(stepSigmaDegrees), b(stepDetermined),
                poseTranslationUndetermined ?? "", b(converged), b(confidentWrong)] + quad + [n(quadrilateralDifferencePixels), n(referenceFocalErrorPercent), hints]
    }
}

/// Per sequence and run: `session.json`'s entries.
public struct SessionSummary: Codable, Equatable, Sendable {
    public var frames = 0
    public var robustFrames = 0
    public var trackedFrames = 0
    public var heldFrames = 0
    public var failedFrames = 0
    public var medianTrackedMs: Double?
    public var p95TrackedMs: Double?
    public var medianRobustMs: Double?
    public var meanMs: Double?
    public var maa10: Double?
    public var confidentWrong = 0
    /// Session runs: the median of the frames' quadrilateral differences to the robust run, pixels.
    public var medianQuadrilateralDifferencePixels: Double?
    public var medianStepErrorDegrees: Double?
    /// On the frames whose robust-run pose left the translation undetermined.
    public var medianStepErrorWhereUndeterminedDegrees: Double?
    public var stepFrames = 0
    public var firstConvergedFrame: Int?
    /// An unknown reference camera: the median of the answers' absolute focal length errors, percent.
    public var medianReferenceFocalErrorPercent: Double?

    static func compute(_ rows: [SessionRow], undetermined: Set<String>) -> SessionSummary {
        var s = SessionSummary()
        let m = Statistics.self
        s.frames = rows.count
        s.robustFrames = rows.filter { $0.robustMs != nil }.count
        s.trackedFrames = rows.filter { $0.source == .tracked }.count
        s.heldFrames = rows.filter { $0.source == .held || $0.source == .sensor }.count
        s.failedFrames = rows.filter { $0.source == nil }.count
        let tracked = rows.filter { $0.source == .tracked }.map(\.timeMs)
        s.medianTrackedMs = m.median(tracked)
        s.p95TrackedMs = m.percentile(tracked, 95)
        s.medianRobustMs = m.median(rows.compactMap(\.robustMs))
        s.meanMs = rows.isEmpty ? nil : rows.map(\.timeMs).reduce(0, +) / Double(rows.count)
        s.maa10 = m.meanAverageAccuracy(rows.compactMap(\.pairErrorDegrees), upTo: 10)
        s.confidentWrong = rows.filter(\.confidentWrong).count
        s.medianQuadrilateralDifferencePixels = m.median(rows.compactMap(\.quadrilateralDifferencePixels))
        s.medianStepErrorDegrees = m.median(rows.compactMap(\.stepErrorDegrees))
        s.medianStepErrorWhereUndeterminedDegrees = m.median(rows.filter { undetermined.contains("\($0.sequence)#\($0.index)") }.compactMap(\.stepErrorDegrees))
        s.stepFrames = rows.filter { $0.stepErrorDegrees != nil }.count
        s.firstConvergedFrame = rows.first(where: \.converged)?.index
        s.medianReferenceFocalErrorPercent = m.median(rows.compactMap(\.referenceFocalErrorPercent).map(abs))
        return s
    }
}

/// `session.json`: by run, then by sequence name ("all" for every frame).
public struct SessionEvaluationSummary: Codable, Equatable, Sendable {
    public var runs: [String: [String: SessionSummary]]
    public var brokenSequences: [BrokenSequence]
    /// What made it (version, command line, settings, start, data). Absent in older files.
    public var provenance: Provenance?
}

/// Runs each sequence as one guidance session in frame order, once as configured and once with a robust update on
/// every frame, on one thread so the two are timed alike; errors are computed here against the sequence's truth.
public struct SessionEvaluator: Sendable {
    public var config: PipelineConfig
    /// The session run's robust updates are joined this many frames after the frame they ran on, as the worker's run
    /// on another pipeline (0: inline, the frame waits for its update). The robust run is always inline.
    public var robustLag = 2
    public var shouldStop: (@Sendable () -> Bool)?

    public init(config: PipelineConfig) throws {
        try config.validate()
        self.config = config
    }

    public func run(_ sequences: [FrameSequence], progress: (@Sendable (Int, Int) -> Void)? = nil) throws
        -> (rows: [SessionRow], summary: SessionEvaluationSummary) {
        var robustConfig = config
        robustConfig.session.robustEvery = 1
        let total = 2 * sequences.map { $0.currentFrames.count }.reduce(0, +)
        var done = 0, rows: [SessionRow] = [], broken: [BrokenSequence] = []
        for sequence in sequences {
            do {
                let robust = try run(sequence, config: robustConfig, name: "robust") { done += 1; progress?(done, total) }
                var session = try run(sequence, config: config, name: "session") { done += 1; progress?(done, total) }
                let quads = Dictionary(robust.compactMap { row in row.quadrilateral.map { (row.index, $0) } }, uniquingKeysWith: { a, _ in a })
                for k in session.indices {
                    guard let mine = session[k].quadrilateral, let theirs = quads[session[k].index] else { continue }
                    session[k].quadrilateralDifferencePixels = (0..<4).map { c -> Double in
                        let dx = mine[2 * c] - theirs[2 * c], dy = mine[2 * c + 1] - theirs[2 * c + 1]
                        return (dx * dx + dy * dy).squareRoot()
                    }.max()
                }
                rows += robust + session
            } catch {
                broken.append(BrokenSequence(path: sequence.directory?.path ?? sequence.manifest.name, error: "\(error)"))
            }
            if shouldStop?() == true { break }
        }
        let undetermined = Set(rows.filter { $0.run == "robust" && $0.poseTranslationUndetermined != nil }.map { "\($0.sequence)#\($0.index)" })
        var runs: [String: [String: SessionSummary]] = [:]
        for name in ["robust", "session"] {
            let mine = rows.filter { $0.run == name }
            var entry = ["all": SessionSummary.compute(mine, undetermined: undetermined)]
            for (sequence, group) in Dictionary(grouping: mine, by: \.sequence) {
                entry[sequence] = SessionSummary.compute(group, undetermined: undetermined)
            }
            runs[name] = entry
        }
        return (rows, SessionEvaluationSummary(runs: runs, brokenSequences: broken))
    }

    /// One session over a sequence's frames in file order; the reference is the manifest's, for every frame.
    func run(_ sequence: FrameSequence, config: PipelineConfig, name: String, frameDone: () -> Void) throws -> [SessionRow] {
        let updates: RobustUpdates = name == "robust" || robustLag == 0 ? .inline : .deferred(lag: robustLag)
        let kind = try sequence.referenceKind(features: config.features)
        let estimator = try PoseEstimator(config: config.forReference(kind: kind.kind))
        let frames = sequence.frames.enumerated().filter { $0.element.file != sequence.referenceFile(for: $0.element) }
        guard let referenceFile = sequence.manifest.reference else {
            throw RephotoError.badInput("\(sequence.manifest.name): a session needs one reference (sequence.json's reference), not a list of pairs")
        }
        if let other = frames.first(where: { sequence.referenceFile(for: $0.element) != referenceFile }) {
            throw RephotoError.badInput("\(sequence.manifest.name): frame \(other.element.file) has its own reference; a session has one")
        }
        let camera = try sequence.camera()
        let reference = try estimator.prepareReference(estimator.load(contentsOfFile: sequence.path(of: referenceFile)),
                                                       camera: try sequence.referenceCamera(), cameraUnknown: sequence.referenceCameraUnknown,
                                                       kind: kind)
        let referenceAttitude = try frames.first.flatMap { try sequence.attitudes(for: $0.element)?.reference }
        let session = GuidanceSession(estimator: estimator, reference: reference, camera: camera, referenceAttitude: referenceAttitude,
                                      robustUpdates: updates)
        var rows: [SessionRow] = []
        // One camera serves every frame of a session: a frame of another size would be estimated with the wrong one.
        var size: (ImageSize, String)?
        for (index, frame) in frames {
            if shouldStop?() == true { break }
            var row = SessionRow(run: name, sequence: sequence.manifest.name, index: index, file: frame.file)
            let start = ContinuousClock.now
            do {
                let image = try estimator.load(contentsOfFile: sequence.path(of: frame.file))
                if let (expected, first) = size, image.fullSize != expected {
                    throw FrameSizeMismatch(message: "\(sequence.path(of: frame.file)): \(image.fullSize.width)x\(image.fullSize.height), but the sequence's camera is for \(expected.width)x\(expected.height) frames (\(first)): a session has one camera")
                } else if size == nil {
                    do {
                        if let camera { _ = try camera.adapted(to: image.fullSize) }
                    } catch let error as RephotoError {
                        throw FrameSizeMismatch(message: "\(sequence.path(of: frame.file)): the frames' camera: \(error.message)")
                    }
                    size = (image.fullSize, frame.file)
                }
                let attitude = try sequence.attitudes(for: frame)?.current
                let decoded = milliseconds(since: start)
                let answer = try session.process(image, attitude: attitude, timestamp: frame.timestamp)
                // Decoding and the answer's own work: a deferred robust update's time is off the answer path.
                row.timeMs = decoded + answer.session.milliseconds
                row.robustMs = answer.session.robustMilliseconds
                row.fill(from: answer, truth: frame.truth)
            } catch let mismatch as FrameSizeMismatch {
                throw RephotoError.badInput(mismatch.message)
            } catch {
                row.source = nil
                row.timeMs = milliseconds(since: start)
                if frame.truth.rotation != nil { row.pairErrorDegrees = 180 }
            }
            rows.append(row)
            frameDone()
        }
        return rows
    }
}

/// A frame whose size differs from the session's camera: the whole sequence is bad input, not one failed frame.
private struct FrameSizeMismatch: Error {
    let message: String
}

extension SessionRow {
    mutating func fill(from answer: SessionFrame, truth: GroundTruth) {
        let s = answer.session
        source = s.source
        trigger = s.trigger?.rawValue
        ageFrames = s.ageFrames
        tracks = s.tracks
        converged = s.converged
        hints = s.hints.joined(separator: "; ")
        stepSigmaDegrees = s.step?.directionSigmaDegrees
        stepDetermined = s.step?.determined
        if let step = s.step, let gt = truth.translation, step.baselines > 0 {
            stepErrorDegrees = GroundTruthErrors.translationDirectionError(estimate: SIMD3(step.vector[0], step.vector[1], step.vector[2]), truth: gt)
        }
        guard let result = answer.result else {
            if truth.rotation != nil { pairErrorDegrees = 180 }
            return
        }
        quadrilateral = result.navigation.quadrilateral.corners.flatMap { [$0.x, $0.y] }
        if let truth = truth.referenceFocal, let found = result.referenceCamera {
            referenceFocalErrorPercent = ((found.fx + found.fy) / 2 - truth) / truth * 100
        }
        poseTranslationUndetermined = result.pose.map { $0.translation == nil ? ($0.translationUndetermined?.rawValue ?? "undetermined") : nil } ?? nil
        if let gt = truth.rotation, let rotation = result.pose?.rotation {
            rotationErrorDegrees = GroundTruthErrors.rotationError(estimate: rotation, truth: gt)
        }
        if let gt = truth.translation, let t = result.pose?.translation {
            translationErrorDegrees = GroundTruthErrors.translationDirectionError(estimate: t, truth: gt)
        }
        if truth.rotation != nil {
            let rotation = rotationErrorDegrees ?? 180
            let translation = truth.translation == nil ? 0 : (translationErrorDegrees ?? 180)
            pairErrorDegrees = max(rotation, translation)
        }
        confidentWrong = (rotationErrorDegrees ?? 0) > 10 || (translationErrorDegrees ?? 0) > 30
    }
}

extension SessionEvaluationSummary {
    /// Writes `session.csv`, `session.html` and `session.json` into `folder`, each atomically.
    public static func write(rows: [SessionRow], summary: SessionEvaluationSummary, to folder: URL) throws {
        try CSVText.make([SessionRow.columns] + rows.map(\.fields)).write(to: folder.appendingPathComponent("session.csv"), atomically: true, encoding: .utf8)
        try SessionReport.html(summary: summary, rows: rows).write(to: folder.appendingPathComponent("session.html"), atomically: true, encoding: .utf8)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try (encoder.encode(JSONOutput.Versioned(summary)) + Data("\n".utf8)).write(to: folder.appendingPathComponent("session.json"), options: .atomic)
    }
}
