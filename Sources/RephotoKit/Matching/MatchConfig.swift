import RephotoShim

/// Descriptor matching: k=2 nearest neighbours with Lowe's ratio test, optional mutual check,
/// brute force (Hamming for binary descriptors, L2 for float) or FLANN (LSH for binary, KD-trees for float).
/// Brute force is exact; on Hamming descriptors it runs the shim's SIMD kernel, whose matches equal
/// cv::BFMatcher's (`opencv_brute_force` runs cv::BFMatcher itself, to check that or to benchmark it).
/// Defaults and ranges are declared in `ParameterRegistry`.
public struct MatchConfig: Hashable, Sendable {
    public enum Matcher: String, Codable, CaseIterable, Sendable {
        case bruteForce = "brute_force", flann, opencvBruteForce = "opencv_brute_force"
    }

    public var matcher: Matcher = ParameterRegistry.defaultValue(\.matching.matcher)
    /// Keep a match when best < ratio * second best (Lowe 2004 used 0.8); 1 disables the test.
    public var ratio: Double = ParameterRegistry.defaultValue(\.matching.ratio)
    /// Keep only pairs that are each other's nearest neighbour.
    public var mutual: Bool = ParameterRegistry.defaultValue(\.matching.mutual)
    /// For a reference of unknown camera, a second pass's looser ratio: its matches that agree with a fundamental
    /// matrix of the first pass's join them (`EpipolarGuidance`); 0: no second pass.
    public var oldPhotoEpipolarRatio: Double = ParameterRegistry.defaultValue(\.matching.oldPhotoEpipolarRatio)
    /// Marked points' guided pass: its search radius, % of the reference's longer side.
    public var guidedRadius: Double = ParameterRegistry.defaultValue(\.matching.guidedRadius)
    /// Marked points farther than this from the model found are inconsistent, % of the current image's longer side.
    public var markTolerance: Double = ParameterRegistry.defaultValue(\.matching.markTolerance)
    /// FLANN LSH parameters (binary descriptors).
    public var lshTableNumber: Int = ParameterRegistry.defaultValue(\.matching.lshTableNumber)
    public var lshKeySize: Int = ParameterRegistry.defaultValue(\.matching.lshKeySize)
    public var lshMultiProbeLevel: Int = ParameterRegistry.defaultValue(\.matching.lshMultiProbeLevel)
    /// FLANN KD-tree parameters (float descriptors).
    public var kdTrees: Int = ParameterRegistry.defaultValue(\.matching.kdTrees)
    public var flannChecks: Int = ParameterRegistry.defaultValue(\.matching.flannChecks)

    public init() {}

    /// These settings with the ratio test's threshold at its default: what the neighbour search depends on.
    var ignoringRatio: MatchConfig {
        var c = self
        c.ratio = ParameterRegistry.defaultValue(\.matching.ratio)
        c.oldPhotoEpipolarRatio = ParameterRegistry.defaultValue(\.matching.oldPhotoEpipolarRatio)
        return c
    }

    /// Checks the ranges of `ParameterRegistry`.
    public func validate() throws {
        var config = PipelineConfig()
        config.matching = self
        try config.validate()
    }

    package func shimParameters(kernel: HammingKernel = .auto) throws -> rp_match_params {
        var p = rp_match_params()
        let kind: rp_matcher_kind = switch matcher {
        case .bruteForce: RP_MATCHER_BRUTE_FORCE
        case .flann: RP_MATCHER_FLANN
        case .opencvBruteForce: RP_MATCHER_OPENCV_BRUTE_FORCE
        }
        p.matcher = Int32(kind.rawValue)
        p.ratio = Float(ratio)
        p.mutual = mutual ? 1 : 0
        p.lsh_table_number = try cInt(lshTableNumber, "matching.lshTableNumber")
        p.lsh_key_size = try cInt(lshKeySize, "matching.lshKeySize")
        p.lsh_multi_probe_level = try cInt(lshMultiProbeLevel, "matching.lshMultiProbeLevel")
        p.kdtree_trees = try cInt(kdTrees, "matching.kdTrees")
        p.flann_checks = try cInt(flannChecks, "matching.flannChecks")
        p.hamming_kernel = Int32(kernel.rawValue)
        return p
    }
}
