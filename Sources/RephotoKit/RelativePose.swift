import CShims

/// Relative camera pose in the convention X_current = R X_reference + t (OpenCV camera frames).
public struct RelativePose: Sendable {
    public enum RotationSource: String, Codable, Sendable {
        /// recoverPose on the essential matrix.
        case essential
        /// Rotation-only model fitted to the homography inliers: used when the essential matrix gives no pose
        /// (no baseline, so no point can be triangulated in front of the cameras).
        case homography
    }

    public var rotation: Matrix3
    /// On degenerate pairs: the rotation derived from the homography inliers (orthogonal Procrustes on their
    /// undistorted bearings), beside `rotation`. The essential rotation stays the estimate because a
    /// rotation-only fit absorbs any remaining parallax (bundled synth-approach frame 8: 1.09° against 0.12°).
    public var homographyRotation: Matrix3?
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
    /// In a degenerate pair: correspondences a pure rotation explains within the homography's threshold.
    public var rotationOnlySupport: Int
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
        let a = pairs.referenceXY, b = pairs.currentXY
        let focal = (currentCamera.fx + currentCamera.fy) / 2
        let threshold = config.degeneracyThreshold ?? config.essential.threshold

        /// The rotation-only model on the homography inliers, and how many of all matches it explains.
        func rotationFit() throws -> (Matrix3, Int) {
            let selected = homography.inliers.map { UInt8($0 ? 1 : 0) }
            var r = [Double](repeating: 0, count: 9)
            var residuals = [Double](repeating: 0, count: pairs.count)
            try shimCall { status in
                rp_rotation_from_bearings(a, b, selected, Int32(pairs.count), &refCam, &curCam, &r, &residuals, status)
            }
            let limit = threshold * PoseConfig.transferToSampsonThreshold / focal
            return (Matrix3(r), residuals.filter { $0 < limit }.count)
        }

        var out = rp_relative_pose()
        var mask = [UInt8](repeating: 0, count: pairs.count)
        var sampson = [Double](repeating: 0, count: pairs.count)
        do {
            try shimCall { status in
                rp_estimate_relative_pose(a, b, Int32(pairs.count), &refCam, &curCam, &params, &out, &mask, &sampson, status)
            }
        } catch let error as RephotoError where error.kind == .estimationFailed && homography.inlierCount >= 8 {
            // No usable essential matrix (typically no baseline): the homography still fixes the rotation.
            let (fitted, support) = try rotationFit()
            return RelativePose(
                rotation: fitted, homographyRotation: fitted, translation: nil, rotationOnly: true, rotationSource: .homography,
                essentialInliers: 0, inFront: 0, homographySupport: homography.inlierCount, essentialSupport: 0,
                rotationOnlySupport: support, sampsonRmsPixels: 0, inliers: homography.inliers,
                warnings: ["essential matrix unusable (\(error.message)): rotation-only model from \(homography.inlierCount) homography inliers, translation direction undetermined"])
        }
        let rotation = Matrix3(withUnsafeBytes(of: out.R) { Array($0.bindMemory(to: Double.self)) })
        let t = withUnsafeBytes(of: out.t) { Array($0.bindMemory(to: Double.self)) }
        var pose = RelativePose(
            rotation: rotation, homographyRotation: nil, translation: SIMD3(t[0], t[1], t[2]), rotationOnly: false, rotationSource: .essential,
            essentialInliers: Int(out.inliers), inFront: Int(out.in_front), homographySupport: 0, essentialSupport: 0,
            rotationOnlySupport: 0, sampsonRmsPixels: out.sampson_rms_pixels, inliers: mask.map { $0 != 0 }, warnings: [])

        pose.homographySupport = HomographyEstimate.support(of: homography.matrix, pairs,
                                                            threshold: threshold * PoseConfig.transferToSampsonThreshold)
        pose.essentialSupport = sampson.filter { $0 < threshold }.count
        guard Double(pose.homographySupport) > config.degeneracyRatio * Double(max(pose.essentialSupport, 1)) else {
            return pose
        }
        // Degenerate for the essential matrix: the translation direction is not observable.
        pose.rotationOnly = true
        pose.translation = nil
        let (fitted, support) = try rotationFit()
        pose.homographyRotation = fitted
        pose.rotationOnlySupport = support
        // A homography also absorbs a plane's parallax, a pure rotation cannot: the same support test tells them apart.
        if Double(support) > config.degeneracyRatio * Double(max(pose.essentialSupport, 1)) {
            pose.warnings.append("rotation-only motion: translation direction undetermined; a pure rotation explains \(support) matches, the essential matrix \(pose.essentialSupport)")
        } else {
            pose.warnings.append("planar scene: homography explains \(pose.homographySupport) matches, the essential matrix \(pose.essentialSupport), translation direction undetermined")
        }
        return pose
    }
}
