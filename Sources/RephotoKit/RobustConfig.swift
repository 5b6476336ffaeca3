import CShims

/// A robust estimator as OpenCV 4.6 offers it for findHomography and findEssentialMat.
public enum RobustMethod: String, Codable, CaseIterable, Sendable {
    case leastSquares = "least_squares"  // all points, no outlier rejection (homography only)
    case ransac, lmeds
    case rho  // PROSAC-based (homography only)
    case usacDefault = "usac_default", usacParallel = "usac_parallel", usacFast = "usac_fast"
    case usacAccurate = "usac_accurate", usacProsac = "usac_prosac"
    case usacMagsac = "usac_magsac"  // MAGSAC++

    var openCV: Int32 {
        switch self {
        case .leastSquares: 0
        case .ransac: 8
        case .lmeds: 4
        case .rho: 16
        case .usacDefault: 32
        case .usacParallel: 33
        case .usacFast: 35
        case .usacAccurate: 36
        case .usacProsac: 37
        case .usacMagsac: 38
        }
    }
}

/// Parameters of one robust estimation. The threshold is in pixels for both homography (transfer
/// error in the current frame) and essential matrix (epipolar distance, converted by the focal length).
public struct RobustConfig: Codable, Equatable, Sendable {
    public var method: RobustMethod
    public var threshold: Double
    public var confidence: Double
    public var maxIterations: Int
    /// Seeds OpenCV's RNG before each estimation so the same input gives the same answer.
    public var seed: UInt64 = 0x5EED

    public init(method: RobustMethod, threshold: Double, confidence: Double, maxIterations: Int) {
        self.method = method
        self.threshold = threshold
        self.confidence = confidence
        self.maxIterations = maxIterations
    }

    /// cv::findHomography's defaults but with MAGSAC++ instead of RANSAC: on graf1→graf3 (AKAZE) the mean
    /// corner error against the published homography is 1.50 px with MAGSAC++ and 2.30 px with RANSAC.
    public static let homographyDefault = RobustConfig(method: .usacMagsac, threshold: 3, confidence: 0.995, maxIterations: 2000)
    /// OpenCV's defaults for cv::findEssentialMat.
    public static let essentialDefault = RobustConfig(method: .ransac, threshold: 1, confidence: 0.999, maxIterations: 1000)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case method, threshold, confidence, maxIterations, seed
    }

    /// Decodes with `defaults` for the missing keys (homography and essential differ).
    init(from decoder: Decoder, defaults: RobustConfig) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        method = try c.value(.method, or: defaults.method)
        threshold = try c.value(.threshold, or: defaults.threshold)
        confidence = try c.value(.confidence, or: defaults.confidence)
        maxIterations = try c.value(.maxIterations, or: defaults.maxIterations)
        seed = try c.value(.seed, or: defaults.seed)
    }

    public init(from decoder: Decoder) throws {
        try self.init(from: decoder, defaults: .homographyDefault)
    }

    func validate(_ name: String, essential: Bool) throws {
        if essential {
            try require(method != .leastSquares && method != .rho, "\(name).method", method.rawValue,
                        "ransac, lmeds or a usac_* method (findEssentialMat has no \(method.rawValue))")
        }
        try require(threshold > 0 && threshold.isFinite, "\(name).threshold", threshold, "> 0 pixels")
        try require(confidence > 0 && confidence < 1, "\(name).confidence", confidence, "in (0, 1)")
        try require(maxIterations > 0, "\(name).maxIterations", maxIterations, "> 0")
    }

    package var shimParameters: rp_robust_params {
        rp_robust_params(method: method.openCV, threshold: threshold, confidence: confidence,
                         max_iterations: Int32(clamping: maxIterations), seed: seed, refine: 0)
    }
}
