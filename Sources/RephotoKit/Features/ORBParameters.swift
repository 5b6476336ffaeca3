/// Every parameter of OpenCV 4.6's `cv::ORB::create`; defaults and ranges are declared in `ParameterRegistry`.
public struct ORBParameters: Equatable, Sendable {
    public enum ScoreType: String, Codable, CaseIterable, Sendable {
        case harris, fast
        var openCV: Int32 { self == .harris ? 0 : 1 }
    }

    public var features: Int = ParameterRegistry.defaultValue(\.features.orb.features)
    public var scaleFactor: Double = ParameterRegistry.defaultValue(\.features.orb.scaleFactor)
    public var levels: Int = ParameterRegistry.defaultValue(\.features.orb.levels)
    public var edgeThreshold: Int = ParameterRegistry.defaultValue(\.features.orb.edgeThreshold)
    public var firstLevel: Int = ParameterRegistry.defaultValue(\.features.orb.firstLevel)
    public var wtaK: Int = ParameterRegistry.defaultValue(\.features.orb.wtaK)
    public var scoreType: ScoreType = ParameterRegistry.defaultValue(\.features.orb.scoreType)
    public var patchSize: Int = ParameterRegistry.defaultValue(\.features.orb.patchSize)
    public var fastThreshold: Int = ParameterRegistry.defaultValue(\.features.orb.fastThreshold)

    public init() {}
}
