import RephotoShim

/// A robust estimator: the shim's own LO-MSAC (essential matrix only), or one OpenCV 4.6 offers for
/// findHomography and findEssentialMat.
public enum RobustMethod: String, Codable, CaseIterable, Sendable {
    case loMsac = "lo_msac"  // five-point LO-MSAC with adaptive stopping (CShims/Core/pose/)
    case leastSquares = "least_squares"  // all points, no outlier rejection (homography only)
    case ransac, lmeds
    case rho  // PROSAC-based (homography only)
    case usacDefault = "usac_default", usacParallel = "usac_parallel", usacFast = "usac_fast"
    case usacAccurate = "usac_accurate", usacProsac = "usac_prosac"
    case usacMagsac = "usac_magsac"  // MAGSAC++

    /// findEssentialMat has no least squares and no RHO.
    public static let essentialMethods = allCases.filter { $0 != .leastSquares && $0 != .rho }
    public static let homographyMethods = allCases.filter { $0 != .loMsac }

    /// The shim's method code: OpenCV's flag, or RP_METHOD_LO_MSAC.
    var code: Int32 {
        switch self {
        case .loMsac: 1
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
/// error in the current frame) and essential matrix (Sampson distance, converted by the focal length).
/// OpenCV 4.6 runs its estimators from a fixed internal random state; LO-MSAC's seed is `pose.seed`.
public struct RobustConfig: Hashable, Sendable {
    public var method: RobustMethod
    public var threshold: Double
    public var confidence: Double
    public var maxIterations: Int

    public init(method: RobustMethod, threshold: Double, confidence: Double, maxIterations: Int) {
        self.method = method
        self.threshold = threshold
        self.confidence = confidence
        self.maxIterations = maxIterations
    }

    /// The registry's defaults for the estimator at `path` (`\.homography` or `\.pose.search.essential`).
    init(defaultsOf path: KeyPath<PipelineConfig, RobustConfig>) {
        self.init(method: ParameterRegistry.defaultValue(path.appending(path: \.method)),
                  threshold: ParameterRegistry.defaultValue(path.appending(path: \.threshold)),
                  confidence: ParameterRegistry.defaultValue(path.appending(path: \.confidence)),
                  maxIterations: ParameterRegistry.defaultValue(path.appending(path: \.maxIterations)))
    }

    /// The homography's parameters: these four are all findHomography reads (the essential matrix's search takes
    /// them with the loop's own, `RelativePose.SearchSettings.shimParameters`).
    package func shimParameters() throws -> rp_homography_params {
        rp_homography_params(method: method.code, threshold: threshold, confidence: confidence,
                             max_iterations: try cInt(maxIterations, "maxIterations"))
    }
}
