import Foundation

/// Why the pose gate reported no pose: a cause with the numbers it was decided on. The text is made from
/// these only where it is shown (`description`); the evaluator and the tuner count refusals by `cause`.
public enum PoseRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// The essential-matrix search found no model (too few correspondences, every sample degenerate): its message.
    case noModel(String)
    case tooFewInliers(inliers: Int, required: Int)
    /// An inlier count unrelated matches could reach, which neither the sensor nor searches run again vouched for.
    case chance(inliers: Int, log10Chance: Double, maxChance: Double, sensor: SensorCheck?, reproduction: ReproductionCheck?)
    /// The sensor-guided search's pose (`pose.sensorGuidedSamples`): too weak over its samples, or off the sensor.
    case guidedChance(samples: Int, inliers: Int, log10Chance: Double, maxGuidedChance: Double)
    case guidedOffSensor(samples: Int, inliers: Int, log10Chance: Double, degrees: Double, maxSensorDisagreement: Double)
    /// A median parallax no pair of views of one scene has: the views would face each other.
    case implausibleParallax(parallax: Double, inliers: Int, maxParallax: Double)
    /// Another answer fits about as well, and the sensor, if any, does not settle it.
    case ambiguous(Ambiguity, sensor: SensorView?)
    case rotationUncertain(sigma: Double, inliers: Int, maxRotationSigma: Double)
    /// Of the inliers triangulated well enough for their side of the cameras to show, no more lie in front than
    /// chance would put there (RP_CHEIRALITY_LOG10_CHANCE): this is not the pose the scene was seen from.
    case behindCameras(inFront: Int, wellTriangulated: Int, log10Chance: Double)
    /// A reference from an unknown camera whose focal length these matches do not determine: why, in words.
    case referenceCameraUndetermined(String)

    /// Stable names (the evaluator's `pose_refusal` column, summaries, the tuner).
    public enum Cause: String, Codable, Sendable, CaseIterable {
        case noModel = "no_model", tooFewInliers = "too_few_inliers", chance, guidedChance = "guided_chance"
        case guidedOffSensor = "guided_off_sensor", implausibleParallax = "implausible_parallax"
        case ambiguousRival = "ambiguous_rival", ambiguousTwin = "ambiguous_twin", rotationUncertain = "rotation_uncertain"
        case behindCameras = "behind_cameras"
        case referenceCameraUndetermined = "reference_camera_undetermined"
    }

    public var cause: Cause {
        switch self {
        case .noModel: .noModel
        case .tooFewInliers: .tooFewInliers
        case .chance: .chance
        case .guidedChance: .guidedChance
        case .guidedOffSensor: .guidedOffSensor
        case .implausibleParallax: .implausibleParallax
        case .ambiguous(.rival, _): .ambiguousRival
        case .ambiguous: .ambiguousTwin
        case .rotationUncertain: .rotationUncertain
        case .behindCameras: .behindCameras
        case .referenceCameraUndetermined: .referenceCameraUndetermined
        }
    }

    /// What the phone's rotation said of a weak count: too weak to corroborate, or too far from the pose.
    public enum SensorCheck: Equatable, Sendable {
        case tooWeak(maxCorroboratedChance: Double)
        case disagrees(degrees: Double, maxSensorDisagreement: Double)
    }

    /// The searches run again (`pose.reproductions`): how near the required number of them landed.
    public struct ReproductionCheck: Equatable, Sendable {
        public var searches: Int
        public var degrees: Double
        public var maxDegrees: Double
        public var misses: Int
    }

    /// The other answer an ambiguity is with.
    public enum Ambiguity: Equatable, Sendable, CustomStringConvertible {
        /// A runner-up `degrees` away within `excess` inliers' worth (`limit`; below 0 when it fits better);
        /// `sensorChose`: it fits better, and the sensor chose the pose (`PoseEvidence.rivalStanding`).
        case rival(degrees: Double, excess: Double, limit: Double, iterations: Int, sensorChose: Bool)
        /// No parallax under the pose, and the plane's other solution, `degrees` away in rotation, hardly refuted.
        case twinWithoutParallax(parallax: Double, degrees: Double, refutation: Int, minRefutation: Int)
        /// Points off the plane favour the plane's other solution by `count` net correspondences.
        case twinFavoured(count: Int)

        /// The other answer's name in the sensor's comment.
        var other: String {
            if case .rival = self { return "rival" }
            return "other solution"
        }

        public var description: String {
            switch self {
            case let .rival(degrees, excess, limit, iterations, sensorChose) where sensorChose:
                String(format: "ambiguous: a pose %.0f° away fits %.2f inliers' worth better than this one (pose.sensorRivalExcess %g), after %d samples",
                       degrees, -excess, limit, iterations)
            case let .rival(degrees, excess, limit, iterations, _):
                String(format: "ambiguous: a pose %.0f° away fits within %.2f inliers' worth of this one (pose.minRivalExcess %g), after %d samples",
                       degrees, excess, limit, iterations)
            case let .twinWithoutParallax(parallax, degrees, refutation, minRefutation):
                String(format: "ambiguous: no parallax under this pose (median %.2f°), but the plane's other solution, %.0f° away in rotation, is refuted by only %d net correspondences (pose.minTwinRefutation %d)",
                       parallax, degrees, refutation, minRefutation)
            case let .twinFavoured(count):
                String(format: "ambiguous: %d net correspondences off the inliers' plane favour the plane's other solution over this pose", count)
            }
        }
    }

    /// The sensor's angles to the pose and to the other answer, which did not settle an ambiguity.
    public struct SensorView: Equatable, Sendable {
        public var poseDegrees: Double
        public var otherDegrees: Double
        public var tolerance: Double
    }

    public var description: String {
        switch self {
        case let .noModel(message), let .referenceCameraUndetermined(message):
            return message
        case let .tooFewInliers(inliers, required):
            return "only \(inliers) essential inliers (need \(required), pose.minInliers)"
        case let .chance(inliers, log10Chance, maxChance, sensor, reproduction):
            var parts = [String(format: "the %d essential inliers could be chance: unrelated matches would give as many 10^%.1f times (pose.maxChance %g)",
                                inliers, log10Chance, maxChance)]
            switch sensor {
            case .tooWeak(let limit)?:
                parts.append(String(format: "too weak for the sensor to corroborate (pose.maxCorroboratedChance %g)", limit))
            case let .disagrees(degrees, limit)?:
                parts.append(String(format: "the sensor's rotation is %.1f° from the pose's (pose.maxSensorDisagreement %g°)", degrees, limit))
            case nil: break
            }
            if let r = reproduction {
                parts.append(r.searches > 1
                    ? String(format: "searches run again: the %d nearest to the pose landed within %.1f° (pose.maxReproductionDegrees %g°, pose.reproductionMisses %d)",
                             r.searches, r.degrees, r.maxDegrees, r.misses)
                    : String(format: "searches run again: the nearest to the pose landed %.1f° away (pose.maxReproductionDegrees %g°, pose.reproductionMisses %d)",
                             r.degrees, r.maxDegrees, r.misses))
            }
            return parts.joined(separator: "; ")
        case let .guidedChance(samples, inliers, log10Chance, limit):
            return Self.guided(samples, inliers, log10Chance) + String(format: ", over pose.maxGuidedChance %g: they could be chance", limit)
        case let .guidedOffSensor(samples, inliers, log10Chance, degrees, limit):
            return Self.guided(samples, inliers, log10Chance)
                + String(format: ", but the pose ended %.1f° from the sensor's rotation (pose.maxSensorDisagreement %g°)", degrees, limit)
        case let .implausibleParallax(parallax, inliers, limit):
            return String(format: "implausible pose: median parallax %.0f° of the %d inliers (pose.maxParallax %g°); the views would face each other",
                          parallax, inliers, limit)
        case let .ambiguous(ambiguity, sensor):
            return ambiguity.description + (sensor.map {
                String(format: "; the sensor's rotation is %.1f° from the pose's and %.1f° from the ", $0.poseDegrees, $0.otherDegrees)
                    + ambiguity.other + String(format: "'s, which does not settle it (pose.maxSensorDisagreement %g°)", $0.tolerance)
            } ?? "")
        case let .rotationUncertain(sigma, inliers, limit):
            return String(format: "rotation too uncertain: ±%.2f° (1 sigma; pose.maxRotationSigma %g°) from %d inliers", sigma, limit, inliers)
        case let .behindCameras(inFront, well, log10Chance):
            return String(format: "inconsistent pose: only %d of the %d well-triangulated essential inliers lie in front of both cameras, as many as chance would put there 10^%.1f of the time",
                          inFront, well, log10Chance)
        }
    }

    /// How a guided search's pose is described: where it was found and on how much.
    static func guided(_ samples: Int, _ inliers: Int, _ log10Chance: Double) -> String {
        String(format: "found near the sensor's rotation (pose.sensorGuidedSamples %d): %d essential inliers, chance 10^%.1f over those samples",
               samples, inliers, log10Chance)
    }
}

/// Why a pose's translation direction is reported as undetermined (null), beside its warning.
public enum UndeterminedTranslation: String, Codable, Equatable, Sendable, CaseIterable {
    /// A pure rotation explains the inliers: no baseline to see the translation through.
    case rotationOnly = "rotation_only"
    /// A plane whose two solutions the points off it do not separate.
    case planar
    /// Its 1-sigma uncertainty is over `pose.maxTranslationSigma`.
    case uncertain
    /// Passed on the sensor's word, which vouches for the rotation only, and not reproduced by searches run again.
    case unreproduced
}
