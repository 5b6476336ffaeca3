import RephotoShim
import Foundation

/// Relative camera pose in the convention X_current = R X_reference + t (OpenCV camera frames).
public struct RelativePose: Sendable {
    public enum RotationSource: String, Codable, Sendable {
        /// recoverPose on the essential matrix.
        case essential
        /// Rotation-only model fitted to the homography inliers: used when the essential matrix gives no pose
        /// (no baseline, so no point can be triangulated in front of the cameras).
        case homography
        /// A guidance session's frame placed among the structure a keyframe triangulated (`SceneStructure`): the
        /// translation is then fixed by that structure, however close the frame is to the reference.
        case placement
    }

    public var rotation: Matrix3
    /// On rotation-only pairs: a pure rotation fitted to the inliers (orthogonal Procrustes on their
    /// undistorted bearings), beside `rotation`. The essential rotation stays the estimate because a
    /// rotation-only fit absorbs any remaining parallax.
    public var pureRotation: Matrix3?
    /// Unit direction; nil when undetermined (rotation-only, planar, or too uncertain).
    public var translation: SIMD3<Double>?
    /// Why `translation` is nil, when it is.
    public var translationUndetermined: UndeterminedTranslation?
    /// The pure rotation explains the inliers best (GRIC), or the essential matrix gave no pose at all.
    public var rotationOnly: Bool
    public var rotationSource: RotationSource
    public var essentialInliers: Int
    /// Essential inliers triangulated in front of both cameras.
    public var inFront: Int
    public var sampsonRmsPixels: Double
    /// One flag per correspondence: within the threshold of E.
    public var inliers: [Bool]
    /// nil when the rotation came from the homography inliers.
    public var evidence: PoseEvidence?
    public var warnings: [String]

    public var rotationDegrees: Double { rotation.rotationAngleDegrees }
}

extension RelativePose {
    /// The essential-matrix pose (LO-MSAC by default), then the gate on its own evidence and the model
    /// selection between a general motion, a pure rotation and a plane. Throws `.estimationFailed` with the
    /// refusal (`RephotoError.refusal`) when the evidence is too weak to report any pose.
    /// `sensorRotation`: the phone's relative rotation (`SensorPath.rotation`), independent evidence that can
    /// corroborate a pose whose inliers alone are too few (`pose.maxCorroboratedChance`).
    public static func estimate(_ pairs: Correspondences, referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                                homography: HomographyEstimate, config: PoseConfig, sensorRotation: Matrix3? = nil,
                                sensorVertical: SIMD3<Double>? = nil) throws -> RelativePose {
        let search = search(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                            settings: SearchSettings(config, pairs: pairs, sensorRotation: sensorRotation, sensorVertical: sensorVertical))
        return try decide(search, pairs: pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                          homography: homography, config: config, sensorRotation: sensorRotation)
    }

    /// What the essential-matrix search returned: the pose with one inlier flag per correspondence, or why it failed.
    public typealias SearchOutcome = Result<(pose: rp_relative_pose, inliers: [Bool]), RephotoError>

    /// The essential-matrix search alone (the costly, deterministic part of `estimate`).
    public static func search(_ pairs: Correspondences, referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                              settings: SearchSettings) -> SearchOutcome {
        // PROSAC wants the best matches first: the shim sees them sorted by descriptor distance.
        let order = settings.prosac.map { pairs.bestFirst(by: $0) } ?? Array(pairs.reference.indices)
        do {
            let params = try settings.shimParameters()
            let (out, mask) = try PoseStages.with(pairs, order: order, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                                  params: params) { try PoseDecision.search($0, settings: settings) }
            var inliers = [Bool](repeating: false, count: pairs.count)
            for (k, i) in order.enumerated() { inliers[i] = mask[k] != 0 }
            return .success((out, inliers))
        } catch {
            return .failure(RephotoError.wrapping(error))
        }
    }

    /// The gate and the model selection on a search's outcome (see `estimate`).
    public static func decide(_ search: SearchOutcome, pairs: Correspondences, referenceCamera: CameraIntrinsics,
                              currentCamera: CameraIntrinsics, homography: HomographyEstimate, config: PoseConfig,
                              sensorRotation: Matrix3? = nil) throws -> RelativePose {
        try PoseDecision.decide(search, pairs: pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                homography: homography, config: config, sensorRotation: sensorRotation)
    }

    /// The settings the essential-matrix search reads (and nothing the gate reads): its parameters are made
    /// from this, and a `StageCache` keys on it, so a gate-only change reuses the search.
    public struct SearchSettings: Hashable, Sendable {
        /// The search's options whole (a new one joins the key by itself), PROSAC off where it cannot order.
        let search: PoseSearchOptions
        /// The bound on a hypothesis' median parallax (a threshold the search applies to its hypotheses).
        let maxParallax: Double
        /// PROSAC's order, nil for uniform sampling.
        var prosac: ProsacOrder? { search.prosac ? search.prosacOrder : nil }
        /// The sensor's rotation decides between the pose and a runner-up nearly as good when it rules out the
        /// one and backs the other (the tolerances of the gate's rival rule).
        let prior: PoseDecision.Prior?
        /// A pose the chance gate alone would refuse, but `pose.maxReproducedChance` might pass, is searched
        /// for again (the bounds of that window, log10, and the tolerance).
        let reproduction: PoseDecision.Reproduction?

        /// PROSAC only where every correspondence has a descriptor distance to order by. `sensorVertical`: up in
        /// the reference camera's axes (`SensorPath.referenceVertical`); without it, the camera's own vertical.
        public init(_ config: PoseConfig, pairs: Correspondences, sensorRotation: Matrix3? = nil, sensorVertical: SIMD3<Double>? = nil) {
            var search = config.search
            search.prosac = config.prosac && pairs.matches.count == pairs.count
            self.search = search
            maxParallax = config.maxParallax
            prior = PoseDecision.prior(config, sensorRotation: sensorRotation, sensorVertical: sensorVertical)
            reproduction = PoseDecision.reproduction(config, withSensor: sensorRotation != nil)
        }

        /// The search's options as the shim reads them: its loop's and its estimator's (checked there, once:
        /// rp_check_loop_options, for every stage).
        package func shimParameters(portableKernels: Bool = false) throws -> rp_robust_params {
            let essential = search.essential
            let loop = rp_loop_options(threshold: essential.threshold, confidence: essential.confidence,
                                       max_iterations: try cInt(essential.maxIterations, "maxIterations"),
                                       min_iterations: try cInt(search.minIterations, "minIterations"), seed: UInt64(search.seed),
                                       prosac: prosac != nil ? 1 : 0, runners_up: try cInt(search.runnersUp, "runnersUp"),
                                       max_disagreement_degrees: search.maxDisagreement)
            let estimator = rp_essential_options(method: essential.method.code, refine: search.refine ? 1 : 0, cauchy_scale: search.cauchyScale,
                                                 max_parallax_degrees: maxParallax, screen_degrees: search.screenDegrees,
                                                 screen_octaves: search.screenOctaves, portable_kernels: portableKernels ? 1 : 0)
            return rp_robust_params(loop: loop, essential: estimator)
        }
    }

    /// The gate (`PoseDecision.gate`), kept for the callers of this name.
    @discardableResult
    static func gate(_ evidence: PoseEvidence, config: PoseConfig, rivalRotationDegrees: Double? = nil,
                     twinRotationDegrees: Double? = nil) throws -> [String] {
        try PoseDecision.gate(evidence, config: config, rivalRotationDegrees: rivalRotationDegrees, twinRotationDegrees: twinRotationDegrees)
    }
}
