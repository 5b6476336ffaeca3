/// Every parameter of OpenCV 4.6's `cv::AKAZE::create`; defaults and ranges are declared in `ParameterRegistry`.
public struct AKAZEParameters: Equatable, Sendable {
    public enum DescriptorType: String, Codable, CaseIterable, Sendable {
        case kazeUpright = "kaze_upright", kaze, mldbUpright = "mldb_upright", mldb
        var openCV: Int32 { switch self { case .kazeUpright: 2; case .kaze: 3; case .mldbUpright: 4; case .mldb: 5 } }
        /// The same descriptor without the keypoint's orientation.
        public var upright: DescriptorType { switch self { case .kaze, .kazeUpright: .kazeUpright; case .mldb, .mldbUpright: .mldbUpright } }
    }
    public enum Diffusivity: String, Codable, CaseIterable, Sendable {
        case pmG1 = "pm_g1", pmG2 = "pm_g2", weickert, charbonnier
        var openCV: Int32 { switch self { case .pmG1: 0; case .pmG2: 1; case .weickert: 2; case .charbonnier: 3 } }
    }

    public var descriptorType: DescriptorType = ParameterRegistry.defaultValue(\.features.akaze.descriptorType)
    /// Bits of the MLDB descriptor; 0 means full size (486 bits).
    public var descriptorSize: Int = ParameterRegistry.defaultValue(\.features.akaze.descriptorSize)
    public var descriptorChannels: Int = ParameterRegistry.defaultValue(\.features.akaze.descriptorChannels)
    public var threshold: Double = ParameterRegistry.defaultValue(\.features.akaze.threshold)
    public var octaves: Int = ParameterRegistry.defaultValue(\.features.akaze.octaves)
    public var octaveLayers: Int = ParameterRegistry.defaultValue(\.features.akaze.octaveLayers)
    public var diffusivity: Diffusivity = ParameterRegistry.defaultValue(\.features.akaze.diffusivity)

    public init() {}
}
