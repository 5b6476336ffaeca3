/// The order PROSAC draws matches in, best first: by descriptor distance, or by Lowe's ratio, which puts true
/// matches first more often on hard pairs (Strecha's wide pairs at 1280 px: 25-56 % true matches in the best
/// quarter by ratio, 7-33 % by distance) yet did not answer better overall (docs/decisions.md).
public enum ProsacOrder: String, Codable, CaseIterable, Sendable {
    case ratio, distance
}

/// The essential-matrix pose's settings: the search's options (`PoseSearchOptions`, what the robust loop and the
/// estimator read) and the evidence and decision thresholds (`PoseThresholds`, what `PoseDecision` reads); defaults
/// and ranges are declared in `ParameterRegistry` (the registry's names stay `pose.*`), the reasons in
/// docs/decisions.md. Each field is reached directly (`config.minInliers`) as well as through its group.
@dynamicMemberLookup
public struct PoseConfig: Equatable, Sendable {
    public var search = PoseSearchOptions()
    public var thresholds = PoseThresholds()
    /// A reference from an unknown camera: how its focal length is estimated (`ReferenceFocal`).
    public var referenceFocal = ReferenceFocalConfig()

    public init() {}

    public subscript<T>(dynamicMember keyPath: WritableKeyPath<PoseSearchOptions, T>) -> T {
        get { search[keyPath: keyPath] }
        set { search[keyPath: keyPath] = newValue }
    }

    public subscript<T>(dynamicMember keyPath: WritableKeyPath<PoseThresholds, T>) -> T {
        get { thresholds[keyPath: keyPath] }
        set { thresholds[keyPath: keyPath] = newValue }
    }
}

/// The search's options: the robust loop's and the essential estimator's (the shim's rp_loop_options and
/// rp_essential_options, made by `RelativePose.SearchSettings.shimParameters`).
public struct PoseSearchOptions: Hashable, Sendable {
    public var essential: RobustConfig = RobustConfig(defaultsOf: \.pose.search.essential)
    /// LO-MSAC: samples solved whatever the adaptive bound says, and the sampler's seed.
    public var minIterations: Int = ParameterRegistry.defaultValue(\.pose.search.minIterations)
    public var seed: Int = ParameterRegistry.defaultValue(\.pose.search.seed)
    /// LO-MSAC: when the search reaches its cap uncertified, a second search (another seed, half the cap)
    /// that finds a lower cost further than this rotation (degrees) fails the pose; 0 disables it (the
    /// default: on Strecha it refused four right answers at 1280 px and caught no wrong one).
    public var maxDisagreement: Double = ParameterRegistry.defaultValue(\.pose.search.maxDisagreement)
    /// LO-MSAC: minimal models kept besides the best; those from other basins are optimised (all of them when
    /// the search ends uncertified), and the rival gate looks among them (0: neither).
    public var runnersUp: Int = ParameterRegistry.defaultValue(\.pose.search.runnersUp)
    /// LO-MSAC: a sample is solved only when its keypoints' orientations turn alike within this many degrees
    /// and their scales change alike within `screenOctaves` (0: every sample is solved).
    public var screenDegrees: Double = ParameterRegistry.defaultValue(\.pose.search.screenDegrees)
    public var screenOctaves: Double = ParameterRegistry.defaultValue(\.pose.search.screenOctaves)
    /// LO-MSAC: sample the matches best first (PROSAC, by descriptor distance).
    public var prosac: Bool = ParameterRegistry.defaultValue(\.pose.search.prosac)
    public var prosacOrder: ProsacOrder = ParameterRegistry.defaultValue(\.pose.search.prosacOrder)
    /// Levenberg-Marquardt on the MSAC cost of the Sampson error after the robust estimator.
    public var refine: Bool = ParameterRegistry.defaultValue(\.pose.search.refine)
    /// LO-MSAC with `refine`: the final polish's Cauchy scale, in units of the inliers' robust noise (0: none).
    public var cauchyScale: Double = ParameterRegistry.defaultValue(\.pose.search.cauchyScale)

    public init() {}
}

/// The evidence and decision thresholds `PoseDecision` applies: the gate's, the sensor's and the reproductions' bands,
/// the rival and twin rules and translation determinacy (`maxParallax` also bounds the search's hypotheses).
public struct PoseThresholds: Equatable, Sendable {
    /// The gate: inliers in front of both cameras, at most this chance of an inlier set as large among
    /// unrelated matches, and at most this rotation uncertainty (1 sigma) before any pose is reported.
    public var minInliers: Int = ParameterRegistry.defaultValue(\.pose.thresholds.minInliers)
    public var maxChance: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxChance)
    /// Weak visual evidence corroborated by an independent one: a pose whose chance lies between
    /// `maxChance` and this passes when the phone's relative rotation agrees with it within
    /// `maxSensorDisagreement` degrees (0: never).
    public var maxCorroboratedChance: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxCorroboratedChance)
    public var maxSensorDisagreement: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxSensorDisagreement)
    /// A weak pose the sensor rules out is searched for again near the sensor's rotation (samples; 0: never).
    public var sensorGuidedSamples: Int = ParameterRegistry.defaultValue(\.pose.thresholds.sensorGuidedSamples)
    /// A guided pose over `maxChance` passes under this chance, counted over the guided search's samples.
    public var maxGuidedChance: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxGuidedChance)
    /// Weak visual evidence reproduced: a pose whose chance lies between `maxChance` and this passes when
    /// `reproductions` more searches (other seeds) land within `maxReproductionDegrees` of it before more
    /// than `reproductionMisses` land elsewhere.
    public var maxReproducedChance: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxReproducedChance)
    public var reproductions: Int = ParameterRegistry.defaultValue(\.pose.thresholds.reproductions)
    public var reproductionMisses: Int = ParameterRegistry.defaultValue(\.pose.thresholds.reproductionMisses)
    public var maxReproductionDegrees: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxReproductionDegrees)
    public var maxRotationSigma: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxRotationSigma)
    /// Fails the pose when a rival 10° or more away fits within this many inliers' worth (0: off).
    public var minRivalExcess: Double = ParameterRegistry.defaultValue(\.pose.thresholds.minRivalExcess)
    /// With the sensor's rotation: a rival it backs, while ruling the pose out, becomes the pose when it fits
    /// within this many inliers' worth (or within `minRivalExcess`, the larger).
    public var sensorRivalExcess: Double = ParameterRegistry.defaultValue(\.pose.thresholds.sensorRivalExcess)
    /// A median parallax above this is a wrong solution (rays meeting as if the cameras faced each other).
    public var maxParallax: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxParallax)
    /// Where GRIC prefers a homography, the translation stands only when at least this many more inliers
    /// refute the plane's other solution than support it (`PoseEvidence.twinRefutation`).
    public var minTwinRefutation: Int = ParameterRegistry.defaultValue(\.pose.thresholds.minTwinRefutation)
    /// Above this uncertainty (1 sigma, degrees) the translation direction is reported as undetermined (and the
    /// motion as rotation-only when a pure rotation explains the inliers).
    public var maxTranslationSigma: Double = ParameterRegistry.defaultValue(\.pose.thresholds.maxTranslationSigma)

    public init() {}
}
