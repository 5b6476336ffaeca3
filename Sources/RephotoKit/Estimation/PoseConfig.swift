/// Settings of the essential-matrix pose and its degeneracy check; defaults and ranges are declared in
/// `ParameterRegistry`.
public struct PoseConfig: Equatable, Sendable {
    public var essential: RobustConfig = RobustConfig(defaultsOf: \.pose.essential)
    /// Bae et al. 2010: flag rotation-only/planar when the homography explains more than this share of
    /// what the essential matrix explains.
    public var degeneracyRatio: Double = ParameterRegistry.defaultValue(\.pose.degeneracyRatio)
    /// Sampson threshold (pixels) at which the essential matrix's support is counted over all matches; the
    /// homography's support is counted at the equivalent transfer-error threshold (× transferToSampsonThreshold).
    /// nil uses the essential RANSAC threshold. Comparing raw RANSAC inlier counts at each estimator's own
    /// threshold instead flagged facades with real depth (Strecha Herz-Jesu 5→6: ratio 0.83) as planar.
    public var degeneracyThreshold: Double? = ParameterRegistry.defaultValue(\.pose.degeneracyThreshold)
    /// Refine R and t by Levenberg-Marquardt on the inliers' Sampson error: OpenCV's RANSAC returns its best
    /// minimal-sample model unrefined (on the synthetic three-plane scene: 1.33° → 0.03° rotation error).
    public var refine: Bool = ParameterRegistry.defaultValue(\.pose.refine)

    /// Transfer error ||H a − b|| is 2-D and carries the noise of both images (about √2 σ per axis), while
    /// the Sampson distance is 1-D with σ: equal 95 % chi-square coverage needs a transfer threshold
    /// √2 × 2.448 / 1.960 ≈ 1.77 times the Sampson threshold.
    public static let transferToSampsonThreshold = 2.0.squareRoot() * 2.448 / 1.960

    public init() {}
}
