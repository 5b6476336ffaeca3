import Foundation
import RephotoShim

/// The 3D points a guidance session fixed at a keyframe: reference keypoints triangulated from the reference and a
/// frame with enough baseline, in the reference camera's frame, in units of that baseline (Bae et al. 2010 fix the
/// structure from a first and a second frame so the remaining step stays determined as the person converges).
public struct SceneStructure: Sendable {
    /// By reference keypoint index.
    public var points: [Int: SIMD3<Double>]
    /// The session frame whose baseline to the reference is the unit.
    public var keyframe: Int
    /// Median depth of the points in the reference camera, baselines: the distance to the subject.
    public var medianDepth: Double

    /// Triangulates correspondences under X_current = R X_reference + t; a point is kept when it lies in front of
    /// both cameras, its rays meet at `minParallaxDegrees` or more and it reprojects within `maxReprojectionPixels`.
    public static func triangulate(reference: [Point2], current: [Point2], referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                                   rotation: Matrix3, translation: SIMD3<Double>, minParallaxDegrees: Double,
                                   maxReprojectionPixels: Double) throws -> [SIMD3<Double>?] {
        precondition(reference.count == current.count, "one current point per reference point")
        guard !reference.isEmpty else { return [] }
        let n = try cInt(reference.count, "triangulated point count")
        var refCam = try referenceCamera.shimCamera(), curCam = try currentCamera.shimCamera()
        let a = Correspondences.flat(reference, order: nil), b = Correspondences.flat(current, order: nil)
        var xyz = [Double](repeating: 0, count: 3 * reference.count)
        var parallax = [Double](repeating: 0, count: reference.count), error = parallax
        var front = [UInt8](repeating: 0, count: reference.count)
        let R = rotation.elements, t = [translation.x, translation.y, translation.z]
        try shimCall { rp_triangulate(a, b, n, &refCam, &curCam, R, t, &xyz, xyz.count, &parallax, parallax.count, &error, error.count,
                                      &front, front.count, $0) }
        return reference.indices.map { i in
            front[i] != 0 && parallax[i] >= minParallaxDegrees && error[i] <= maxReprojectionPixels
                ? SIMD3(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]) : nil
        }
    }

    /// The structure from a keyframe's triangulated points; nil with fewer than `minimum`.
    static func fixed(_ points: [Int: SIMD3<Double>], keyframe: Int, minimum: Int) -> SceneStructure? {
        guard points.count >= max(minimum, 1) else { return nil }
        let depths = points.values.map(\.z).sorted()
        return SceneStructure(points: points, keyframe: keyframe, medianDepth: depths[depths.count / 2])
    }
}

/// A camera placed among a structure's points: X_camera = R X + t, t in the structure's units.
public struct CameraPlacement: Sendable {
    public var rotation: Matrix3
    public var translation: SIMD3<Double>
    public var inliers: [Bool]
    public var inlierCount: Int
    public var rmsPixels: Double
    /// Covariance of `translation` (the points taken as exact).
    public var translationCovariance: Matrix3
    public var rotationSigmaDegrees: Double

    /// P3P in the robust loop, then Levenberg-Marquardt on the inliers; throws `.estimationFailed` when no camera fits.
    public static func place(points: [SIMD3<Double>], pixels: [Point2], camera: CameraIntrinsics, thresholdPixels: Double,
                             seed: UInt64) throws -> CameraPlacement {
        precondition(points.count == pixels.count, "one pixel per point")
        let n = try cInt(points.count, "placed point count")
        var cam = try camera.shimCamera()
        let xyz = points.flatMap { [$0.x, $0.y, $0.z] }, xy = Correspondences.flat(pixels, order: nil)
        var params = rp_placement_params(threshold_pixels: thresholdPixels, confidence: 0.999, max_iterations: 1000, seed: seed)
        var out = rp_placement()
        var mask = [UInt8](repeating: 0, count: points.count)
        try shimCall { rp_place_camera(xyz, xy, n, &cam, &params, &out, &mask, mask.count, $0) }
        let R = withUnsafeBytes(of: out.R) { Array($0.bindMemory(to: Double.self)) }
        let covariance = withUnsafeBytes(of: out.t_covariance) { Array($0.bindMemory(to: Double.self)) }
        return CameraPlacement(rotation: Matrix3(R), translation: SIMD3(out.t.0, out.t.1, out.t.2), inliers: mask.map { $0 != 0 },
                               inlierCount: Int(out.inliers), rmsPixels: out.rms_pixels, translationCovariance: Matrix3(covariance),
                               rotationSigmaDegrees: out.rotation_sigma_degrees)
    }
}
