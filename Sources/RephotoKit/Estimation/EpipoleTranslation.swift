import RephotoShim

/// The translation's direction without the reference's camera: the current image's epipole of a fundamental matrix
/// fitted robustly to the correspondences, through the current camera (t ∝ K_current⁻¹ e). A fundamental matrix takes
/// in any focal length and principal point of the reference, so this direction does not move with them, where a
/// pose solved at a wrong focal length bends its translation to fit.
public enum EpipoleTranslation {
    /// The unit direction (X_current = R X_reference + t), sign-free, and the fundamental matrix's inliers. Throws
    /// `.estimationFailed` when fewer than eight correspondences or no matrix fits.
    public static func estimate(_ pairs: Correspondences, currentCamera: CameraIntrinsics,
                                thresholdPixels: Double) throws -> (direction: SIMD3<Double>, inliers: Int) {
        let n = try cInt(pairs.count, "correspondence count")
        let a = Correspondences.flat(pairs.reference, order: nil), b = Correspondences.flat(pairs.current, order: nil)
        var camera = try currentCamera.shimCamera()
        var out = rp_epipole_translation()
        try shimCall { rp_translation_from_epipole(a, b, n, &camera, thresholdPixels, &out, $0) }
        return (SIMD3(out.t.0, out.t.1, out.t.2), Int(out.inliers))
    }
}
