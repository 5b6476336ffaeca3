import RephotoShim

/// A second matching pass along epipolar lines, for an old photo: descriptor matches too ambiguous for Lowe's ratio
/// (`matching.ratio`) are kept when they agree with a fundamental matrix fitted robustly to the first pass's. The
/// fundamental matrix needs no camera, so it guides before the old photo's focal length is known.
public enum EpipolarGuidance {
    /// `pairs` joined by the `candidates` (each current keypoint once, the first pass's kept) within `thresholdPixels`
    /// (Sampson) of the matrix, in the pixels each image was analysed at (its features' `analysisScale`), and the
    /// matrix's inliers among `pairs`. Throws `.estimationFailed` when fewer than eight pairs or no matrix fits.
    public static func extend(_ pairs: Correspondences, with candidates: Correspondences, referenceScale: Double, currentScale: Double,
                              thresholdPixels: Double) throws -> (pairs: Correspondences, inliers: Int) {
        let n = try cInt(pairs.count, "correspondence count"), m = try cInt(candidates.count, "candidate count")
        let a = Correspondences.flat(pairs.reference, order: nil), b = Correspondences.flat(pairs.current, order: nil)
        let ca = Correspondences.flat(candidates.reference, order: nil), cb = Correspondences.flat(candidates.current, order: nil)
        var params = rp_epipolar_params(threshold_pixels: thresholdPixels, reference_scale: referenceScale, current_scale: currentScale)
        var keep = [UInt8](repeating: 0, count: candidates.count)
        var inliers: Int32 = 0
        try shimCall { rp_epipolar_consistent(a, b, n, ca, cb, m, &params, &keep, &inliers, $0) }
        let agreeing = candidates.reordered(keep.indices.filter { keep[$0] != 0 })
        return (pairs.joined(with: agreeing), Int(inliers))
    }
}
