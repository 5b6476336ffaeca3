import CShims

/// Which OpenCV feature detector/descriptor to use.
public enum DetectorKind: String, Codable, CaseIterable, Sendable {
    case akaze, orb, sift
}

/// Every parameter of OpenCV 4.6's `cv::AKAZE::create`, with OpenCV's defaults.
public struct AKAZEParameters: Codable, Equatable, Sendable {
    public enum DescriptorType: String, Codable, CaseIterable, Sendable {
        case kazeUpright = "kaze_upright", kaze, mldbUpright = "mldb_upright", mldb
        var openCV: Int32 { switch self { case .kazeUpright: 2; case .kaze: 3; case .mldbUpright: 4; case .mldb: 5 } }
    }
    public enum Diffusivity: String, Codable, CaseIterable, Sendable {
        case pmG1 = "pm_g1", pmG2 = "pm_g2", weickert, charbonnier
        var openCV: Int32 { switch self { case .pmG1: 0; case .pmG2: 1; case .weickert: 2; case .charbonnier: 3 } }
    }

    public var descriptorType = DescriptorType.mldb
    /// Bits of the MLDB descriptor; 0 means full size (486 bits).
    public var descriptorSize = 0
    public var descriptorChannels = 3
    public var threshold = 0.001
    public var octaves = 4
    public var octaveLayers = 4
    public var diffusivity = Diffusivity.pmG2

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case descriptorType, descriptorSize, descriptorChannels, threshold, octaves, octaveLayers, diffusivity
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = AKAZEParameters()
        descriptorType = try c.value(.descriptorType, or: d.descriptorType)
        descriptorSize = try c.value(.descriptorSize, or: d.descriptorSize)
        descriptorChannels = try c.value(.descriptorChannels, or: d.descriptorChannels)
        threshold = try c.value(.threshold, or: d.threshold)
        octaves = try c.value(.octaves, or: d.octaves)
        octaveLayers = try c.value(.octaveLayers, or: d.octaveLayers)
        diffusivity = try c.value(.diffusivity, or: d.diffusivity)
    }

    func validate() throws {
        let maxBits = 162 * descriptorChannels  // MLDB: 162 bits per channel
        try require(descriptorSize >= 0 && descriptorSize <= maxBits, "akaze.descriptorSize", descriptorSize, "0...\(maxBits)")
        try require((1...3).contains(descriptorChannels), "akaze.descriptorChannels", descriptorChannels, "1...3")
        try require(threshold > 0 && threshold.isFinite, "akaze.threshold", threshold, "> 0")
        try require((1...10).contains(octaves), "akaze.octaves", octaves, "1...10")
        try require((1...10).contains(octaveLayers), "akaze.octaveLayers", octaveLayers, "1...10")
    }
}

/// Every parameter of OpenCV 4.6's `cv::ORB::create`, with OpenCV's defaults.
public struct ORBParameters: Codable, Equatable, Sendable {
    public enum ScoreType: String, Codable, CaseIterable, Sendable {
        case harris, fast
        var openCV: Int32 { self == .harris ? 0 : 1 }
    }

    public var features = 500
    public var scaleFactor = 1.2
    public var levels = 8
    public var edgeThreshold = 31
    public var firstLevel = 0
    public var wtaK = 2
    public var scoreType = ScoreType.harris
    public var patchSize = 31
    public var fastThreshold = 20

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case features, scaleFactor, levels, edgeThreshold, firstLevel, wtaK, scoreType, patchSize, fastThreshold
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ORBParameters()
        features = try c.value(.features, or: d.features)
        scaleFactor = try c.value(.scaleFactor, or: d.scaleFactor)
        levels = try c.value(.levels, or: d.levels)
        edgeThreshold = try c.value(.edgeThreshold, or: d.edgeThreshold)
        firstLevel = try c.value(.firstLevel, or: d.firstLevel)
        wtaK = try c.value(.wtaK, or: d.wtaK)
        scoreType = try c.value(.scoreType, or: d.scoreType)
        patchSize = try c.value(.patchSize, or: d.patchSize)
        fastThreshold = try c.value(.fastThreshold, or: d.fastThreshold)
    }

    func validate() throws {
        try require(features > 0, "orb.features", features, "> 0")
        try require(scaleFactor > 1 && scaleFactor.isFinite, "orb.scaleFactor", scaleFactor, "> 1")
        try require((1...32).contains(levels), "orb.levels", levels, "1...32")
        try require(edgeThreshold >= 0, "orb.edgeThreshold", edgeThreshold, ">= 0")
        try require(firstLevel >= 0 && firstLevel < levels, "orb.firstLevel", firstLevel, "0..<levels")
        try require([2, 3, 4].contains(wtaK), "orb.wtaK", wtaK, "2, 3 or 4")
        try require(patchSize >= 2, "orb.patchSize", patchSize, ">= 2")
        try require(fastThreshold >= 0, "orb.fastThreshold", fastThreshold, ">= 0")
    }
}

/// Every parameter of OpenCV 4.6's `cv::SIFT::create`, with OpenCV's defaults.
public struct SIFTParameters: Codable, Equatable, Sendable {
    public enum DescriptorType: String, Codable, CaseIterable, Sendable {
        case float32, uint8
        var openCV: Int32 { self == .float32 ? 5 : 0 }  // CV_32F, CV_8U
    }

    /// Best features to keep; 0 keeps all.
    public var features = 0
    public var octaveLayers = 3
    public var contrastThreshold = 0.04
    public var edgeThreshold = 10.0
    public var sigma = 1.6
    public var descriptorType = DescriptorType.float32

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case features, octaveLayers, contrastThreshold, edgeThreshold, sigma, descriptorType
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = SIFTParameters()
        features = try c.value(.features, or: d.features)
        octaveLayers = try c.value(.octaveLayers, or: d.octaveLayers)
        contrastThreshold = try c.value(.contrastThreshold, or: d.contrastThreshold)
        edgeThreshold = try c.value(.edgeThreshold, or: d.edgeThreshold)
        sigma = try c.value(.sigma, or: d.sigma)
        descriptorType = try c.value(.descriptorType, or: d.descriptorType)
    }

    func validate() throws {
        try require(features >= 0, "sift.features", features, ">= 0")
        try require((1...10).contains(octaveLayers), "sift.octaveLayers", octaveLayers, "1...10")
        try require(contrastThreshold > 0 && contrastThreshold.isFinite, "sift.contrastThreshold", contrastThreshold, "> 0")
        try require(edgeThreshold > 0 && edgeThreshold.isFinite, "sift.edgeThreshold", edgeThreshold, "> 0")
        try require(sigma > 0 && sigma.isFinite, "sift.sigma", sigma, "> 0")
    }
}

/// Feature detection settings: the detector, its OpenCV parameters, and the analysis scale.
/// Detection may run on a downscaled copy; every reported coordinate is in full-resolution pixels.
public struct FeatureConfig: Codable, Equatable, Sendable {
    public var detector = DetectorKind.akaze
    /// Downscale so the longer side is at most this many pixels (nil: no limit).
    public var maxDimension: Int?
    /// Downscale by this factor in (0, 1] (nil: 1). With both set, the smaller scale wins.
    public var scale: Double?
    public var akaze = AKAZEParameters()
    public var orb = ORBParameters()
    public var sift = SIFTParameters()

    public init(detector: DetectorKind = .akaze, maxDimension: Int? = nil, scale: Double? = nil) {
        self.detector = detector
        self.maxDimension = maxDimension
        self.scale = scale
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case detector, maxDimension, scale, akaze, orb, sift
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        detector = try c.value(.detector, or: .akaze)
        maxDimension = try c.decodeIfPresent(Int.self, forKey: .maxDimension)
        scale = try c.decodeIfPresent(Double.self, forKey: .scale)
        akaze = try c.value(.akaze, or: AKAZEParameters())
        orb = try c.value(.orb, or: ORBParameters())
        sift = try c.value(.sift, or: SIFTParameters())
    }

    public func validate() throws {
        if let maxDimension { try require(maxDimension >= 16, "features.maxDimension", maxDimension, ">= 16") }
        if let scale { try require(scale > 0 && scale <= 1, "features.scale", scale, "in (0, 1]") }
        switch detector {
        case .akaze: try akaze.validate()
        case .orb: try orb.validate()
        case .sift: try sift.validate()
        }
    }

    package var shimParameters: rp_detector_params {
        var p = rp_detector_params()
        p.kind = Int32(detector == .akaze ? RP_DETECTOR_AKAZE.rawValue : detector == .orb ? RP_DETECTOR_ORB.rawValue : RP_DETECTOR_SIFT.rawValue)
        p.max_dimension = Int32(clamping: maxDimension ?? 0)
        p.scale = scale ?? 0
        p.akaze_descriptor_type = akaze.descriptorType.openCV
        p.akaze_descriptor_size = Int32(clamping: akaze.descriptorSize)
        p.akaze_descriptor_channels = Int32(clamping: akaze.descriptorChannels)
        p.akaze_threshold = Float(akaze.threshold)
        p.akaze_octaves = Int32(clamping: akaze.octaves)
        p.akaze_octave_layers = Int32(clamping: akaze.octaveLayers)
        p.akaze_diffusivity = akaze.diffusivity.openCV
        p.orb_features = Int32(clamping: orb.features)
        p.orb_scale_factor = Float(orb.scaleFactor)
        p.orb_levels = Int32(clamping: orb.levels)
        p.orb_edge_threshold = Int32(clamping: orb.edgeThreshold)
        p.orb_first_level = Int32(clamping: orb.firstLevel)
        p.orb_wta_k = Int32(clamping: orb.wtaK)
        p.orb_score_type = orb.scoreType.openCV
        p.orb_patch_size = Int32(clamping: orb.patchSize)
        p.orb_fast_threshold = Int32(clamping: orb.fastThreshold)
        p.sift_features = Int32(clamping: sift.features)
        p.sift_octave_layers = Int32(clamping: sift.octaveLayers)
        p.sift_contrast_threshold = sift.contrastThreshold
        p.sift_edge_threshold = sift.edgeThreshold
        p.sift_sigma = sift.sigma
        p.sift_descriptor_type = sift.descriptorType.openCV
        return p
    }
}

/// Throws a bad-input error naming the parameter, its value and the allowed range.
func require<T>(_ condition: Bool, _ name: String, _ value: T, _ allowed: String) throws {
    if !condition { throw RephotoError.badInput("\(name) = \(value) is out of range (allowed: \(allowed))") }
}
