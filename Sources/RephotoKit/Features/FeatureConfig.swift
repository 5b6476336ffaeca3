import RephotoShim

/// Which OpenCV feature detector/descriptor to use.
public enum DetectorKind: String, Codable, CaseIterable, Sendable {
    case akaze, orb, sift
}

/// Feature detection settings: the detector, its OpenCV parameters, and the analysis scale.
/// Detection may run on a downscaled copy; every reported coordinate is in full-resolution pixels.
/// Defaults and ranges are declared in `ParameterRegistry`.
public struct FeatureConfig: Equatable, Sendable {
    public var detector: DetectorKind = ParameterRegistry.defaultValue(\.features.detector)
    /// Downscale so the longer side is at most this many pixels (nil: no limit).
    public var maxDimension: Int? = ParameterRegistry.defaultValue(\.features.maxDimension)
    /// The registry's default analysis size (nil would be full resolution).
    public static var defaultMaxDimension: Int? { ParameterRegistry.defaultValue(\.features.maxDimension) }
    /// Downscale by this factor in (0, 1] (nil: 1). With both set, the smaller scale wins.
    public var scale: Double? = ParameterRegistry.defaultValue(\.features.scale)
    /// At most this many keypoints per image, the strongest first (0: all): matching's cost grows with their square.
    public var maxKeypoints: Int = ParameterRegistry.defaultValue(\.features.maxKeypoints)
    /// Contrast-limited adaptive histogram equalisation before detection (faded, low-contrast prints): its clip
    /// limit, 0 for none.
    public var clahe: Double = ParameterRegistry.defaultValue(\.features.clahe)
    /// The clip limit `clahe` takes, when it is 0, for a reference of unknown camera (an old photo) and its frames.
    public var oldPhotoClahe: Double = ParameterRegistry.defaultValue(\.features.oldPhotoClahe)
    /// The factor on AKAZE's threshold and SIFT's contrast threshold for an old photo and its frames.
    public var oldPhotoThresholdScale: Double = ParameterRegistry.defaultValue(\.features.oldPhotoThresholdScale)
    /// Whether an old photo and its frames get AKAZE's upright descriptors (no orientation: both held level).
    public var oldPhotoUpright: Bool = ParameterRegistry.defaultValue(\.features.oldPhotoUpright)
    /// These settings for a reference of unknown camera (an old print) and the frames matched against it: `clahe`
    /// becomes `oldPhotoClahe` unless it was set, the detectors' response thresholds are scaled by
    /// `oldPhotoThresholdScale` (a faded print's corners respond weakly, even after CLAHE), and with `oldPhotoUpright`
    /// AKAZE describes without orientation (on blurred, grainy prints the orientation is noise).
    public func forUnknownReference() -> FeatureConfig {
        var adjusted = self
        if adjusted.clahe == 0 { adjusted.clahe = oldPhotoClahe }
        adjusted.akaze.threshold *= oldPhotoThresholdScale
        adjusted.sift.contrastThreshold *= oldPhotoThresholdScale
        if oldPhotoUpright { adjusted.akaze.descriptorType = adjusted.akaze.descriptorType.upright }
        return adjusted
    }
    /// The current frame's analysis size is capped at this many times the reference's analysed longer side (0: off).
    public var currentScaleToReference: Double = ParameterRegistry.defaultValue(\.features.currentScaleToReference)
    /// The analysis size the cap never goes below.
    public static let smallestCappedSide = 1000
    /// The settings a current frame is detected with against a reference analysed at `referenceSide` pixels (its longer
    /// side): these, or with `maxDimension` lowered to `currentScaleToReference` times it (at least 1,000) when the frame
    /// is larger.
    public func current(_ frame: ImageSize, referenceSide: Double) -> FeatureConfig {
        guard currentScaleToReference > 0 else { return self }
        // Never below 1,000 px: on small frames every pixel's detail counts (a 480 px frame against a 336 px reference
        // found its focal length 4.8 % off at 437 px, 2 % at 480).
        let cap = max(Self.smallestCappedSide, Int((currentScaleToReference * referenceSide).rounded()))
        let side = max(frame.width, frame.height)
        let analysed = min(maxDimension ?? side, Int((Double(side) * (scale ?? 1)).rounded()))
        guard cap < analysed else { return self }
        var reduced = self
        reduced.maxDimension = cap
        return reduced
    }
    /// When to find a scanned print's border around the reference and detect inside it only.
    public var referenceBorder: BorderMode = ParameterRegistry.defaultValue(\.features.referenceBorder)
    public var akaze = AKAZEParameters()
    public var orb = ORBParameters()
    public var sift = SIFTParameters()

    public init() {}

    public init(detector: DetectorKind, maxDimension: Int? = FeatureConfig.defaultMaxDimension, scale: Double? = nil) {
        self.detector = detector
        self.maxDimension = maxDimension
        self.scale = scale
    }

    /// The most pixels an analysis copy can have under these settings, for images of at most `maxPixels`: the
    /// bound a detector's own enlargement is checked against before any image is read.
    public func largestAnalysisPixels(maxPixels: Int) -> Double {
        var pixels = Double(maxPixels) * (scale.map { $0 * $0 } ?? 1)
        if let side = maxDimension { pixels = min(pixels, Double(side) * Double(side)) }
        return pixels
    }

    /// Checks the ranges of `ParameterRegistry` (and the rules between these parameters).
    public func validate() throws {
        var config = PipelineConfig()
        config.features = self
        try config.validate()
    }

    /// The shim's parameter block; integers that do not fit C's int are refused, not truncated.
    package func shimParameters() throws -> rp_detector_params {
        var p = rp_detector_params()
        p.kind = Int32(detector == .akaze ? RP_DETECTOR_AKAZE.rawValue : detector == .orb ? RP_DETECTOR_ORB.rawValue : RP_DETECTOR_SIFT.rawValue)
        p.max_dimension = try cInt(maxDimension ?? 0, "features.maxDimension")
        p.scale = scale ?? 0
        p.max_keypoints = try cInt(maxKeypoints, "features.maxKeypoints")
        p.clahe_clip = clahe
        p.akaze_descriptor_type = akaze.descriptorType.openCV
        p.akaze_descriptor_size = try cInt(akaze.descriptorSize, "features.akaze.descriptorSize")
        p.akaze_descriptor_channels = try cInt(akaze.descriptorChannels, "features.akaze.descriptorChannels")
        p.akaze_threshold = Float(akaze.threshold)
        p.akaze_octaves = try cInt(akaze.octaves, "features.akaze.octaves")
        p.akaze_octave_layers = try cInt(akaze.octaveLayers, "features.akaze.octaveLayers")
        p.akaze_diffusivity = akaze.diffusivity.openCV
        p.orb_features = try cInt(orb.features, "features.orb.features")
        p.orb_scale_factor = Float(orb.scaleFactor)
        p.orb_levels = try cInt(orb.levels, "features.orb.levels")
        p.orb_edge_threshold = try cInt(orb.edgeThreshold, "features.orb.edgeThreshold")
        p.orb_first_level = try cInt(orb.firstLevel, "features.orb.firstLevel")
        p.orb_wta_k = try cInt(orb.wtaK, "features.orb.wtaK")
        p.orb_score_type = orb.scoreType.openCV
        p.orb_patch_size = try cInt(orb.patchSize, "features.orb.patchSize")
        p.orb_fast_threshold = try cInt(orb.fastThreshold, "features.orb.fastThreshold")
        p.sift_features = try cInt(sift.features, "features.sift.features")
        p.sift_octave_layers = try cInt(sift.octaveLayers, "features.sift.octaveLayers")
        p.sift_contrast_threshold = sift.contrastThreshold
        p.sift_edge_threshold = sift.edgeThreshold
        p.sift_sigma = sift.sigma
        p.sift_descriptor_type = sift.descriptorType.openCV
        return p
    }
}
