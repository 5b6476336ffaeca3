/// Every tunable of the pose pipeline in one Codable value, readable from JSON or YAML
/// (`PipelineConfig.load(from:)`). Missing keys take their defaults; unknown keys are errors.
public struct PipelineConfig: Codable, Equatable, Sendable {
    public var features = FeatureConfig()
    public var matching = MatchConfig()
    public var homography = RobustConfig.homographyDefault
    public var pose = PoseConfig()
    public var navigation = NavigationConfig()
    public var sensor = SensorConfig()
    /// Fewer homography inliers than this is "could not estimate".
    public var minimumInliers = 10
    /// Images above this many pixels are refused before decoding.
    public var maxPixels = Image.defaultMaxPixels

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case features, matching, homography, pose, navigation, sensor, minimumInliers, maxPixels
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        features = try c.value(.features, or: FeatureConfig())
        matching = try c.value(.matching, or: MatchConfig())
        if c.contains(.homography) {
            homography = try RobustConfig(from: c.superDecoder(forKey: .homography), defaults: .homographyDefault)
        }
        pose = try c.value(.pose, or: PoseConfig())
        navigation = try c.value(.navigation, or: NavigationConfig())
        sensor = try c.value(.sensor, or: SensorConfig())
        minimumInliers = try c.value(.minimumInliers, or: 10)
        maxPixels = try c.value(.maxPixels, or: Image.defaultMaxPixels)
    }

    public static func load(from path: String) throws -> PipelineConfig {
        let config = try ConfigFile.load(PipelineConfig.self, from: path)
        do {
            try config.validate()
        } catch let error as RephotoError {
            throw error.prefixed(path)
        }
        return config
    }

    public func validate() throws {
        try features.validate()
        try matching.validate()
        try homography.validate("homography", essential: false)
        try pose.validate()
        try navigation.validate()
        try sensor.validate()
        try require(minimumInliers >= 4, "minimumInliers", minimumInliers, ">= 4")
        try require(maxPixels > 0, "maxPixels", maxPixels, "> 0")
    }
}
