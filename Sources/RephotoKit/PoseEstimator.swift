import Foundation

/// A reference frame prepared once (features detected, intrinsics adapted) and matched against many
/// current frames. Immutable and `Sendable`: share one instance across threads and tasks.
public final class ReferenceFrame: Sendable {
    public let size: ImageSize
    public let features: Features
    public let camera: CameraIntrinsics?
    /// Time spent detecting the reference features (and building its match index), milliseconds.
    public let detectMilliseconds: Double
    /// Prebuilt FLANN index when the estimator matches with FLANN: built once, searched by every frame.
    public let matchIndex: MatchIndex?

    init(size: ImageSize, features: Features, camera: CameraIntrinsics?, detectMilliseconds: Double, matchIndex: MatchIndex?) {
        self.size = size
        self.features = features
        self.camera = camera
        self.detectMilliseconds = detectMilliseconds
        self.matchIndex = matchIndex
    }
}

/// The vision path between a reference and a current frame: features, matches, homography, navigation,
/// metrics and (with intrinsics) the essential-matrix pose. A value type holding only its configuration,
/// so one estimator may be used from several threads at once.
public struct PoseEstimator: Sendable {
    public let config: PipelineConfig

    public init(config: PipelineConfig = PipelineConfig()) throws {
        try config.validate()
        self.config = config
    }

    /// Detects the reference's features once; `camera` is adapted to the reference's resolution.
    public func prepareReference(_ image: Image, camera: CameraIntrinsics?, mask: Image? = nil) throws -> ReferenceFrame {
        let start = ContinuousClock.now
        let adapted = try camera.map { try $0.adapted(to: image.size) }
        let features = try Features(image: image, config: config.features, mask: mask)
        let index = config.matching.matcher == .flann ? try MatchIndex(reference: features, config: config.matching) : nil
        return ReferenceFrame(size: image.size, features: features, camera: adapted, detectMilliseconds: milliseconds(since: start),
                              matchIndex: index)
    }

    /// Estimates everything for one current frame. Throws `.estimationFailed` (with the counts) when there
    /// is too little signal for a homography; a failed pose only adds a warning. With `attitudes` the sensor
    /// path runs beside the vision path and the two are compared.
    public func estimate(reference: ReferenceFrame, current image: Image, camera: CameraIntrinsics?, mask: Image? = nil,
                         attitudes: AttitudePair? = nil, truth: GroundTruth? = nil) throws -> PoseResult {
        guard reference.features.config == config.features else {
            throw RephotoError.badInput("the reference was prepared with other feature settings than this estimator's")
        }
        let total = ContinuousClock.now
        var timings: [String: Double] = ["detectReference": reference.detectMilliseconds]
        var warnings: [String] = []
        let currentCamera = try camera.map { try $0.adapted(to: image.size) }

        var start = ContinuousClock.now
        let features = try Features(image: image, config: config.features, mask: mask)
        timings["detectCurrent"] = milliseconds(since: start)

        start = ContinuousClock.now
        let pairs = try Matcher.match(reference: reference.features, current: features, config: config.matching, index: reference.matchIndex)
        timings["match"] = milliseconds(since: start)
        var counts = PoseResult.Counts(keypointsReference: reference.features.count, keypointsCurrent: features.count,
                                       matches: pairs.count, inliersHomography: 0, inliersEssential: nil, homographySupport: nil, essentialSupport: nil)
        let needed = config.minimumInliers
        guard pairs.count >= needed else {
            throw RephotoError.estimationFailed(
                "too few matches: \(pairs.count) (need \(needed)); keypoints: reference \(counts.keypointsReference), current \(counts.keypointsCurrent)")
        }

        start = ContinuousClock.now
        let homography = try HomographyEstimate.estimate(pairs, config: config.homography)
        timings["homography"] = milliseconds(since: start)
        counts.inliersHomography = homography.inlierCount
        guard homography.inlierCount >= needed else {
            throw RephotoError.estimationFailed(
                "too few homography inliers: \(homography.inlierCount) of \(pairs.count) matches (need \(needed)); keypoints: reference \(counts.keypointsReference), current \(counts.keypointsCurrent)")
        }

        var pose: RelativePose?
        if let referenceCamera = reference.camera, let currentCamera {
            start = ContinuousClock.now
            do {
                pose = try RelativePose.estimate(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                                 homography: homography, config: config.pose)
                counts.inliersEssential = pose?.essentialInliers
                counts.homographySupport = pose?.homographySupport
                counts.essentialSupport = pose?.essentialSupport
                warnings += pose?.warnings ?? []
            } catch let error as RephotoError where error.kind == .estimationFailed {
                warnings.append("pose not estimated: \(error.message)")
            }
            timings["essential"] = milliseconds(since: start)
        } else {
            warnings.append("no intrinsics: pose not estimated (give a calibration or intrinsics)")
        }

        let navigation = Navigation.compute(homography: homography.matrix, referenceSize: reference.size,
                                            currentSize: image.size, config: config.navigation)
        if !navigation.quadrilateral.isConvex {
            warnings.append("the mapped reference rectangle is not convex: the homography is implausible for navigation")
        }
        let metrics = Metrics.compute(pairs: pairs, homography: homography, referenceSize: reference.size,
                                      currentSize: image.size, sampsonRmsPixels: pose?.sampsonRmsPixels)
        let errors = truth.map {
            GroundTruthErrors.compute(truth: $0, rotation: pose?.rotation, translation: pose?.translation,
                                      homography: homography.matrix, referenceSize: reference.size)
        }
        var sensor: SensorPath?
        var comparison: PathComparison?
        if let attitudes {
            let path = try SensorPath.compute(reference: attitudes.reference, current: attitudes.current,
                                              referenceSize: reference.size, currentSize: image.size,
                                              referenceCamera: reference.camera, currentCamera: currentCamera,
                                              config: config.sensor, targetFraction: config.navigation.targetFraction)
            sensor = path
            comparison = PathComparison.compare(sensor: path, reference: attitudes.reference, current: attitudes.current,
                                                visionRotation: pose?.rotation, visionQuadrilateral: navigation.quadrilateral,
                                                currentWidth: image.width, truth: truth?.rotation, config: config.sensor)
        }
        timings["total"] = milliseconds(since: total) + reference.detectMilliseconds
        return PoseResult(referenceSize: reference.size, currentSize: image.size, homography: homography.matrix,
                          pose: pose.map(PoseResult.PoseSummary.init), navigation: navigation, metrics: metrics,
                          counts: counts, errors: errors, sensor: sensor, comparison: comparison, timings: timings,
                          warnings: warnings, correspondences: pairs, homographyInliers: homography.inliers)
    }

    /// Convenience for one pair: prepares the reference and estimates.
    public func estimate(reference: Image, current: Image, camera: CameraIntrinsics?, referenceCamera: CameraIntrinsics? = nil,
                         attitudes: AttitudePair? = nil, truth: GroundTruth? = nil) throws -> PoseResult {
        let prepared = try prepareReference(reference, camera: referenceCamera ?? camera)
        return try estimate(reference: prepared, current: current, camera: camera, attitudes: attitudes, truth: truth)
    }
}

func milliseconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}
