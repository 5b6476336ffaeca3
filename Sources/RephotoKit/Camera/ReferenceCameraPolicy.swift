import Foundation

/// The rules for an old reference's unknown camera, in one place:
/// - per frame: `frame` estimates it from one frame's matches (`ReferenceFocal`) and says whether it holds, and
///   `checkPose` solves a pose on it again at its focal length ± 1 sigma;
/// - per session: `session()` is the camera every robust update's answer joins (`SessionReferenceCamera`);
/// - per sequence: `combine(byReference:)` combines every frame's answer per reference, as `rephoto evaluate` and the
///   bench's match export do, before every frame is estimated again on it.
/// The combination itself is `SharedReferenceCamera`'s; `PoseEstimator` only orders these steps.
public struct ReferenceCameraPolicy: Sendable {
    public let config: PoseConfig

    public init(config: PoseConfig) { self.config = config }

    /// One frame's camera: `estimate` as results report it (nil when none could be made), `determined` the camera to
    /// solve the pose on when it holds, else `refusal` says why not.
    public struct FrameCamera: Sendable {
        public var estimate: EstimatedReferenceCamera?
        public var determined: CameraIntrinsics?
        public var refusal: PoseRefusal?
    }

    /// An unknown reference camera from one frame's matches (`ReferenceFocal`) and the rule that accepts it: `estimate`
    /// as results report it (nil when none could be made), `determined` the camera to solve the pose on when it holds
    /// (`pose.referenceFocal.minInliers`, `maxSigmaPercent`, `spanInliers`), else `refusal` says why not.
    public func frame(_ pairs: Correspondences, reference: ReferenceFrame, currentCamera: CameraIntrinsics, currentSize: ImageSize) throws
        -> FrameCamera {
        let limit = config.referenceFocal.maxSigmaPercent
        let focal: ReferenceFocal
        do {
            focal = try ReferenceFocal.estimate(pairs, referenceSize: reference.size, border: reference.border, currentCamera: currentCamera,
                                                config: config.referenceFocal)
        } catch let error as RephotoError where error.kind == .estimationFailed {
            return FrameCamera(estimate: nil, determined: nil, refusal: .referenceCameraUndetermined("the reference's camera could not be estimated: \(error.message)"))
        }
        let estimate = EstimatedReferenceCamera(focal, currentCamera: currentCamera, currentSize: currentSize)
        let needed = config.referenceFocal.minInliers
        if focal.inliers < needed {
            return FrameCamera(estimate: estimate, determined: nil, refusal: .referenceCameraUndetermined(
                "the reference's camera rests on too few correspondences: \(focal.inliers) inliers of \(focal.model.name) (need \(needed), pose.referenceFocal.minInliers)"))
        } else if let plane = Self.plane(focal, share: config.referenceFocal.planeShare, maxRotationGap: config.referenceFocal.maxRotationGap) {
            return FrameCamera(estimate: estimate, determined: nil, refusal: .referenceCameraUndetermined(
                "the reference's focal length is not determined by a plane: one homography, no rotation, holds \(plane.homography) of a fundamental matrix's \(plane.fundamental) inliers (pose.referenceFocal.planeShare \(fmt(config.referenceFocal.planeShare)))"))
        } else if focal.focalSigmaPercent > limit {
            return FrameCamera(estimate: estimate, determined: nil, refusal: .referenceCameraUndetermined(
                "the reference's focal length is not determined by these matches: \(fmt(focal.camera.fx, 4)) px ± \(fmt(focal.focalSigmaPercent, 2)) % from \(focal.model.name) (pose.referenceFocal.maxSigmaPercent \(fmt(limit)))"))
        } else if focal.spanPercent > limit {
            let within = config.referenceFocal.spanInliers
            return FrameCamera(estimate: estimate, determined: nil, refusal: .referenceCameraUndetermined(
                "the reference's focal length is not determined by these matches: focal lengths from \(fmt(focal.span.lowerBound, 4)) to \(fmt(focal.span.upperBound, 4)) px fit within \(fmt(within)) inliers' worth of the best (pose.referenceFocal.spanInliers), ± \(fmt(focal.spanPercent, 2)) % (pose.referenceFocal.maxSigmaPercent \(fmt(limit)))"))
        }
        return FrameCamera(estimate: estimate, determined: focal.camera, refusal: nil)
    }

    /// The scene is one plane seen from apart when a homography that is no rotation holds `share` of a fundamental
    /// matrix's inliers (`pose.referenceFocal.planeShare`; the fundamental matrix also takes mismatches along its
    /// epipolar lines, so a plane's share stays under 1): its eight degrees of freedom cannot fix the rotation, the
    /// plane's normal and distance and the focal length (nine), so every focal length fits, each with its own pose.
    /// A homography within `maxRotationGap` of a rotation is the cameras nearly at one place (a short step before a deep
    /// scene), which does fix the focal length.
    public static func plane(_ focal: ReferenceFocal, share: Double, maxRotationGap: Double) -> (homography: Int, fundamental: Int)? {
        guard focal.model == .fundamental, focal.fundamentalInliers > 0, !(focal.rotationGap < maxRotationGap),
              Double(focal.homographyInliers) >= share * Double(focal.fundamentalInliers) else { return nil }
        return (focal.homographyInliers, focal.fundamentalInliers)
    }

    /// A pose on an estimated reference camera, solved again at its focal length ± 1 sigma: a rotation that moves
    /// past `pose.referenceFocal.maxRotationShift` refuses the pose, past half of it warns. A translation that moves past `pose.maxTranslationSigma` (or is
    /// lost) is taken from the current image's epipole when one of the three poses agrees with it
    /// (`pose.referenceFocal.epipoleAgreement`), and is reported undetermined otherwise. The pose's own uncertainty
    /// takes the focal length as exact.
    public func checkPose(_ found: RelativePose, focal: EstimatedReferenceCamera, pairs: Correspondences,
                          referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics, homography: HomographyEstimate,
                          settings: RelativePose.SearchSettings, sensorRotation: Matrix3?) throws -> RelativePose {
        var rotation = 0.0, translation = 0.0
        var translations = found.translation.map { [$0] } ?? []
        for factor in [1 - focal.focalSigmaPercent / 100, 1 + focal.focalSigmaPercent / 100] {
            var shifted = referenceCamera
            shifted.fx *= factor
            shifted.fy *= factor
            let outcome = RelativePose.search(pairs, referenceCamera: shifted, currentCamera: currentCamera, settings: settings)
            guard let other = try? RelativePose.decide(outcome, pairs: pairs, referenceCamera: shifted, currentCamera: currentCamera,
                                                       homography: homography, config: config, sensorRotation: sensorRotation) else {
                translation = .infinity
                continue
            }
            rotation = max(rotation, Matrix3.angleDegrees(between: found.rotation, and: other.rotation))
            if let t = other.translation { translations.append(t) }
            if let t0 = found.translation {
                translation = max(translation, other.translation.map { Self.degrees(between: t0, $0) } ?? .infinity)
            }
        }
        let sigma = "the reference's focal length ± \(fmt(focal.focalSigmaPercent, 2)) %"
        let maxShift = config.referenceFocal.maxRotationShift
        if rotation > maxShift {
            throw RephotoError.refused(.referenceCameraUndetermined(
                "the rotation depends on the old camera: \(sigma) turns it \(fmt(rotation, 2))° (pose.referenceFocal.maxRotationShift \(fmt(maxShift)))"))
        }
        var pose = found
        if rotation > maxShift / 2 {
            pose.warnings.append(
                "rotation uncertain with the old camera: \(sigma) turns it \(fmt(rotation, 2))° (over half of pose.referenceFocal.maxRotationShift \(fmt(maxShift))°)")
        }
        if pose.translation != nil, translation > config.maxTranslationSigma,
           let (direction, agreement) = epipoleTranslation(pairs, near: translations, currentCamera: currentCamera) {
            pose.translation = direction
            pose.warnings.append(
                "translation direction from the current image's epipole, which the old camera does not move: \(sigma) turns the pose's \(translation.isFinite ? "\(fmt(translation, 2))°" : "past any answer"), and one of its poses lies \(fmt(agreement, 2))° from the epipole's (pose.referenceFocal.epipoleAgreement \(fmt(config.referenceFocal.epipoleAgreement)))")
        } else if pose.translation != nil, translation > config.maxTranslationSigma {
            pose.translation = nil
            pose.translationUndetermined = .uncertain
            pose.warnings.append(translation.isFinite
                ? "translation direction undetermined: \(sigma) turns it \(fmt(translation, 2))° (pose.maxTranslationSigma \(fmt(config.maxTranslationSigma)))"
                : "translation direction undetermined: at \(sigma) no translation stands")
        }
        return pose
    }

    /// The epipole's translation, signed as the nearest of `candidates` (a pose's translation at the focal length and
    /// at its ± 1 sigma), when that one lies within `pose.referenceFocal.epipoleAgreement` degrees of it; nil otherwise.
    private func epipoleTranslation(_ pairs: Correspondences, near candidates: [SIMD3<Double>],
                                    currentCamera: CameraIntrinsics) -> (direction: SIMD3<Double>, agreementDegrees: Double)? {
        let limit = config.referenceFocal.epipoleAgreement
        guard limit > 0, !candidates.isEmpty,
              let epipole = try? EpipoleTranslation.estimate(pairs, currentCamera: currentCamera, thresholdPixels: config.referenceFocal.threshold)
        else { return nil }
        let e = epipole.direction
        // Sign-free: the epipole is a line, and each candidate has its own sign.
        let nearest = candidates.map { t -> (degrees: Double, sign: Double) in
            let apart = Self.degrees(between: t, e)
            return apart > 90 ? (180 - apart, -1) : (apart, 1)
        }.min { $0.degrees < $1.degrees }!
        guard nearest.degrees <= limit else { return nil }
        return (e * nearest.sign, nearest.degrees)
    }

    /// The angle between two directions, degrees (0-180).
    private static func degrees(between a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double {
        acos(min(1, max(-1, dot(a, b) / (length(a) * length(b))))) * 180 / .pi
    }

    /// A session's camera, before any answer.
    public func session() -> SessionReferenceCamera { SessionReferenceCamera(config: config.referenceFocal) }

    /// A frame's answer for a session's or a sequence's camera: its result when its pose was answered on a camera
    /// estimated for it alone; nil otherwise.
    public func answer(_ result: PoseResult) -> SharedReferenceCamera.Answer? { SharedReferenceCamera.Answer(result) }

    /// Per reference file, the camera its frames' answers combine into (nil with fewer than
    /// `pose.referenceFocal.shareMinFrames`); a frame listed twice answers once (the last answer given for it counts).
    public func combine(byReference answers: [(reference: String, frame: String, answer: SharedReferenceCamera.Answer)])
        -> [String: EstimatedReferenceCamera] {
        SharedReferenceCamera.combine(byReference: answers, config: config.referenceFocal)
    }
}
