import CShims

/// Relative camera pose in the convention X_current = R X_reference + t (OpenCV camera frames).
public struct RelativePose: Sendable {
    public enum RotationSource: String, Codable, Sendable {
        /// recoverPose on the essential matrix.
        case essential
        /// Rotation-only model fitted to the homography inliers (pure rotation about the camera centre).
        case homography
    }

    public var rotation: Matrix3
    /// Unit direction; nil when undetermined (rotation-only or planar scene).
    public var translation: SIMD3<Double>?
    /// The Bae et al. degeneracy flag: homography inliers exceed the configured share of essential inliers.
    public var rotationOnly: Bool
    public var rotationSource: RotationSource
    public var essentialInliers: Int
    /// Essential inliers triangulated in front of both cameras.
    public var inFront: Int
    /// Correspondences the homography explains within the degeneracy threshold (transfer error).
    public var homographySupport: Int
    /// Correspondences the essential matrix explains within the same threshold (Sampson distance).
    public var essentialSupport: Int
    public var sampsonRmsPixels: Double
    /// One flag per correspondence: essential inlier and in front.
    public var inliers: [Bool]
    public var warnings: [String]

    public var rotationDegrees: Double { rotation.rotationAngleDegrees }
}

/// Settings of the essential-matrix pose and its degeneracy check.
public struct PoseConfig: Codable, Equatable, Sendable {
    public var essential = RobustConfig.essentialDefault
    /// Bae et al. 2010: flag rotation-only/planar when the homography explains more than this share of
    /// what the essential matrix explains.
    public var degeneracyRatio = 0.7
    /// Sampson threshold (pixels) at which the essential matrix's support is counted over all matches; the
    /// homography's support is counted at the equivalent transfer-error threshold (× transferToSampsonThreshold).
    /// nil uses the essential RANSAC threshold. Comparing raw RANSAC inlier counts at each estimator's own
    /// threshold instead flagged facades with real depth (Strecha Herz-Jesu 5→6: ratio 0.83) as planar.
    public var degeneracyThreshold: Double?
    /// Refine R and t by Levenberg-Marquardt on the inliers' Sampson error: OpenCV's RANSAC returns its best
    /// minimal-sample model unrefined (on the synthetic three-plane scene: 1.33° → 0.03° rotation error).
    public var refine = true

    /// Transfer error ||H a − b|| is 2-D and carries the noise of both images (about √2 σ per axis), while
    /// the Sampson distance is 1-D with σ: equal 95 % chi-square coverage needs a transfer threshold
    /// √2 × 2.448 / 1.960 ≈ 1.77 times the Sampson threshold.
    public static let transferToSampsonThreshold = 2.0.squareRoot() * 2.448 / 1.960

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case essential, degeneracyRatio, degeneracyThreshold, refine
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.essential) {
            essential = try RobustConfig(from: c.superDecoder(forKey: .essential), defaults: .essentialDefault)
        }
        degeneracyRatio = try c.value(.degeneracyRatio, or: 0.7)
        degeneracyThreshold = try c.decodeIfPresent(Double.self, forKey: .degeneracyThreshold)
        refine = try c.value(.refine, or: true)
    }

    /// The essential matrix's shim parameters, with the refinement switch.
    package var essentialShimParameters: rp_robust_params {
        var p = essential.shimParameters
        p.refine = refine ? 1 : 0
        return p
    }

    public func validate() throws {
        try essential.validate("pose.essential", essential: true)
        try require(degeneracyRatio > 0 && degeneracyRatio <= 1, "pose.degeneracyRatio", degeneracyRatio, "in (0, 1]")
        if let degeneracyThreshold {
            try require(degeneracyThreshold > 0 && degeneracyThreshold.isFinite, "pose.degeneracyThreshold", degeneracyThreshold, "> 0 pixels")
        }
    }
}

extension RelativePose {
    /// Essential matrix + recoverPose, then the degeneracy check against the homography.
    public static func estimate(_ pairs: Correspondences, referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                                homography: HomographyEstimate, config: PoseConfig) throws -> RelativePose {
        try config.validate()
        var params = config.essentialShimParameters
        var refCam = referenceCamera.shimCamera, curCam = currentCamera.shimCamera
        var out = rp_relative_pose()
        var mask = [UInt8](repeating: 0, count: pairs.count)
        var sampson = [Double](repeating: 0, count: pairs.count)
        let a = pairs.referenceXY, b = pairs.currentXY
        try shimCall { status in
            rp_estimate_relative_pose(a, b, Int32(pairs.count), &refCam, &curCam, &params, &out, &mask, &sampson, status)
        }
        let rotation = Matrix3(withUnsafeBytes(of: out.R) { Array($0.bindMemory(to: Double.self)) })
        let t = withUnsafeBytes(of: out.t) { Array($0.bindMemory(to: Double.self)) }
        var pose = RelativePose(
            rotation: rotation, translation: SIMD3(t[0], t[1], t[2]), rotationOnly: false, rotationSource: .essential,
            essentialInliers: Int(out.inliers), inFront: Int(out.in_front), homographySupport: 0, essentialSupport: 0,
            sampsonRmsPixels: out.sampson_rms_pixels, inliers: mask.map { $0 != 0 }, warnings: [])

        let threshold = config.degeneracyThreshold ?? config.essential.threshold
        pose.homographySupport = HomographyEstimate.support(of: homography.matrix, pairs,
                                                            threshold: threshold * PoseConfig.transferToSampsonThreshold)
        pose.essentialSupport = sampson.filter { $0 < threshold }.count
        guard Double(pose.homographySupport) > config.degeneracyRatio * Double(max(pose.essentialSupport, 1)) else {
            return pose
        }
        // Degenerate for the essential matrix: the translation direction is not observable.
        pose.rotationOnly = true
        pose.translation = nil
        let selected = homography.inliers.map { UInt8($0 ? 1 : 0) }
        var r = [Double](repeating: 0, count: 9)
        var residual = 0.0
        try shimCall { status in
            rp_rotation_from_bearings(a, b, selected, Int32(pairs.count), &refCam, &curCam, &r, &residual, status)
        }
        let fitted = Matrix3(r)
        // A pure rotation leaves residuals at the noise level; a plane seen from a new position does not.
        let median = residual * (currentCamera.fx + currentCamera.fy) / 2
        if median <= max(2 * config.essential.threshold, 1) {
            pose.rotation = fitted
            pose.rotationSource = .homography
            pose.warnings.append("rotation-only motion: translation direction undetermined; rotation fitted to \(homography.inlierCount) homography inliers (median residual \(fmt(median)) px)")
        } else {
            pose.warnings.append("planar scene: homography explains \(pose.homographySupport) matches, the essential matrix \(pose.essentialSupport), translation direction undetermined; rotation from the essential matrix")
        }
        return pose
    }
}
