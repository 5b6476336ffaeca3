import CShims

/// Descriptor matching: k=2 nearest neighbours with Lowe's ratio test, optional mutual check,
/// brute force (Hamming for binary descriptors, L2 for float) or FLANN (LSH for binary, KD-trees for float).
/// Brute force is exact; on Hamming descriptors it runs the shim's SIMD kernel, whose matches equal
/// cv::BFMatcher's (`opencv_brute_force` runs cv::BFMatcher itself, to check that or to benchmark it).
public struct MatchConfig: Codable, Equatable, Sendable {
    public enum Matcher: String, Codable, CaseIterable, Sendable {
        case bruteForce = "brute_force", flann, opencvBruteForce = "opencv_brute_force"
    }

    public var matcher = Matcher.bruteForce
    /// Keep a match when best < ratio * second best (Lowe 2004 used 0.8); 1 disables the test.
    public var ratio = 0.8
    /// Keep only pairs that are each other's nearest neighbour.
    public var mutual = false
    /// FLANN LSH parameters (binary descriptors); OpenCV's documentation suggests 6, 12, 1.
    public var lshTableNumber = 6
    public var lshKeySize = 12
    public var lshMultiProbeLevel = 1
    /// FLANN KD-tree parameters (float descriptors).
    public var kdTrees = 5
    public var flannChecks = 50

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case matcher, ratio, mutual, lshTableNumber, lshKeySize, lshMultiProbeLevel, kdTrees, flannChecks
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = MatchConfig()
        matcher = try c.value(.matcher, or: d.matcher)
        ratio = try c.value(.ratio, or: d.ratio)
        mutual = try c.value(.mutual, or: d.mutual)
        lshTableNumber = try c.value(.lshTableNumber, or: d.lshTableNumber)
        lshKeySize = try c.value(.lshKeySize, or: d.lshKeySize)
        lshMultiProbeLevel = try c.value(.lshMultiProbeLevel, or: d.lshMultiProbeLevel)
        kdTrees = try c.value(.kdTrees, or: d.kdTrees)
        flannChecks = try c.value(.flannChecks, or: d.flannChecks)
    }

    public func validate() throws {
        try require(ratio > 0 && ratio <= 1, "matching.ratio", ratio, "in (0, 1]")
        try require((1...64).contains(lshTableNumber), "matching.lshTableNumber", lshTableNumber, "1...64")
        try require((1...32).contains(lshKeySize), "matching.lshKeySize", lshKeySize, "1...32")
        try require((0...4).contains(lshMultiProbeLevel), "matching.lshMultiProbeLevel", lshMultiProbeLevel, "0...4")
        try require((1...64).contains(kdTrees), "matching.kdTrees", kdTrees, "1...64")
        try require(flannChecks > 0, "matching.flannChecks", flannChecks, "> 0")
    }

    /// The Hamming kernel brute force runs on this CPU (avx512-vpopcntdq, avx2 or portable).
    public static var hammingKernel: String { String(cString: rp_hamming_kernel()) }

    /// Pins the Hamming kernel by name (nil = the best this CPU has); every kernel gives the same matches,
    /// so this is for tests and benchmarks only.
    public static func pinHammingKernel(_ name: String?) throws {
        try shimCall { rp_set_hamming_kernel(name, $0) }
    }

    package var shimParameters: rp_match_params {
        var p = rp_match_params()
        let kind: rp_matcher_kind = switch matcher {
        case .bruteForce: RP_MATCHER_BRUTE_FORCE
        case .flann: RP_MATCHER_FLANN
        case .opencvBruteForce: RP_MATCHER_OPENCV_BRUTE_FORCE
        }
        p.matcher = Int32(kind.rawValue)
        p.ratio = Float(ratio)
        p.mutual = mutual ? 1 : 0
        p.lsh_table_number = Int32(lshTableNumber)
        p.lsh_key_size = Int32(lshKeySize)
        p.lsh_multi_probe_level = Int32(lshMultiProbeLevel)
        p.kdtree_trees = Int32(kdTrees)
        p.flann_checks = Int32(flannChecks)
        return p
    }
}
