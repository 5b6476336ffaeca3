import Foundation
import RephotoShim

/// Settings of the reference camera's estimation (`pose.referenceFocal.*`), for a reference from an unknown camera.
public struct ReferenceFocalConfig: Equatable, Sendable {
    /// Inlier distance of the scanned relative poses and the rotation homography, pixels.
    public var threshold: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.threshold)
    /// The scan's robust search at each focal length: samples solved at most and at least, and its sampler's seed.
    public var maxIterations: Int = ParameterRegistry.defaultValue(\.pose.referenceFocal.maxIterations)
    public var minIterations: Int = ParameterRegistry.defaultValue(\.pose.referenceFocal.minIterations)
    public var seed: Int = ParameterRegistry.defaultValue(\.pose.referenceFocal.seed)
    /// The focal length comes from a rotation when a homography that is one (within `maxRotationGap`) holds at least this
    /// share of a fundamental matrix's inliers.
    public var rotationShare: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.rotationShare)
    public var maxRotationGap: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.maxRotationGap)
    /// A homography that is no rotation holding at least this share of a fundamental matrix's inliers: one plane, which
    /// fixes no focal length (`ReferenceCameraPolicy.plane`).
    public var planeShare: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.planeShare)
    /// The principal point's prior 1 sigma about the centre, % of the reference's longer side: it is estimated with the
    /// focal length where the relative pose allows, and the focal length's sigma includes its spread.
    public var principalPointSigma: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.principalPointSigma)
    /// Fewer inliers of the model the focal length comes from leave it undetermined: a fundamental matrix fits a
    /// few dozen unrelated matches too.
    public var minInliers: Int = ParameterRegistry.defaultValue(\.pose.referenceFocal.minInliers)
    /// The least 1 sigma (%) a focal length is given: its model's error, which the residuals do not show.
    public var minSigmaPercent: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.minSigmaPercent)
    /// Above this spread (1 sigma, % of the focal length) the focal length is undetermined and no pose is reported.
    public var maxSigmaPercent: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.maxSigmaPercent)
    /// A translation the focal length turns is taken from the epipole when a pose within its 1 sigma agrees with it
    /// within this many degrees (0: never).
    public var epipoleAgreement: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.epipoleAgreement)
    /// The most a pose's rotation may turn when the focal length moves by its 1 sigma, degrees: past it no pose is
    /// reported, past half of it the pose carries a warning.
    public var maxRotationShift: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.maxRotationShift)
    /// The scanned focal lengths whose pose fits within this many inliers' worth of the best span the answer; half that
    /// span (in log, %) past `maxSigmaPercent` leaves the focal length undetermined.
    public var spanInliers: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.spanInliers)
    /// Where several frames share one reference (`rephoto evaluate`), the answers of at least this many are combined
    /// into one camera (`SharedReferenceCamera`) and every frame is estimated again on it; 0: never.
    public var shareMinFrames: Int = ParameterRegistry.defaultValue(\.pose.referenceFocal.shareMinFrames)
    /// The least focal sigma (%) a frame's answer is weighed with when answers are combined.
    public var shareSigmaFloor: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.shareSigmaFloor)
    /// How the focal length of cameras apart is found: the scan over focal lengths, the six-point loop with the focal
    /// length free (then the joint refinement), or both, keeping the better fit.
    public var solver: ReferenceFocalSolver = ParameterRegistry.defaultValue(\.pose.referenceFocal.solver)
    /// The six-point loop's samples solved, at most.
    public var sixPointIterations: Int = ParameterRegistry.defaultValue(\.pose.referenceFocal.sixPointIterations)
    /// The focal length's sigma from its model's covariance, times this: the factor that makes its 1 sigma cover the
    /// error on about 68 % of pairs (calibrated on scripts/bench-old-photos).
    public var sigmaScale: Double = ParameterRegistry.defaultValue(\.pose.referenceFocal.sigmaScale)

    public init() {}

    /// The shim's settings for a reference whose photo's longer side is `side` pixels (the focal lengths searched
    /// are `ReferenceFocal.searchedFocal` times it).
    func shimParameters(side: Double) throws -> rp_focal_params {
        rp_focal_params(threshold_pixels: threshold, min_focal: ReferenceFocal.searchedFocal.lowerBound * side,
                        max_focal: ReferenceFocal.searchedFocal.upperBound * side, principal_point_sigma: principalPointSigma / 100,
                        span_inliers: spanInliers, max_iterations: try cInt(maxIterations, "pose.referenceFocal.maxIterations"),
                        min_iterations: try cInt(minIterations, "pose.referenceFocal.minIterations"), seed: UInt64(seed),
                        six_point_iterations: try cInt(sixPointIterations, "pose.referenceFocal.sixPointIterations"))
    }
}

/// How the focal length of a reference's camera apart from the current one is found (`pose.referenceFocal.solver`).
public enum ReferenceFocalSolver: String, Codable, CaseIterable, Sendable {
    /// A robust essential-matrix search at each focal length of a grid, the best refined on its inliers.
    case scan
    /// Six-point samples with the focal length free inside the robust loop, so the inliers are chosen with it free;
    /// then rotation, translation, focal length and principal point refined together.
    case sixPoint
    /// Both; the one whose model has the lower truncated cost over every correspondence.
    case better
}

/// The camera of a reference photo nobody calibrated (an old print), estimated from its correspondences with the
/// calibrated current camera: the focal length whose robust relative pose fits the correspondences best (the cameras
/// apart; a scan over focal lengths, then refined on the inliers) or from a homography that is a rotation (the cameras
/// at one place); the principal point near the image's centre (estimated with the focal length under a prior where the
/// relative pose allows), square pixels, no distortion.
public struct ReferenceFocal: Sendable, Equatable {
    /// Where the focal length came from. `fundamental` (its JSON name since it came from a fundamental matrix) is the
    /// relative pose of cameras apart.
    public enum Model: String, Codable, Sendable {
        case fundamental, rotation

        /// For people: "the relative pose" or "a rotation".
        public var name: String { self == .rotation ? "a rotation" : "the relative pose" }
    }

    /// The camera found, in the reference image's pixels.
    public var camera: CameraIntrinsics
    /// The focal length's 1 sigma, % (infinite: undetermined), from the curvature of the inliers' residuals over it.
    public var focalSigmaPercent: Double
    public var model: Model
    public var inliers: Int
    /// The photo's part of the reference image (inside a print's border), whose centre is the principal point's prior.
    public var photoSize: ImageSize
    /// The scanned focal lengths whose pose fits within `spanInliers` inliers' worth of the best, reference pixels (the
    /// focal length found, from a rotation).
    public var span: ClosedRange<Double>
    /// Half of `span` in log, % of the focal length: how far a rival fitting nearly as well lies.
    public var spanPercent: Double { 100 * log(span.upperBound / span.lowerBound) / 2 }
    /// How much of the scene one homography explains: its inliers and a fundamental matrix's, fitted side by side
    /// (a rotation's, when `model` is `.rotation`; a plane's or nothing in particular otherwise).
    public var homographyInliers = 0
    public var fundamentalInliers = 0
    /// How far that homography is from a rotation at its best focal length (0: one; `pose.referenceFocal.maxRotationGap`).
    public var rotationGap = Double.infinity

    /// Focal lengths searched, in units of the reference's longer side: from a 118° to a 5.7° field of view across it.
    static let searchedFocal = 0.3...10.0

    /// Throws `.estimationFailed` when fewer than eight correspondences or neither model gives a focal length.
    /// `border`: the print's border around the photo, whose box then stands for the image (its centre the principal point's prior).
    public static func estimate(_ pairs: Correspondences, referenceSize: ImageSize, border: PrintBorder? = nil, currentCamera: CameraIntrinsics,
                                config: ReferenceFocalConfig) throws -> ReferenceFocal {
        let origin = border.map { Point2(x: Double($0.x), y: Double($0.y)) } ?? Point2(x: 0, y: 0)
        let photo = border?.size ?? referenceSize
        let stages = try ReferenceFocalStages(pairs, origin: origin, photoSize: photo, currentCamera: currentCamera, config: config)
        let answer = try ReferenceFocalDecision.decide(stages, config: config)
        let center = (x: origin.x + answer.principalPoint.x, y: origin.y + answer.principalPoint.y)
        return ReferenceFocal(camera: CameraIntrinsics(fx: answer.focal, fy: answer.focal, cx: center.x, cy: center.y, imageSize: referenceSize),
                              focalSigmaPercent: max(answer.sigmaPercent * config.sigmaScale, config.minSigmaPercent), model: answer.model,
                              inliers: answer.inliers, photoSize: photo, span: answer.span, homographyInliers: answer.homographyInliers,
                              fundamentalInliers: answer.fundamentalInliers, rotationGap: answer.rotationGap)
    }
}

/// A reference camera estimated for a frame, as results report it (`referenceCamera` in docs/json-output.md).
public struct EstimatedReferenceCamera: Encodable, Equatable, Sendable {
    public var fx: Double
    public var fy: Double
    public var cx: Double
    public var cy: Double
    public var estimated = true
    public var focalSigmaPercent: Double
    public var model: ReferenceFocal.Model
    public var inliers: Int
    /// The current camera's zoom that frames what the reference shows: its field of view over the reference's, along
    /// the side that constrains (> 1: the old photo's lens was longer).
    public var zoom: Double
    /// How many frames' answers this camera combines (`SharedReferenceCamera`); absent when the frame estimated it alone.
    public var frames: Int?

    public init(_ focal: ReferenceFocal, currentCamera: CameraIntrinsics, currentSize: ImageSize) {
        fx = focal.camera.fx
        fy = focal.camera.fy
        cx = focal.camera.cx
        cy = focal.camera.cy
        focalSigmaPercent = focal.focalSigmaPercent
        model = focal.model
        inliers = focal.inliers
        let reference = focal.photoSize
        zoom = min(Double(currentSize.width) / currentCamera.fx / (Double(reference.width) / fx),
                   Double(currentSize.height) / currentCamera.fy / (Double(reference.height) / fy))
    }
}
