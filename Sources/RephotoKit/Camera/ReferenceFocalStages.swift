import RephotoShim

/// The stages `ReferenceFocal.estimate` runs in the shim, one at a time (CShims/Core/pose/focal/), so each can be
/// tested alone: the scan of the cameras apart, the cameras at one place, and the refinement. Package-level: only
/// tests call them; the pipeline goes through `ReferenceFocal.estimate`.
package enum ReferenceFocalStages {
    /// The scan's best focal length on its log grid, reference pixels, its cost (truncated squared pixel residuals),
    /// whether it lies inside the range, its pose's inliers, and the grid's focal lengths within one inlier's worth
    /// (`close`) and within `spanInliers`' worth (`span`) of it.
    package struct Scan: Equatable, Sendable {
        package var focal: Double
        package var cost: Double
        package var inside: Bool
        package var inliers: Int
        package var close: ClosedRange<Double>
        package var span: ClosedRange<Double>
    }

    /// The focal length making K_current^-1 H K_reference nearest a rotation, how far it is from one (`gap`), whether
    /// it lies inside the range, the homography's inliers and a fundamental matrix's.
    package struct Colocated: Equatable, Sendable {
        package var focal: Double
        package var gap: Double
        package var inside: Bool
        package var inliers: Int
        package var fundamentalInliers: Int
    }

    /// The refined focal length, its sigma (%) from the profile's curvature, the principal point and whether it was
    /// estimated, and the correspondences the refinement kept.
    package struct Refined: Equatable, Sendable {
        package var focal: Double
        package var noiseSigmaPercent: Double
        package var sigmaPercent: Double
        package var principalPoint: Point2
        package var principalPointEstimated: Bool
        package var inliers: Int
    }

    package static func scan(_ pairs: Correspondences, referenceSize: ImageSize, currentCamera: CameraIntrinsics,
                             config: ReferenceFocalConfig) throws -> Scan {
        var out = rp_focal_scan_result()
        try call(pairs, referenceSize, currentCamera, config) { a, b, n, w, h, camera, params, status in
            rp_focal_scan(a, b, n, w, h, camera, params, &out, status)
        }
        return Scan(focal: out.focal, cost: out.cost, inside: out.inside != 0, inliers: Int(out.inliers),
                    close: out.low...max(out.low, out.high), span: out.span_low...max(out.span_low, out.span_high))
    }

    package static func colocated(_ pairs: Correspondences, referenceSize: ImageSize, currentCamera: CameraIntrinsics,
                                  config: ReferenceFocalConfig) throws -> Colocated {
        var out = rp_focal_colocated_result()
        try call(pairs, referenceSize, currentCamera, config) { a, b, n, w, h, camera, params, status in
            rp_focal_colocated(a, b, n, w, h, camera, params, &out, status)
        }
        return Colocated(focal: out.focal, gap: out.gap, inside: out.inside != 0, inliers: Int(out.inliers),
                         fundamentalInliers: Int(out.fundamental_inliers))
    }

    /// From `start` (reference pixels), every correspondence taken as an inlier; `model` `.fundamental` starts from the
    /// scan's pose at `start`.
    package static func refine(_ pairs: Correspondences, referenceSize: ImageSize, currentCamera: CameraIntrinsics,
                               config: ReferenceFocalConfig, start: Double, model: ReferenceFocal.Model) throws -> Refined {
        var out = rp_focal()
        try call(pairs, referenceSize, currentCamera, config) { a, b, n, w, h, camera, params, status in
            rp_focal_refine(a, b, n, w, h, camera, params, start, model == .rotation ? 2 : 1, &out, status)
        }
        return Refined(focal: out.focal, noiseSigmaPercent: out.noise_sigma_percent, sigmaPercent: out.sigma_percent,
                       principalPoint: Point2(x: out.principal_point_x, y: out.principal_point_y),
                       principalPointEstimated: out.principal_point_estimated != 0, inliers: Int(out.inliers))
    }

    /// A minimal solution of the six-point solver: X_current = rotation X_reference + translation (unit length), the
    /// reference's focal length in its pixels.
    package struct FocalPose: Sendable {
        package var rotation: Matrix3
        package var translation: SIMD3<Double>
        package var focal: Double
    }

    /// The six-point solver alone: `reference` and `current` six pixels each, the reference's principal point at
    /// `principal`; the poses with every point in front whose focal length lies in `focalRange`.
    package static func sixPoint(reference: [Point2], current: [Point2], principal: Point2, currentCamera: CameraIntrinsics,
                                 focalRange: ClosedRange<Double>) throws -> [FocalPose] {
        guard reference.count == 6, current.count == 6 else { throw RephotoError.badInput("the six-point solver takes six correspondences") }
        let a = Correspondences.flat(reference, order: nil), b = Correspondences.flat(current, order: nil)
        var camera = try currentCamera.shimCamera()
        var poses = [rp_focal_pose](repeating: rp_focal_pose(), count: 40)
        var count: Int32 = 0
        try shimCall { status in
            rp_focal_six_point(a, b, principal.x, principal.y, &camera, focalRange.lowerBound, focalRange.upperBound, &poses, 40, &count, status)
        }
        return poses.prefix(Int(count)).map { p in
            let r = withUnsafeBytes(of: p.R) { Array($0.bindMemory(to: Double.self)) }
            return FocalPose(rotation: Matrix3(SIMD3(r[0], r[1], r[2]), SIMD3(r[3], r[4], r[5]), SIMD3(r[6], r[7], r[8])),
                             translation: SIMD3(p.t.0, p.t.1, p.t.2), focal: p.focal)
        }
    }

    private typealias Stage = (UnsafePointer<Double>, UnsafePointer<Double>, Int32, Int32, Int32, UnsafePointer<rp_camera>,
                               UnsafePointer<rp_focal_params>, UnsafeMutablePointer<rp_status>) -> Int32

    private static func call(_ pairs: Correspondences, _ size: ImageSize, _ currentCamera: CameraIntrinsics, _ config: ReferenceFocalConfig,
                             _ stage: Stage) throws {
        let n = try cInt(pairs.count, "correspondence count")
        let a = Correspondences.flat(pairs.reference, order: nil), b = Correspondences.flat(pairs.current, order: nil)
        var camera = try currentCamera.shimCamera()
        var params = try config.shimParameters(side: Double(max(size.width, size.height)))
        let width = try cInt(size.width, "reference width"), height = try cInt(size.height, "reference height")
        try shimCall { status in stage(a, b, n, width, height, &camera, &params, status) }
    }
}
