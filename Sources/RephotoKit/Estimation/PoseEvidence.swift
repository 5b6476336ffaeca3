import RephotoShim

/// What the essential-matrix estimate rests on: the numbers the gate and the model selection read, reported
/// with the pose so a caller can see how firm it is (docs/json-output.md).
public struct PoseEvidence: Codable, Equatable, Sendable {
    /// LO-MSAC samples solved, the sample screen's rejections not counted (0 for OpenCV's estimators).
    public var iterations: Int
    /// Correspondences within the threshold of E, and those of them triangulated in front of both cameras.
    public var inliers: Int
    public var inFront: Int
    /// Inliers whose parallax exceeds RP_WELL_TRIANGULATED_SIGMAS of its error (their depth's sign is not noise; the
    /// error from the inliers' noise scale, at least RP_LOCALISATION_FLOOR_PIXELS),
    /// those of them in front of both cameras, and log10 of the chance of as many in front, each a fair coin.
    public var wellTriangulated: Int
    public var wellInFront: Int
    public var cheiralityLog10Chance: Double
    /// 1-sigma uncertainty (largest axis) from the inliers' Sampson-error Hessian, degrees.
    public var rotationSigmaDegrees: Double
    public var translationSigmaDegrees: Double
    /// Median angle between the rotated reference bearing and the current bearing over the inliers: the
    /// parallax the translation is seen through.
    public var parallaxDegrees: Double
    /// Robust scale of the inliers' Sampson errors, full-resolution pixels.
    public var noisePixels: Double
    /// Torr's GRIC of the essential matrix and of a homography on the inliers: the lower is the model the
    /// data supports better.
    public var gricEssential: Double
    public var gricHomography: Double
    /// Inliers a pure rotation (fitted to them) transfers within RP_TRANSFER_PER_SAMPSON (1.77) times the threshold.
    public var rotationSupport: Int
    /// GRIC of that pure rotation, a homography of 3 parameters (same inliers and noise scale as
    /// `gricHomography`): not above the homography's, a rotation explains the inliers as well as a plane does.
    public var gricRotation: Double
    /// log10 of the expected number of inlier sets as large among matches with no geometric relation.
    public var log10Chance: Double
    /// The rivals are the runners-up the search optimises (`pose.runnersUp`), and the pose the
    /// plane's other solution replaced: how much worse the best of them 10° or more from the pose fits (MSAC
    /// cost over the squared threshold: inliers' worth), and how far it is (the larger of its rotation and
    /// translation angles); negative when the sensor chose the pose over a runner-up that fits better. `nil`
    /// when there is none.
    public var rivalExcess: Double?
    public var rivalDegrees: Double?
    /// On a plane the essential matrix has two solutions (the homography's decompositions) and only points
    /// off the plane refute the wrong one: the inliers the other solution rejects, minus the correspondences
    /// it alone accepts. `nil` when the inliers' homography gives no other solution.
    public var twinRefutation: Int?
    /// Angle between the pose's rotation and the phone's relative rotation, degrees; `nil` without attitudes.
    public var sensorDisagreementDegrees: Double?
    /// The same for the rival's rotation; `nil` without attitudes or without a rival.
    public var rivalSensorDisagreementDegrees: Double?
    /// The same for the rotation of the plane's other solution; `nil` without attitudes or without one.
    public var twinSensorDisagreementDegrees: Double?
    /// A pose over `pose.maxChance` but under `pose.maxReproducedChance` is searched for again
    /// (`pose.reproductions`, other seeds, `pose.reproductionMisses` of them may miss): the rotation within
    /// which the required number of those searches' poses landed (the n-th nearest for n required), degrees
    /// (180 when fewer found any). `nil` when none ran.
    public var reproductionDegrees: Double?
    /// `true` when the pose came from the sensor-guided search (`pose.sensorGuidedSamples`): `log10Chance` then
    /// counts that search's samples, and the pose passes on it under `pose.maxGuidedChance`, never on the
    /// sensor's agreement (the search looked only near the sensor). `nil` otherwise.
    public var sensorGuided: Bool?

    init(_ pose: rp_relative_pose) {
        iterations = Int(pose.iterations)
        inliers = Int(pose.inliers)
        inFront = Int(pose.in_front)
        wellTriangulated = Int(pose.well_triangulated)
        wellInFront = Int(pose.well_in_front)
        cheiralityLog10Chance = pose.cheirality_log10_chance
        rotationSigmaDegrees = pose.rotation_sigma_degrees.isFinite ? pose.rotation_sigma_degrees : 180
        translationSigmaDegrees = pose.translation_sigma_degrees.isFinite ? pose.translation_sigma_degrees : 180
        parallaxDegrees = pose.parallax_degrees
        noisePixels = pose.noise_pixels
        gricEssential = pose.gric_essential
        gricHomography = pose.gric_homography
        gricRotation = pose.gric_rotation
        log10Chance = pose.log10_chance
        rotationSupport = Int(pose.rotation_support)
        rivalExcess = pose.rival_excess.isFinite ? pose.rival_excess : nil
        rivalDegrees = pose.rival_excess.isFinite ? pose.rival_degrees : nil
        twinRefutation = pose.has_twin != 0 ? Int(pose.twin_refutation) : nil
        reproductionDegrees = pose.reproductions > 0 ? min(pose.reproduction_degrees, 180) : nil
        sensorGuided = pose.guided != 0 ? true : nil
    }

    /// General motion, a plane (GRIC prefers the homography and too few inliers off it refute the plane's
    /// other solution), or a rotation: no translation seen through the inliers.
    public enum Model: String, Codable, Sendable {
        case general, rotationOnly = "rotation_only", planar
    }

    /// Rotation-only when no translation is seen through the inliers: most of them show no parallax beyond their
    /// noise (not well triangulated, RP_WELL_TRIANGULATED_SIGMAS), or a pure rotation explains them and either GRIC
    /// rates it no worse than the essential matrix (which it charges for the translation's two parameters) or the
    /// translation's own 1-sigma is over `maxTranslationSigma`. Not a parallax bound in degrees: moving along the
    /// optical axis leaves little parallax (median 0.74° on a car-mounted pair) yet fixes the direction within 0.1°.
    /// A pure rotation explains the inliers when it transfers RP_ROTATION_SUPPORT_FRACTION of them, or GRIC rates
    /// it no worse than the plane's homography: under a pure rotation E's translation is arbitrary, and mismatches
    /// along its epipolar lines join the inliers (OpenCV's Suzanne, a pure 30° turn: 54 of 64-70 a rotation's, and
    /// those mismatches alone well triangulated, which also fix E's translation to ±0.2°).
    /// Planar when GRIC prefers the homography and the points off the plane hardly refute its other solution (yet a
    /// handful off it can single out the pose: 92 inliers, 10 net, translation within 0.2°); without parallax a
    /// plane whose rotation does not explain the inliers stays planar: its wrong solution can turn the camera's step
    /// into a rotation that leaves no parallax.
    public func model(maxTranslationSigma: Double, minTwinRefutation: Int) -> Model {
        let rotationExplains = Double(rotationSupport) >= RP_ROTATION_SUPPORT_FRACTION * Double(inliers) || gricRotation <= gricHomography
        let planar = gricHomography < gricEssential && (twinRefutation.map { $0 < minTwinRefutation } ?? false)
        if 2 * wellTriangulated < inliers {
            return rotationExplains || !planar ? .rotationOnly : .planar
        }
        if rotationExplains && (gricRotation <= gricEssential || translationSigmaDegrees > maxTranslationSigma) {
            return .rotationOnly
        }
        return planar ? .planar : .general
    }

    /// Whether the cheirality of the well-triangulated inliers rules this pose out: too few of them in front to
    /// tell from chance, once there are enough of them to judge (RP_CHEIRALITY_MIN_POINTS). A fixed share of all
    /// inliers would judge points whose depth sign is noise (a consecutive pair at 1131 of 1417, 1.75° right).
    public var cheiralityRefutes: Bool {
        wellTriangulated >= Int(RP_CHEIRALITY_MIN_POINTS) && cheiralityLog10Chance > RP_CHEIRALITY_LOG10_CHANCE
    }

    /// The phone's rotation settles an ambiguity between the pose and another answer (a rival, the plane's other
    /// solution; `other`: the sensor's angle to it) when it corroborates the pose and lies over twice that
    /// tolerance from the other answer.
    public func sensorSettles(against other: Double?, maxSensorDisagreement: Double) -> Bool {
        guard let pose = sensorDisagreementDegrees, let other else { return false }
        return pose <= maxSensorDisagreement && other > 2 * maxSensorDisagreement
    }

    /// The same for the plane's two solutions.
    public func sensorSettlesTwin(maxSensorDisagreement: Double) -> Bool {
        sensorSettles(against: twinSensorDisagreementDegrees, maxSensorDisagreement: maxSensorDisagreement)
    }
}
