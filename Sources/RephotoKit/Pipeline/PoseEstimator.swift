import Foundation

/// The vision path between a reference and a current frame: features, matches, homography, navigation,
/// metrics and (with intrinsics) the essential-matrix pose. A value type holding only its configuration,
/// so one estimator may be used from several threads at once.
public struct PoseEstimator: Sendable {
    public let config: PipelineConfig

    public init(config: PipelineConfig = PipelineConfig()) throws {
        try config.validate()
        self.config = config
    }

    /// The rules for an old reference's unknown camera, per frame, session and sequence.
    public var referenceCameraPolicy: ReferenceCameraPolicy { ReferenceCameraPolicy(config: config.pose) }

    /// An encoded image decoded as this estimator needs it: under its byte and pixel limits, grey, strict when
    /// `strictDecoding` is set, and no larger than the analysis scale (a 50 MP JPEG is decoded at 1/4 or 1/8 size).
    public func decode(_ data: Data) throws -> Image {
        guard data.count <= config.maxBytes else {
            throw RephotoError(.badInput, "image of \(data.count) bytes, over the limit of \(config.maxBytes) bytes (maxBytes)", reason: .tooLarge)
        }
        return try Image(data: data, maxPixels: config.maxPixels, grayscale: true, strict: config.strictDecoding, reducedFor: config.features)
    }

    /// An image file read and decoded as `decode(_:)` does; errors name the path.
    public func load(contentsOfFile path: String) throws -> Image {
        try Image(contentsOfFile: path, maxPixels: config.maxPixels, maxBytes: config.maxBytes, grayscale: true,
                  strict: config.strictDecoding, reducedFor: config.features)
    }

    /// A reference from features detected earlier (a reference store) under this estimator's feature settings.
    /// `cameraUnknown`: the reference's camera is estimated for each frame (an old photo); `camera` must then be nil.
    /// `kind`: a photo or a print (nil: `ReferenceKindEvidence.given(nil, cameraUnknown:)`).
    public func prepareReference(features: Features, camera: CameraIntrinsics?, cameraUnknown: Bool = false,
                                 kind: ReferenceKindEvidence? = nil) throws -> ReferenceFrame {
        try Self.checkUnknown(camera, cameraUnknown)
        guard features.config == config.features else {
            throw RephotoError.badInput("the saved features were detected with other feature settings than this estimator's")
        }
        let adapted = try camera.map { try Self.adapt($0, to: features.imageSize, "the reference's camera") }
        let index = config.matching.matcher == .flann ? try MatchIndex(reference: features, config: config.matching) : nil
        return ReferenceFrame(size: features.imageSize, features: features, camera: adapted, cameraUnknown: cameraUnknown,
                              kind: kind ?? .given(nil, cameraUnknown: cameraUnknown), detectMilliseconds: 0,
                              matchIndex: index, decodeWarning: nil)
    }

    /// `camera` adapted to an image's resolution; what is wrong with it names which camera (one calibration may serve both).
    private static func adapt(_ camera: CameraIntrinsics, to size: ImageSize, _ role: String) throws -> CameraIntrinsics {
        do {
            return try camera.adapted(to: size)
        } catch let error as RephotoError {
            throw error.prefixed(role)
        }
    }

    private static func checkUnknown(_ camera: CameraIntrinsics?, _ unknown: Bool) throws {
        if unknown, camera != nil { throw RephotoError.badInput("the reference's camera is given and said to be unknown: give one or the other") }
    }

    /// Detects the reference's features once; `camera` is adapted to the reference's resolution. `cameraUnknown`: the
    /// reference's camera is estimated for each frame (an old photo); `camera` must then be nil. `kind`: a photo or a
    /// print (nil: `ReferenceKindEvidence.given(nil, cameraUnknown:)`); a print's border is looked for.
    public func prepareReference(_ image: Image, camera: CameraIntrinsics?, cameraUnknown: Bool = false, kind: ReferenceKindEvidence? = nil,
                                 mask: Image? = nil) throws -> ReferenceFrame {
        let kind = kind ?? .given(nil, cameraUnknown: cameraUnknown)
        try Self.checkUnknown(camera, cameraUnknown)
        let start = ContinuousClock.now
        let adapted = try camera.map { try Self.adapt($0, to: image.fullSize, "the reference's camera") }
        let border = config.features.referenceBorder.applies(print: kind.kind == .print) ? try PrintBorder.detect(in: image) : nil
        let features = try Features(image: image, config: config.features, mask: try border.map { try $0.mask(for: image, within: mask) } ?? mask)
        let index = config.matching.matcher == .flann ? try MatchIndex(reference: features, config: config.matching) : nil
        return ReferenceFrame(size: image.fullSize, features: features, camera: adapted, cameraUnknown: cameraUnknown, kind: kind, border: border,
                              detectMilliseconds: milliseconds(since: start), matchIndex: index, decodeWarning: image.decodeWarning)
    }

    /// Estimates everything for one current frame. Throws `.estimationFailed` (with the counts) when there
    /// is too little signal for a homography; a failed pose only adds a warning. With `attitudes` the sensor
    /// path runs beside the vision path and the two are compared.
    /// `currentFeatures`: the current image's features when already detected under this estimator's settings
    /// (a `FeatureCache`); `mask` is then ignored. `stages`: searches remembered across estimators with other
    /// settings (a tuning sweep); the result is the same with or without it.
    /// `marks`: points marked by hand (`MarkedPoints`). The frame is estimated from its matches alone and, unless
    /// that pose fits the marks (or the reference's camera is unknown), again with the matches a pass guided by the
    /// marks adds; the pose that fits them is
    /// answered, else one whose translation is undetermined (it cannot be checked: `marks.largestPixels` null). When
    /// every pose found misses them the marks are refused (bad input) by number; with no pose found at all (no
    /// cameras, or refused) the guided pass's answer is given.
    public func estimate(reference prepared: ReferenceFrame, current image: Image, currentFeatures: Features? = nil, camera: CameraIntrinsics?,
                         mask: Image? = nil, attitudes: AttitudePair? = nil, stages: StageCache? = nil, marks: MarkedPoints? = nil) throws -> PoseResult {
        guard let marks else {
            return try estimate(reference: prepared, current: image, currentFeatures: currentFeatures, camera: camera, mask: mask,
                                attitudes: attitudes, stages: stages, guide: nil)
        }
        try marks.check(referenceSize: prepared.size, currentSize: image.fullSize)
        let tolerance = config.matching.markTolerance / 100 * Double(max(image.fullSize.width, image.fullSize.height))
        var misfit: (result: PoseResult, bad: [(number: Int, pixels: Double)])?
        var unchecked: PoseResult?, withoutPose: PoseResult?
        var failure: Error?
        // Searches remembered for a pair's matches do not hold for the guided matches.
        // With the reference's camera estimated, the guided pass is not run: on aged Herz-Jesu pairs it answered three
        // pairs matching could not, one of them 12.7° wrong while the marks fitted within their tolerance (the focal
        // length and the pose trade off against a few marks). The marks then only check the answer.
        for guide in prepared.cameraUnknown ? [nil] : [nil, marks] {
            do {
                var result = try estimate(reference: prepared, current: image, currentFeatures: currentFeatures, camera: camera, mask: mask,
                                          attitudes: attitudes, stages: guide == nil ? stages : nil, guide: guide)
                guard let pose = result.pose else {
                    // No pose (no cameras, or refused): nothing to check the marks against; the guided pass's answer wins.
                    result.marks = MarkedPointsReport(count: marks.count, guided: guide != nil, largestPixels: nil)
                    result.warnings.append("the marked points were not checked: no pose to check them against")
                    withoutPose = result
                    continue
                }
                guard let model = markModel(pose, result: result, reference: prepared, camera: camera, image: image) else {
                    // A translation left undetermined says nothing of where a mark must lie. The matches' own pose is
                    // answered as it is: a guided pass that "fits" the marks within their tolerance did worse on
                    // aged Herz-Jesu pairs (0.8° -> 49° with an estimated focal length).
                    result.marks = MarkedPointsReport(count: marks.count, guided: guide != nil, largestPixels: nil)
                    result.warnings.append("the marked points were not checked: the pose's translation is undetermined")
                    if guide == nil { return result }
                    unchecked = unchecked ?? result
                    continue
                }
                let bad = marks.inconsistent(under: model, tolerance: tolerance)
                if bad.isEmpty {
                    result.marks = MarkedPointsReport(count: marks.count, guided: guide != nil,
                                                      largestPixels: marks.errors(under: model).max() ?? 0)
                    return result
                }
                // The pose that blames the fewest marks names them: a slip among good marks leaves the others fitting.
                if misfit.map({ bad.count < $0.bad.count }) ?? true { misfit = (result, bad) }
            } catch let error as RephotoError where error.kind == .estimationFailed {
                failure = error
            }
        }
        if let unchecked { return unchecked }
        if let misfit {
            let numbers = misfit.bad.map { String($0.number) }, distances = misfit.bad.map { fmt($0.pixels, 3) }
            let plural = misfit.bad.count != 1
            throw RephotoError.badInput(
                "\(marks.source)marked pair\(plural ? "s" : "") \(numbers.joined(separator: ", ")) do\(plural ? "" : "es") not fit the pose the matches give (\(misfit.result.counts.inliersEssential ?? 0) inliers): \(distances.joined(separator: ", ")) px off, over \(fmt(tolerance, 3)) px (matching.markTolerance \(fmt(config.matching.markTolerance)) % of the current image); check \(plural ? "them" : "it") or mark other points",
                cause: .marksDoNotFit)
        }
        if let withoutPose { return withoutPose }
        throw failure ?? RephotoError.estimationFailed("no pose")
    }

    /// What a pose says of marked points: its epipolar geometry, or its rotation's homography when a rotation alone
    /// explains the inliers; nil without cameras or with a translation undetermined for another reason.
    private func markModel(_ pose: PoseResult.PoseSummary, result: PoseResult, reference: ReferenceFrame, camera: CameraIntrinsics?,
                           image: Image) -> MarkedPoints.Model? {
        let referenceCamera: CameraIntrinsics?
        if let estimated = result.referenceCamera {
            referenceCamera = CameraIntrinsics(fx: estimated.fx, fy: estimated.fy, cx: estimated.cx, cy: estimated.cy)
        } else {
            referenceCamera = reference.camera
        }
        guard let k1 = referenceCamera, let k2 = try? camera?.adapted(to: image.fullSize), let k1i = k1.matrix.inverse else { return nil }
        if let t = pose.translation { return .essential(rotation: pose.rotation, translation: t, reference: k1, current: k2) }
        guard pose.translationUndetermined == .rotationOnly else { return nil }
        return .homography(k2.matrix * pose.rotation * k1i)
    }

    private func estimate(reference prepared: ReferenceFrame, current image: Image, currentFeatures: Features?, camera: CameraIntrinsics?,
                          mask: Image?, attitudes: AttitudePair?, stages: StageCache?, guide marks: MarkedPoints?) throws -> PoseResult {
        var reference = prepared
        guard reference.features.config == config.features else {
            throw RephotoError.badInput("the reference was prepared with other feature settings than this estimator's")
        }
        let total = ContinuousClock.now
        var timings = StageTimings(detectReference: reference.detectMilliseconds)
        var warnings: [String] = [], alignmentWarnings: [String] = []
        if let damage = reference.decodeWarning { alignmentWarnings.append("reference image has damaged data: \(damage)") }
        if let damage = image.decodeWarning { alignmentWarnings.append("current image has damaged data: \(damage)") }
        warnings += alignmentWarnings
        let currentCamera = try camera.map { try Self.adapt($0, to: image.fullSize, "the current camera") }

        var start = ContinuousClock.now
        if let currentFeatures, currentFeatures.config != config.features {
            throw RephotoError.badInput("the current features were detected with other feature settings than this estimator's")
        }
        // A small reference (an old print) is met at a comparable pixel scale: features detected at the usual size are
        // then not used.
        let referenceSide = Double(max(reference.features.imageSize.width, reference.features.imageSize.height)) * reference.features.analysisScale
        let currentConfig = config.features.current(image.fullSize, referenceSide: referenceSide)
        let features = try currentConfig == config.features ? currentFeatures ?? Features(image: image, config: currentConfig, mask: mask)
            : Features(image: image, config: currentConfig, mask: mask)
        timings.detectCurrent = milliseconds(since: start)
        // Work done earlier (cached features, remembered searches) is reported at what it cost then, and
        // counted in the total, so a frame's time is its configuration's cost however it was served.
        var replayed = 0.0
        if let currentFeatures, features === currentFeatures {
            replayed += currentFeatures.detectMilliseconds - timings.detectCurrent
            timings.detectCurrent = currentFeatures.detectMilliseconds
        }

        start = ContinuousClock.now
        var pairs: Correspondences
        // A print's second pass along epipolar lines draws on the same nearest neighbours, at a looser ratio.
        let looseRatio = reference.kind.kind == .print && config.matching.oldPhotoEpipolarRatio > config.matching.ratio
            ? config.matching.oldPhotoEpipolarRatio : nil
        let pairsKey = StageCache.PairsKey(reference: reference.features, current: features, matching: config.matching,
                                           epipolar: looseRatio == nil ? [] : [config.pose.referenceFocal.threshold,
                                                                               Double(config.pose.referenceFocal.minInliers)])
        var candidates: Correspondences?
        if let stages {
            let neighbours = try stages.neighbours(reference: reference.features, current: features, config: config.matching,
                                                   index: reference.matchIndex)
            let filterStart = ContinuousClock.now
            pairs = try neighbours.value.filter(ratio: config.matching.ratio, mutual: config.matching.mutual)
            candidates = try looseRatio.map { try neighbours.value.filter(ratio: $0, mutual: config.matching.mutual) }
            timings.match = neighbours.milliseconds + milliseconds(since: filterStart)
            replayed += timings.match - milliseconds(since: start)
        } else if let looseRatio {
            let neighbours = try Neighbours(reference: reference.features, current: features, config: config.matching, index: reference.matchIndex)
            pairs = try neighbours.filter(ratio: config.matching.ratio, mutual: config.matching.mutual)
            candidates = try neighbours.filter(ratio: looseRatio, mutual: config.matching.mutual)
            timings.match = milliseconds(since: start)
        } else {
            pairs = try Matcher.match(reference: reference.features, current: features, config: config.matching, index: reference.matchIndex)
            timings.match = milliseconds(since: start)
        }
        if let marks {
            // A second pass guided by the marks' homography; what it finds joins the first pass's matches.
            start = ContinuousClock.now
            let radius = config.matching.guidedRadius / 100 * Double(max(reference.size.width, reference.size.height))
            let guided = try Matcher.guided(reference: reference.features, current: features, homography: try marks.guide(), radius: radius,
                                            ratio: config.matching.ratio)
            pairs = guided.joined(with: pairs)
            timings.match += milliseconds(since: start)
        }
        if let candidates, pairs.count >= 8 {
            start = ContinuousClock.now
            do {
                let extended = try EpipolarGuidance.extend(pairs, with: candidates, referenceScale: reference.features.analysisScale,
                                                           currentScale: features.analysisScale, thresholdPixels: config.pose.referenceFocal.threshold)
                // A matrix on fewer inliers than the old camera would need (a few dozen wrong matches fit one) does not guide.
                if extended.inliers >= config.pose.referenceFocal.minInliers { pairs = extended.pairs }
            } catch let error as RephotoError where error.kind == .estimationFailed {
                // No fundamental matrix: the first pass's matches stand alone.
            }
            timings.match += milliseconds(since: start)
        }
        var counts = PoseResult.Counts(keypointsReference: reference.features.count, keypointsCurrent: features.count,
                                       matches: pairs.count, inliersHomography: 0, inliersEssential: nil)
        let needed = config.minimumInliers
        let keypoints = "keypoints: reference \(counts.keypointsReference), current \(counts.keypointsCurrent)"
        guard pairs.count >= needed else {
            throw RephotoError.estimationFailed("too few matches: \(pairs.count) (need \(needed)); \(keypoints)")
        }

        start = ContinuousClock.now
        let homography: HomographyEstimate
        if let stages {
            (homography, timings.homography) = try stages.homography(pairs, key: pairsKey, config: config.homography)
            replayed += timings.homography - milliseconds(since: start)
        } else {
            homography = try HomographyEstimate.estimate(pairs, config: config.homography)
            timings.homography = milliseconds(since: start)
        }
        counts.inliersHomography = homography.inlierCount
        let homographyFailure = homography.inlierCount >= needed ? nil
            : "too few homography inliers: \(homography.inlierCount) of \(pairs.count) matches (need \(needed))"

        // An old photo's camera, from this frame's matches: the pose, navigation and sensor path then use it.
        var estimatedCamera: EstimatedReferenceCamera?
        var cameraRefusal: PoseRefusal?
        if reference.cameraUnknown, currentCamera != nil, let shared = reference.sharedEstimate {
            // Several frames' answers combined: this frame's pose is solved on it, and checked at its ± 1 sigma.
            estimatedCamera = shared
            reference = reference.with(camera: CameraIntrinsics(fx: shared.fx, fy: shared.fy, cx: shared.cx, cy: shared.cy, imageSize: reference.size))
        } else if reference.cameraUnknown, let currentCamera {
            start = ContinuousClock.now
            let found = try referenceCameraPolicy.frame(pairs, reference: reference, currentCamera: currentCamera, currentSize: image.fullSize)
            (estimatedCamera, cameraRefusal) = (found.estimate, found.refusal)
            if let determined = found.determined { reference = reference.with(camera: determined) }
            timings.referenceCamera = milliseconds(since: start)
        }

        // The sensor path first: its rotation can corroborate a pose on few inliers.
        let sensor = try attitudes.map { try sensorPath($0, reference: reference, currentSize: image.fullSize, currentCamera: currentCamera) }

        // The pose answers from the essential matrix's own evidence, whatever the homography found.
        var pose: RelativePose?
        var poseFailure: PoseFailure?
        var poseRefusal: PoseRefusal?
        if let referenceCamera = reference.camera, let currentCamera {
            start = ContinuousClock.now
            // Without the phone's rotation, the marks' own (their five-point pose) stands in for it as the prior that
            // settles rivals; the marks are checked against the pose found all the same.
            let priorRotation = sensor?.rotation ?? marks.flatMap { marksRotation($0, reference: referenceCamera, current: currentCamera) }
            let settings = RelativePose.SearchSettings(config.pose, pairs: pairs, sensorRotation: priorRotation,
                                                       sensorVertical: sensor?.referenceVertical)
            var searchMilliseconds: Double?
            let search: RelativePose.SearchOutcome
            if let stages {
                let timed = stages.essential(pairs, key: pairsKey, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                             settings: settings)
                (search, searchMilliseconds) = (timed.value, timed.milliseconds)
            } else {
                search = RelativePose.search(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera, settings: settings)
            }
            let searchEnd = ContinuousClock.now
            do {
                // Assigned only once every check has passed: a refusal leaves no pose behind.
                var decided = try RelativePose.decide(search, pairs: pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                                      homography: homography, config: config.pose, sensorRotation: priorRotation)
                if let estimatedCamera {
                    decided = try referenceCameraPolicy.checkPose(decided, focal: estimatedCamera, pairs: pairs, referenceCamera: referenceCamera,
                                                                  currentCamera: currentCamera, homography: homography, settings: settings,
                                                                  sensorRotation: sensor?.rotation)
                }
                pose = decided
                counts.inliersEssential = pose?.essentialInliers
                warnings += pose?.warnings ?? []
            } catch let error as RephotoError where error.kind == .estimationFailed {
                poseFailure = .failed(error.message)
                poseRefusal = error.refusal
            }
            timings.essential = milliseconds(since: start)
            if let searchMilliseconds {
                // The lookup's own time is replaced by the search's.
                let difference = searchMilliseconds - milliseconds(searchEnd - start)
                replayed += difference
                timings.essential = (timings.essential ?? 0) + difference
            }
        } else if let cameraRefusal {
            poseFailure = .failed(cameraRefusal.description)
            poseRefusal = cameraRefusal
        } else {
            poseFailure = .noIntrinsics
        }

        let parts = Parts(pairs: pairs, homography: homography, homographyFailure: homographyFailure, pose: pose, poseFailure: poseFailure,
                          poseRefusal: poseRefusal, sensor: sensor, counts: counts, warnings: warnings, alignmentWarnings: alignmentWarnings)
        var result = try assemble(parts, reference: reference, currentSize: image.fullSize, currentCamera: currentCamera, attitudes: attitudes,
                                  keypoints: keypoints, timings: timings,
                                  lensZoom: Self.lensZoom(cameraRefusal == nil ? estimatedCamera : nil, reference: reference))
        result.referenceCamera = estimatedCamera ?? reference.heldEstimate
        result.referenceBorder = reference.border
        result.referenceKind = reference.kind
        result.timings.total = milliseconds(since: total) + replayed
        return result
    }

    /// The rotation of the pose through the marks alone (five-point, the best of its solutions on them); nil when
    /// they give none.
    private func marksRotation(_ marks: MarkedPoints, reference: CameraIntrinsics, current: CameraIntrinsics) -> Matrix3? {
        let pairs = marks.correspondences
        let outcome = RelativePose.search(pairs, referenceCamera: reference, currentCamera: current,
                                          settings: RelativePose.SearchSettings(config.pose, pairs: pairs))
        guard case .success(let found) = outcome else { return nil }
        let r = withUnsafeBytes(of: found.pose.R) { Array($0.bindMemory(to: Double.self)) }
        let rotation = Matrix3(r)
        return rotation.isFinite ? rotation : nil
    }

    /// The lens zoom navigation allows for: the old camera's estimate when it was taken (or the one a session holds),
    /// nil for an old photo without one (its lens not determined), 1 for a reference of known camera.
    package static func lensZoom(_ taken: EstimatedReferenceCamera?, reference: ReferenceFrame) -> Double? {
        if let lens = taken ?? reference.heldEstimate { return lens.zoom }
        return reference.cameraUnknown ? nil : 1
    }

    /// Convenience for one pair: prepares the reference and estimates.
    public func estimate(reference: Image, current: Image, camera: CameraIntrinsics?, referenceCamera: CameraIntrinsics? = nil,
                         attitudes: AttitudePair? = nil) throws -> PoseResult {
        let prepared = try prepareReference(reference, camera: referenceCamera ?? camera)
        return try estimate(reference: prepared, current: current, camera: camera, attitudes: attitudes)
    }
}

// What robust and tracked frames share: the sensor path, and the result's derivation from the estimates.
extension PoseEstimator {
    /// The sensor path of a frame: the phone's relative rotation drawn as navigation.
    package func sensorPath(_ attitudes: AttitudePair, reference: ReferenceFrame, currentSize: ImageSize,
                            currentCamera: CameraIntrinsics?) throws -> SensorPath {
        try SensorPath.compute(reference: attitudes.reference, current: attitudes.current, referenceSize: reference.size, currentSize: currentSize,
                               referenceCamera: reference.camera, currentCamera: currentCamera, config: config.sensor,
                               targetFraction: config.navigation.targetFraction)
    }

    /// Why a frame has no pose: none was attempted (no cameras), or the estimation said why not.
    package enum PoseFailure {
        case noIntrinsics
        case failed(String)

        /// The result's warning.
        var warning: String {
            switch self {
            case .noIntrinsics: "no intrinsics: pose not estimated (give a calibration or intrinsics)"
            case .failed(let why): "pose not estimated: \(why)"
            }
        }

        /// The clause an estimation failure's message gains.
        var clause: String {
            switch self {
            case .noIntrinsics: warning
            case .failed(let why): "pose: \(why)"
            }
        }
    }

    /// What a frame's estimation found, before navigation and metrics are derived from it.
    package struct Parts {
        var pairs: Correspondences
        var homography: HomographyEstimate
        /// Why the homography is too weak to navigate by; nil when it is not.
        var homographyFailure: String?
        var pose: RelativePose?
        var poseFailure: PoseFailure?
        var poseRefusal: PoseRefusal?
        var sensor: SensorPath?
        var counts: PoseResult.Counts
        var warnings: [String]
        var alignmentWarnings: [String]
    }

    /// Navigation, metrics and the sensor comparison from a frame's estimates: one rule for robust and tracked frames.
    package func assemble(_ parts: Parts, reference: ReferenceFrame, currentSize: ImageSize, currentCamera: CameraIntrinsics?,
                          attitudes: AttitudePair?, keypoints: String, timings: StageTimings, lensZoom: Double? = 1) throws -> PoseResult {
        var warnings = parts.warnings, alignmentWarnings = parts.alignmentWarnings
        let (pairs, homography, pose, poseFailure, poseRefusal, sensor) = (parts.pairs, parts.homography, parts.pose, parts.poseFailure,
                                                                          parts.poseRefusal, parts.sensor)
        let homographyFailure = parts.homographyFailure
        // Navigation needs a homography; without one, the essential rotation's infinite homography K' R K⁻¹
        // still says where to turn.
        var navigationHomography = homography.matrix
        if let homographyFailure {
            guard let pose, let referenceCamera = reference.camera, let currentCamera,
                  let inverse = referenceCamera.matrix.inverse else {
                let why = poseFailure.map { "; \($0.clause)" } ?? ""
                throw RephotoError(.estimationFailed, "\(homographyFailure)\(why); \(keypoints)", refusal: poseRefusal)
            }
            navigationHomography = (currentCamera.matrix * pose.rotation * inverse).normalizedHomography
            alignmentWarnings.append("\(homographyFailure): navigation from the essential rotation alone (K' R K⁻¹), the translation is not in it")
            warnings.append(alignmentWarnings.last!)
        }
        if let poseFailure {
            warnings.append(poseFailure.warning)
        }

        // A scanned print's photo, not the scan, is what the retake frames: the target is centred in its box, and the
        // score compares the photo's points with the frame's.
        let photo = reference.border.map { (size: $0.size, origin: Point2(x: Double($0.x), y: Double($0.y)),
                                            offset: Matrix3([1, 0, Double($0.x), 0, 1, Double($0.y), 0, 0, 1])) }
        let navigation = Navigation.compute(homography: navigationHomography * (photo?.offset ?? .identity), referenceSize: photo?.size ?? reference.size,
                                            currentSize: currentSize, config: config.navigation, lensZoom: lensZoom)
        if !navigation.quadrilateral.isConvex {
            alignmentWarnings.append("the mapped reference rectangle is not convex: the homography is implausible for navigation")
            warnings.append(alignmentWarnings.last!)
        }
        // A homography under minimumInliers may rest on mismatches: an accepted pose's inliers carry the metrics then.
        // (Not after the rotation-only fallback: its inliers are the homography's.)
        let verified = homographyFailure != nil && pose?.rotationSource == .essential ? pose?.inliers : nil
        if let verified {
            warnings.append("metrics over the \(verified.filter { $0 }.count) essential inliers: the homography has too few")
        }
        let metrics = Metrics.compute(pairs: pairs, homography: homography, referenceSize: photo?.size ?? reference.size,
                                      referenceOrigin: photo?.origin ?? Point2(x: 0, y: 0), currentSize: currentSize, sampsonRmsPixels: pose?.sampsonRmsPixels, essentialInliers: verified)
        var comparison: PathComparison?
        if let attitudes, let path = sensor {
            comparison = PathComparison.compare(sensor: path, reference: attitudes.reference, current: attitudes.current,
                                                visionRotation: pose?.rotation, visionQuadrilateral: navigation.quadrilateral,
                                                currentWidth: currentSize.width, config: config.sensor)
        }
        return PoseResult(referenceSize: reference.size, currentSize: currentSize, homography: navigationHomography,
                          pose: pose.map(PoseResult.PoseSummary.init), poseRefusal: poseRefusal, navigation: navigation, metrics: metrics,
                          counts: parts.counts, sensor: sensor, comparison: comparison, timings: timings,
                          warnings: warnings, alignmentWarnings: alignmentWarnings, correspondences: pairs, homographyInliers: homography.inliers,
                          essentialInliers: pose?.inliers)
    }
}

// The same work off Swift's cooperative threads: an event loop or a server's tasks await it while a
// `ComputePool`'s own threads run OpenCV.
extension PoseEstimator {
    public func prepareReference(_ image: Image, camera: CameraIntrinsics?, mask: Image? = nil, on pool: ComputePool) async throws -> ReferenceFrame {
        try await pool.run { try prepareReference(image, camera: camera, mask: mask) }
    }

    public func estimate(reference: ReferenceFrame, current image: Image, camera: CameraIntrinsics?, mask: Image? = nil,
                         attitudes: AttitudePair? = nil, on pool: ComputePool) async throws -> PoseResult {
        try await pool.run { try estimate(reference: reference, current: image, camera: camera, mask: mask, attitudes: attitudes) }
    }
}
