import RephotoShim

/// A robust homography fit: H maps reference pixels to current pixels.
public struct HomographyEstimate: Sendable {
    public var matrix: Matrix3
    /// One flag per correspondence.
    public var inliers: [Bool]
    public var inlierCount: Int

    /// Estimates H from correspondences with the configured robust method.
    public static func estimate(_ pairs: Correspondences, config: RobustConfig) throws -> HomographyEstimate {
        var params = try config.shimParameters()
        let n = try cInt(pairs.count, "correspondence count")
        var h = [Double](repeating: 0, count: 9)
        var mask = [UInt8](repeating: 0, count: pairs.count)
        var count: Int32 = 0
        let a = pairs.referenceXY, b = pairs.currentXY
        try shimCall { status in
            rp_find_homography(a, b, n, &params, &h, &mask, mask.count, &count, status)
        }
        let matrix = Matrix3(h).normalizedHomography
        guard matrix.isFinite, abs(matrix.determinant) > 1e-12 else {
            throw RephotoError.estimationFailed("homography is degenerate (determinant \(matrix.determinant))")
        }
        return HomographyEstimate(matrix: matrix, inliers: mask.map { $0 != 0 }, inlierCount: Int(count))
    }

    /// Number of correspondences whose transfer error ||H a - b|| is below `threshold` pixels.
    public static func support(of h: Matrix3, _ pairs: Correspondences, threshold: Double) -> Int {
        zip(pairs.reference, pairs.current).reduce(0) { n, pair in
            n + (h.project(pair.0).distance(to: pair.1) < threshold ? 1 : 0)
        }
    }
}
