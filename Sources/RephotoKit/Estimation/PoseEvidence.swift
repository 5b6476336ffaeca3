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
    /// Whether that rival fits better or worse than the pose (MSAC cost). Only the sensor keeps a pose a rival fits
    /// better (the prior's choice, or the guided search), and the gate then weighs the sensor's word. `nil` when
    /// there is none. Not in the JSON, where `rivalExcess`'s sign shows it.
    public var rivalStanding: RivalStanding?
    public enum RivalStanding: Sendable {
        case fitsWorse, fitsBetter
    }
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

    private enum CodingKeys: String, CodingKey {
        case iterations, inliers, inFront, wellTriangulated, wellInFront, cheiralityLog10Chance, rotationSigmaDegrees
        case translationSigmaDegrees, parallaxDegrees, noisePixels, gricEssential, gricHomography, rotationSupport, gricRotation
        case log10Chance, rivalExcess, rivalDegrees, twinRefutation, sensorDisagreementDegrees, rivalSensorDisagreementDegrees
        case twinSensorDisagreementDegrees, reproductionDegrees, sensorGuided
    }

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
        rivalStanding = pose.rival_excess.isFinite ? (pose.rival_fits_better != 0 ? .fitsBetter : .fitsWorse) : nil
        twinRefutation = pose.has_twin != 0 ? Int(pose.twin_refutation) : nil
        reproductionDegrees = pose.reproductions > 0 ? min(pose.reproduction_degrees, 180) : nil
        sensorGuided = pose.guided != 0 ? true : nil
    }

    /// General motion, a plane (GRIC prefers the homography and too few inliers off it refute the plane's
    /// other solution), or a rotation: no translation seen through the inliers.
    public enum Model: String, Codable, Sendable {
        case general, rotationOnly = "rotation_only", planar
    }

    /// The motion these numbers show (`PoseDecision.model`, where the rule is stated).
    public func model(maxTranslationSigma: Double, minTwinRefutation: Int) -> Model {
        PoseDecision.model(self, maxTranslationSigma: maxTranslationSigma, minTwinRefutation: minTwinRefutation)
    }

    /// Whether the cheirality of the well-triangulated inliers rules this pose out (`PoseDecision.cheiralityRefutes`).
    public var cheiralityRefutes: Bool {
        PoseDecision.cheiralityRefutes(wellTriangulated: wellTriangulated, log10Chance: cheiralityLog10Chance)
    }
}
