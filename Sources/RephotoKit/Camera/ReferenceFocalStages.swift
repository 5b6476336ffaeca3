import RephotoShim

/// The stages of the reference camera's estimation in the shim (CShims/Core/pose/focal/), each one C entry point that
/// searches and reports its evidence: the cameras at one place (`colocated`), the scan of the cameras apart (`scan`),
/// the six-point loop with the focal length free (`free`) and the refinement (`refine`). `ReferenceFocalDecision`
/// runs them as its rules ask; tests run them alone. The correspondences and settings are prepared once.
package struct ReferenceFocalStages {
    /// The scan's best focal length on its log grid, reference pixels, its cost (truncated squared pixel residuals),
    /// whether it lies inside the range, its pose's inliers, and the grid's focal lengths within one inlier's worth
    /// (`close`) and within `spanInliers`' worth (`span`) of it; its pose and inlier flags start the refinement.
    package struct Scan: Equatable, Sendable {
        package var focal: Double
        package var cost: Double
        package var inside: Bool
        package var inliers: Int
        package var close: ClosedRange<Double>
        package var span: ClosedRange<Double>
        package var rotation = Matrix3.identity
        package var translation = SIMD3<Double>(0, 0, 1)
        package var mask: [UInt8] = []
    }

    /// The focal length making K_current^-1 H K_reference nearest a rotation, how far it is from one (`gap`), whether
    /// it lies inside the range, the homography's inliers (and their flags) and a fundamental matrix's.
    package struct Colocated: Equatable, Sendable {
        package var focal: Double
        package var gap: Double
        package var inside: Bool
        package var inliers: Int
        package var fundamentalInliers: Int
        package var mask: [UInt8] = []
    }

    /// The refined focal length, its sigma (%) and the part of it the noise makes, from the profile's curvature (or, the
    /// focal length free, the joint covariance), the principal point and whether it was estimated, and the
    /// correspondences the refinement kept.
    package struct Refined: Equatable, Sendable {
        package var focal: Double
        package var noiseSigmaPercent: Double
        package var sigmaPercent: Double
        package var principalPoint: Point2
        package var principalPointEstimated: Bool
        package var inliers: Int

        init(_ out: rp_focal) {
            self.init(focal: out.focal, noiseSigmaPercent: out.noise_sigma_percent, sigmaPercent: out.sigma_percent,
                      principalPoint: Point2(x: out.principal_point_x, y: out.principal_point_y),
                      principalPointEstimated: out.principal_point_estimated != 0, inliers: Int(out.inliers))
        }

        package init(focal: Double, noiseSigmaPercent: Double, sigmaPercent: Double, principalPoint: Point2, principalPointEstimated: Bool,
                     inliers: Int) {
            self.focal = focal
            self.noiseSigmaPercent = noiseSigmaPercent
            self.sigmaPercent = sigmaPercent
            self.principalPoint = principalPoint
            self.principalPointEstimated = principalPointEstimated
            self.inliers = inliers
        }
    }

    /// The six-point loop with the focal length free: whether it found a model, its cost (the scan's, over every
    /// correspondence at the centre), its inliers, and the joint refinement on them (`refined`: it ran and its
    /// covariance could be inverted; `answer` its focal length, sigma and principal point).
    package struct Free: Equatable, Sendable {
        package var found: Bool
        package var cost: Double
        package var loopInliers: Int
        package var refined: Bool
        package var answer: Refined
    }

    let reference: [Double], current: [Double]
    let count: Int32, width: Int32, height: Int32
    let camera: rp_camera
    /// The shim's settings; their focal range is what the rules read as the bounds.
    let params: rp_focal_params

    /// The reference's pixels of `pairs` taken from `origin`, the corner of the photo (`photoSize`: the reference
    /// image, or the photo inside a print's border).
    package init(_ pairs: Correspondences, origin: Point2 = Point2(x: 0, y: 0), photoSize: ImageSize, currentCamera: CameraIntrinsics,
                 config: ReferenceFocalConfig) throws {
        count = try cInt(pairs.count, "correspondence count")
        reference = Correspondences.flat(pairs.reference.map { Point2(x: $0.x - origin.x, y: $0.y - origin.y) }, order: nil)
        current = Correspondences.flat(pairs.current, order: nil)
        camera = try currentCamera.shimCamera()
        params = try config.shimParameters(side: Double(max(photoSize.width, photoSize.height)))
        width = try cInt(photoSize.width, "reference width")
        height = try cInt(photoSize.height, "reference height")
    }

    /// The focal lengths searched, reference pixels.
    package var bounds: (lower: Double, upper: Double) { (params.min_focal, params.max_focal) }
    /// The photo's pixels, which a principal point must lie within: 0...width - 1, 0...height - 1.
    package var photo: (width: Int, height: Int) { (Int(width), Int(height)) }

    package func colocated() throws -> Colocated {
        var out = rp_focal_colocated_result()
        var mask = [UInt8](repeating: 0, count: Int(count))
        let capacity = mask.count
        try call { a, b, camera, params, status in
            rp_focal_colocated(a, b, count, width, height, camera, params, &out, &mask, capacity, status)
        }
        return Colocated(focal: out.focal, gap: out.gap, inside: out.inside != 0, inliers: Int(out.inliers),
                         fundamentalInliers: Int(out.fundamental_inliers), mask: mask)
    }

    package func scan() throws -> Scan {
        var out = rp_focal_scan_result()
        var mask = [UInt8](repeating: 0, count: Int(count))
        let capacity = mask.count
        try call { a, b, camera, params, status in
            rp_focal_scan(a, b, count, width, height, camera, params, &out, &mask, capacity, status)
        }
        return Scan(focal: out.focal, cost: out.cost, inside: out.inside != 0, inliers: Int(out.inliers),
                    close: out.low...max(out.low, out.high), span: out.span_low...max(out.span_low, out.span_high),
                    rotation: Matrix3(out.R), translation: SIMD3(out.t.0, out.t.1, out.t.2), mask: mask)
    }

    package func free() throws -> Free {
        var out = rp_focal_free_result()
        try call { a, b, camera, params, status in
            rp_focal_free(a, b, count, width, height, camera, params, &out, status)
        }
        return Free(found: out.found != 0, cost: out.cost, loopInliers: Int(out.loop_inliers), refined: out.refined != 0,
                    answer: Refined(out.focal))
    }

    /// From `focal` (reference pixels) on the correspondences `mask` flags (nil: every one); a relative pose starts
    /// from `scan`'s pose when given, else from the scan's search at `focal`.
    package func refine(from focal: Double, model: ReferenceFocal.Model, scan: Scan? = nil, mask: [UInt8]? = nil) throws -> Refined {
        var start = rp_focal_start()
        start.focal = focal
        start.model = model == .rotation ? 2 : 1
        if let scan {
            start.has_pose = 1
            start.R = scan.rotation.tuple
            start.t = (scan.translation.x, scan.translation.y, scan.translation.z)
        }
        if let mask, mask.count != Int(count) { throw RephotoError.badInput("\(mask.count) inlier flags for \(count) correspondences") }
        var out = rp_focal()
        try call { a, b, camera, params, status in
            withUnsafePointer(to: start) { start in
                mask.map { rp_focal_refine(a, b, count, width, height, camera, params, start, $0, &out, status) }
                    ?? rp_focal_refine(a, b, count, width, height, camera, params, start, nil, &out, status)
            }
        }
        return Refined(out)
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
            FocalPose(rotation: Matrix3(p.R), translation: SIMD3(p.t.0, p.t.1, p.t.2), focal: p.focal)
        }
    }

    private func call(_ stage: (UnsafePointer<Double>, UnsafePointer<Double>, UnsafePointer<rp_camera>, UnsafePointer<rp_focal_params>,
                                UnsafeMutablePointer<rp_status>) -> Int32) throws {
        var camera = camera, params = params
        try shimCall { status in stage(reference, current, &camera, &params, status) }
    }
}
