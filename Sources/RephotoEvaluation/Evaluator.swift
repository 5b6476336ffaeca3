import RephotoData
import RephotoKit
import Foundation

/// What an evaluation run produced.
public struct EvaluationOutcome: Sendable {
    public var rows: [EvaluationRow]
    public var broken: [BrokenSequence]
    /// Per sequence name: overlay thumbnails (JPEG) of the worst, median and best frames.
    public var thumbnails: [String: [String: Data]]

    public init(rows: [EvaluationRow] = [], broken: [BrokenSequence] = [], thumbnails: [String: [String: Data]] = [:]) {
        self.rows = rows
        self.broken = broken
        self.thumbnails = thumbnails
    }
}

/// Runs the full pipeline (vision path, sensor path, comparison, errors against truth) over sequences.
/// Each reference is prepared once per sequence and shared by every frame; frames run on `jobs` threads.
/// OpenCV's own thread count is process state and left to the caller (`OpenCVRuntime.configure`, at start-up).
public struct Evaluator: Sendable {
    public var estimator: PoseEstimator
    public var jobs: Int
    /// For benchmarks: detect the reference again for every frame instead of reusing it.
    public var recomputeReference = false
    public var thumbnails = true
    /// Called with each row as its frame finishes, from the worker threads (durable runs stream it to disk).
    public var onRow: (@Sendable (EvaluationRow) -> Void)?
    /// Polled before each frame starts: once true, no new frame starts and `run` returns with the rows of
    /// the frames already in flight (a SIGINT or SIGTERM).
    public var shouldStop: (@Sendable () -> Bool)?
    /// Images and features kept across runs (`rephoto tune`): each image is decoded and detected once per
    /// feature setting.
    public var featureCache: FeatureCache?
    /// Searches kept across runs (`rephoto tune`); hits need the same features objects, which `featureCache` gives.
    public var stageCache: StageCache?
    /// The references' kind of the sequence being evaluated (`FrameSequence.referenceKind`), set per sequence.
    var referenceKind: ReferenceKindEvidence?

    public init(config: PipelineConfig, jobs: Int) throws {
        estimator = try PoseEstimator(config: config)
        self.jobs = max(1, jobs)
    }

    public func run(_ folders: [URL], progress: (@Sendable (Int, Int) -> Void)? = nil) -> EvaluationOutcome {
        let (loaded, broken) = Self.load(folders)
        var outcome = run(loaded, progress: progress)
        outcome.broken = broken + outcome.broken
        return outcome
    }

    /// Loads and checks sequence folders: the readable ones, and the others as broken entries.
    public static func load(_ folders: [URL]) -> (sequences: [FrameSequence], broken: [BrokenSequence]) {
        var broken: [BrokenSequence] = []
        var loaded: [FrameSequence] = []
        for folder in folders {
            do {
                let sequence = try FrameSequence.load(from: folder)
                _ = try sequence.camera()
                // Rows, summaries and thumbnails are keyed by name: a second sequence of one name would merge silently.
                guard !sequence.currentFrames.isEmpty else {
                    throw RephotoError.badInput("\(folder.path): frames.csv lists no frame to evaluate besides the reference")
                }
                if let first = loaded.first(where: { $0.manifest.name == sequence.manifest.name }) {
                    throw RephotoError.badInput("\(folder.path): sequence name '\(sequence.manifest.name)' is also the name of \(first.directory?.path ?? "another sequence"): give one of them another name in its sequence.json")
                }
                loaded.append(sequence)
            } catch {
                broken.append(BrokenSequence(path: folder.path, error: "\(error)"))
            }
        }
        return (loaded, broken)
    }

    /// Intrinsics that do not fit the first frame or its reference make every frame fail alike: the sequence is bad
    /// input instead (checked as it starts: decoding before then would precede OpenCV's start-up settings). An
    /// unreadable image is left to its frame's row.
    static func checkCameras(_ sequence: FrameSequence) throws {
        guard let frame = sequence.currentFrames.first else { return }
        let checks = [(sequence.referenceFile(for: frame), try sequence.referenceCamera(), "the reference's camera"),
                      (frame.file, try sequence.camera(), "the frames' camera")]
        for case let (file?, camera?, role) in checks {
            guard let image = try? Image(contentsOfFile: sequence.path(of: file)) else { continue }
            do {
                _ = try camera.adapted(to: image.fullSize)
            } catch let error as RephotoError {
                throw error.prefixed("\(sequence.path(of: file)): \(role)")
            }
        }
    }

    /// Evaluates loaded sequences. `finished` rows (of a resumed run) are not evaluated again; they count in
    /// the progress and in the thumbnails' choice of frames, but are not part of the returned rows.
    public func run(_ sequences: [FrameSequence], finished: [EvaluationRow] = [], progress: (@Sendable (Int, Int) -> Void)? = nil) -> EvaluationOutcome {
        var outcome = EvaluationOutcome()
        let earlier = Dictionary(grouping: finished, by: \.sequence)
        let total = finished.count + sequences.map { work($0, skipping: Set((earlier[$0.manifest.name] ?? []).map(\.index))) }.reduce(0, +)
        let counter = Counter()
        for _ in finished { counter.increment() }
        for sequence in sequences {
            let name = sequence.manifest.name
            let skip = Set((earlier[name] ?? []).map(\.index))
            do {
                try Self.checkCameras(sequence)
            } catch {
                outcome.broken.append(BrokenSequence(path: sequence.directory?.path ?? name, error: "\(error)"))
                for _ in 0..<work(sequence, skipping: skip) { counter.increment() }
                progress?(counter.value, total)
                continue
            }
            // Prints are detected with their own settings (features.oldPhotoClahe), whatever is known of their camera. A
            // reference that cannot be read fails where it is prepared, with its own error.
            var evaluator = self
            let kind = (try? sequence.referenceKind(features: estimator.config.features)) ?? .given(nil, cameraUnknown: sequence.referenceCameraUnknown)
            evaluator.referenceKind = kind
            if kind.kind == .print, let adjusted = try? PoseEstimator(config: estimator.config.forReference(kind: .print)) {
                evaluator.estimator = adjusted
            }
            let (rows, shared) = evaluator.evaluate(sequence, skipping: skip) { counter.increment(); progress?(counter.value, total) }
            outcome.rows += rows
            if shouldStop?() == true { break }
            if thumbnails { outcome.thumbnails[name] = evaluator.overlays(sequence, (earlier[name] ?? []) + rows, shared: shared) }
        }
        return outcome
    }

    /// The frames a run evaluates, with their index in frames.csv: every frame that is not its own reference, less `skipping`.
    static func pending(_ sequence: FrameSequence, skipping: Set<Int>) -> [(offset: Int, element: SequenceFrame)] {
        sequence.frames.enumerated().filter { $0.element.file != sequence.referenceFile(for: $0.element) && !skipping.contains($0.offset) }
    }

    /// A reference of unknown camera shared by the sequence's frames gets one camera from all of them
    /// (`pose.referenceFocal.shareMinFrames`): a first pass over every frame, finished ones included.
    private func sharesCamera(_ sequence: FrameSequence) -> Bool {
        sequence.referenceCameraUnknown && estimator.config.pose.referenceFocal.shareMinFrames > 0
    }

    /// The frames a run estimates, counted once per pass: the progress's units.
    func work(_ sequence: FrameSequence, skipping: Set<Int>) -> Int {
        let pending = Self.pending(sequence, skipping: skipping).count
        return sharesCamera(sequence) ? pending + Self.pending(sequence, skipping: []).count : pending
    }

    /// One row per current frame not in `skipping`, in frames.csv order (fewer once `shouldStop` says so), and the
    /// cameras shared by references of unknown camera, per reference file.
    func evaluate(_ sequence: FrameSequence, skipping: Set<Int> = [],
                  done: @escaping @Sendable () -> Void) -> (rows: [EvaluationRow], shared: [String: EstimatedReferenceCamera]) {
        let frames = Self.pending(sequence, skipping: skipping)
        guard !frames.isEmpty else { return ([], [:]) }
        let camera = try? sequence.camera()
        let referenceCamera = try? sequence.referenceCamera()
        // The first pass also estimates the finished frames, on their references.
        let estimated = sharesCamera(sequence) ? Self.pending(sequence, skipping: []) : frames
        let referenceFiles = Set(estimated.compactMap { sequence.referenceFile(for: $0.element) }).sorted()
        let references = Results<Result<ReferenceFrame, RephotoError>>(count: referenceFiles.count)
        if !recomputeReference {
            parallel(referenceFiles.count) { i in references.set(i, prepare(sequence, referenceFiles[i], referenceCamera)) }
        }
        let shouldStop = shouldStop
        let reference = { @Sendable (file: String) -> Result<ReferenceFrame, RephotoError> in
            recomputeReference ? prepare(sequence, file, referenceCamera) : references.get(referenceFiles.firstIndex(of: file)!)!
        }
        let first = sharesCamera(sequence) ? firstPass(sequence, keeping: Set(frames.map(\.offset)), reference: reference, camera: camera, done: done)
            : (shared: [:], rows: [:])
        if shouldStop?() == true { return ([], first.shared) }
        let rows = Results<EvaluationRow>(count: frames.count)
        let onRow = onRow
        parallel(frames.count) { i in
            if shouldStop?() == true { return }
            let (index, frame) = frames[i]
            let referenceFile = sequence.referenceFile(for: frame) ?? ""
            // A reference whose frames' answers were not combined: the first pass's row is the frame's.
            let row: EvaluationRow
            if let estimate = first.shared[referenceFile] {
                row = evaluate(sequence, index: index, frame: frame, reference: reference(referenceFile).map { $0.sharing(estimate) }, camera: camera).row
            } else if let earlier = first.rows[index] {
                row = earlier
            } else {
                row = evaluate(sequence, index: index, frame: frame, reference: reference(referenceFile), camera: camera).row
            }
            rows.set(i, row)
            onRow?(row)
            done()
        }
        return (rows.values.compactMap { $0 }, first.shared)
    }

    /// Every frame of the sequence estimated on its own: per reference file, the camera its frames' answers combine
    /// into (`SharedReferenceCamera`; a frame listed twice answers once), and the rows of the frames in `keeping`.
    private func firstPass(_ sequence: FrameSequence, keeping: Set<Int>, reference: @escaping @Sendable (String) -> Result<ReferenceFrame, RephotoError>,
                           camera: CameraIntrinsics?, done: @escaping @Sendable () -> Void)
        -> (shared: [String: EstimatedReferenceCamera], rows: [Int: EvaluationRow]) {
        let frames = Self.pending(sequence, skipping: [])
        let outcomes = Results<(row: EvaluationRow, answer: SharedReferenceCamera.Answer?)>(count: frames.count)
        let shouldStop = shouldStop
        parallel(frames.count) { i in
            if shouldStop?() == true { return }
            let (index, frame) = frames[i]
            let (row, result) = evaluate(sequence, index: index, frame: frame, reference: reference(sequence.referenceFile(for: frame) ?? ""), camera: camera)
            outcomes.set(i, (row, result.flatMap(estimator.referenceCameraPolicy.answer)))
            done()
        }
        var answers: [(reference: String, frame: String, answer: SharedReferenceCamera.Answer)] = []
        var rows: [Int: EvaluationRow] = [:]
        for (i, frame) in frames.enumerated() {
            guard let outcome = outcomes.get(i) else { continue }
            if keeping.contains(frame.offset) { rows[frame.offset] = outcome.row }
            if let answer = outcome.answer, let file = sequence.referenceFile(for: frame.element) { answers.append((file, frame.element.file, answer)) }
        }
        return (estimator.referenceCameraPolicy.combine(byReference: answers), rows)
    }

    private func prepare(_ sequence: FrameSequence, _ file: String, _ camera: CameraIntrinsics?) -> Result<ReferenceFrame, RephotoError> {
        Result {
            let kind = referenceKind ?? .given(nil, cameraUnknown: sequence.referenceCameraUnknown)
            if !estimator.config.features.referenceBorder.applies(print: kind.kind == .print), let cached = try cached(sequence.path(of: file)) {
                return try estimator.prepareReference(features: cached.features, camera: camera, cameraUnknown: sequence.referenceCameraUnknown, kind: kind)
            }
            let image = try estimator.load(contentsOfFile: sequence.path(of: file))
            return try estimator.prepareReference(image, camera: camera, cameraUnknown: sequence.referenceCameraUnknown, kind: kind)
        }.mapError(RephotoError.wrapping)
    }

    /// The image at `path` and its features from the cache (decoded and detected on a miss); nil without one.
    private func cached(_ path: String) throws -> FeatureCache.Entry? {
        guard let featureCache else { return nil }
        let bytes = try Image.readFile(path, maxBytes: estimator.config.maxBytes)
        do {
            return try featureCache.entry(bytes: bytes, config: estimator.config.features, decode: { try estimator.decode(bytes) },
                                          detect: { try Features(image: $0, config: estimator.config.features) })
        } catch let error as RephotoError {
            throw error.prefixed(path)
        }
    }

    /// The pipeline's result for one frame, as the frame's row records it.
    private func estimate(_ sequence: FrameSequence, frame: SequenceFrame, reference: ReferenceFrame, camera: CameraIntrinsics?) throws -> PoseResult {
        let entry = try cached(sequence.path(of: frame.file))
        let image = try entry?.image ?? estimator.load(contentsOfFile: sequence.path(of: frame.file))
        return try estimator.estimate(reference: reference, current: image, currentFeatures: entry?.features, camera: camera,
                                      attitudes: try sequence.attitudes(for: frame), stages: featureCache == nil ? nil : stageCache,
                                      marks: try sequence.marks(for: frame))
    }

    /// One frame's row, and the pipeline's result when it gave one.
    func evaluate(_ sequence: FrameSequence, index: Int, frame: SequenceFrame, reference: Result<ReferenceFrame, RephotoError>,
                  camera: CameraIntrinsics?) -> (row: EvaluationRow, result: PoseResult?) {
        var row = EvaluationRow()
        row.sequence = sequence.manifest.name
        row.index = index
        row.file = frame.file
        row.referenceFile = sequence.referenceFile(for: frame) ?? ""
        let truth = frame.truth
        var found: PoseResult?
        do {
            let result = try estimate(sequence, frame: frame, reference: try reference.get(), camera: camera)
            found = result
            try row.fill(from: result, truth: truth)
        } catch {
            let e = RephotoError.wrapping(error)
            row.failed = true
            row.failureKind = e.kind.rawValue
            row.failureReason = e.message
            row.poseRefusal = e.refusal?.cause.rawValue
        }
        if truth.rotation != nil {
            let rotation = row.failed ? 180 : (row.rotationErrorDegrees ?? 180)
            let translation = truth.translation == nil ? 0 : (row.failed ? 180 : (row.translationErrorDegrees ?? 180))
            row.pairErrorDegrees = max(rotation, translation)
        }
        return (row, found)
    }

    /// Worst, median and best frame of a sequence, drawn for the report.
    func overlays(_ sequence: FrameSequence, _ rows: [EvaluationRow], shared: [String: EstimatedReferenceCamera] = [:]) -> [String: Data] {
        var out: [String: Data] = [:]
        let camera = try? sequence.camera(), referenceCamera = try? sequence.referenceCamera()
        for (label, row) in EvaluationReport.representativeFrames(rows) {
            guard let frame = sequence.frames.dropFirst(row.index).first,
                  let prepared = try? prepare(sequence, row.referenceFile, referenceCamera).get(),
                  case let reference = shared[row.referenceFile].map(prepared.sharing) ?? prepared,
                  let image = try? Image(contentsOfFile: sequence.path(of: frame.file), grayscale: true),
                  let result = try? estimator.estimate(reference: reference, current: image, camera: camera),
                  let drawn = try? NavigationOverlay.draw(on: Image(contentsOfFile: sequence.path(of: frame.file)), result: result, legend: false) else { continue }
            let width = min(360, drawn.width), height = max(1, drawn.height * width / drawn.width)
            out[label] = try? drawn.resized(width: width, height: height).encoded(as: .jpeg(quality: 80))
        }
        return out
    }

    /// Runs body(0..<count) on up to `jobs` threads.
    private func parallel(_ count: Int, _ body: @Sendable @escaping (Int) -> Void) {
        guard count > 0 else { return }
        let next = Counter()
        DispatchQueue.concurrentPerform(iterations: min(jobs, count)) { _ in
            while true {
                let i = next.take()
                guard i < count else { return }
                body(i)
            }
        }
    }
}

extension EvaluationRow {
    /// The row of an estimated frame; errors are computed here, against the sequence's truth, never in the pipeline.
    mutating func fill(from r: PoseResult, truth: GroundTruth) throws {
        let errors = try GroundTruthErrors.compute(truth: truth, rotation: r.pose?.rotation, translation: r.pose?.translation,
                                               homography: r.homography, referenceSize: r.referenceSize)
        keypointsReference = Double(r.counts.keypointsReference)
        keypointsCurrent = Double(r.counts.keypointsCurrent)
        matches = Double(r.counts.matches)
        inliersHomography = Double(r.counts.inliersHomography)
        inliersEssential = r.counts.inliersEssential.map(Double.init)
        if let truth = truth.referenceFocal, let found = r.referenceCamera {
            referenceFocalErrorPercent = ((found.fx + found.fy) / 2 - truth) / truth * 100
        }
        referenceKind = r.referenceKind?.kind.rawValue
        if let found = r.referenceCamera, found.focalSigmaPercent.isFinite {
            (referenceFx, referenceFy, referenceCx, referenceCy) = (found.fx, found.fy, found.cx, found.cy)
            referenceFocalSigmaPercent = found.focalSigmaPercent
        }
        rotationOnly = r.pose?.rotationOnly
        translationUndetermined = r.pose?.translationUndetermined?.rawValue
        poseRefusal = r.poseRefusal?.cause.rawValue
        rotationDegrees = r.pose?.rotationDegrees
        rotationErrorDegrees = errors.rotationErrorDegrees
        translationErrorDegrees = errors.translationErrorDegrees
        translationErrorUnsignedDegrees = errors.translationErrorUnsignedDegrees
        cornerErrorPixels = errors.cornerErrorPixels
        afdPixels = r.metrics.afdPixels
        score = r.metrics.score
        displacementPercent = r.metrics.displacementPercent
        aligned = r.navigation.aligned
        sensorRotationDegrees = r.sensor?.rotationDegrees
        sensorVisionAngleDegrees = r.comparison?.rotationAngleDegrees
        if let sensor = r.sensor, let gt = truth.rotation {
            sensorRotationErrorDegrees = GroundTruthErrors.rotationError(estimate: sensor.rotation, truth: gt)
        }
        quadrilateralErrorPixels = r.comparison?.quadrilateralErrorPixels
        timeDetectReferenceMs = r.timings.detectReference
        timeDetectCurrentMs = r.timings.detectCurrent
        timeMatchMs = r.timings.match
        timeHomographyMs = r.timings.homography
        timeEssentialMs = r.timings.essential
        timeTotalMs = r.timings.total
    }
}
