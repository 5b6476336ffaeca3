/// Every parameter of OpenCV 4.6's `cv::SIFT::create`; defaults and ranges are declared in `ParameterRegistry`.
public struct SIFTParameters: Equatable, Sendable {
    public enum DescriptorType: String, Codable, CaseIterable, Sendable {
        case float32, uint8
        var openCV: Int32 { self == .float32 ? 5 : 0 }  // CV_32F, CV_8U
    }

    /// Best features to keep; 0 keeps all.
    public var features: Int = ParameterRegistry.defaultValue(\.features.sift.features)
    public var octaveLayers: Int = ParameterRegistry.defaultValue(\.features.sift.octaveLayers)
    public var contrastThreshold: Double = ParameterRegistry.defaultValue(\.features.sift.contrastThreshold)
    public var edgeThreshold: Double = ParameterRegistry.defaultValue(\.features.sift.edgeThreshold)
    public var sigma: Double = ParameterRegistry.defaultValue(\.features.sift.sigma)
    public var descriptorType: DescriptorType = ParameterRegistry.defaultValue(\.features.sift.descriptorType)

    public init() {}
}
