import RephotoShim

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

extension RelativePose {
    /// Essential matrix + recoverPose, then the degeneracy check against the homography.
    public static func estimate(_ pairs: Correspondences, referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                                homography: HomographyEstimate, config: PoseConfig) throws -> RelativePose {
        var params = try config.essential.shimParameters(refine: config.refine)
        let n = try cInt(pairs.count, "correspondence count")
        var refCam = try referenceCamera.shimCamera(), curCam = try currentCamera.shimCamera()
        let a = pairs.referenceXY, b = pairs.currentXY
        let focal = (currentCamera.fx + currentCamera.fy) / 2
        let threshold = config.degeneracyThreshold ?? config.essential.threshold

        /// The rotation-only model on the homography inliers, and how many of all matches it explains.
        func rotationFit() throws -> (Matrix3, Int) {
            let selected = homography.inliers.map { UInt8($0 ? 1 : 0) }
            var r = [Double](repeating: 0, count: 9)
            var residuals = [Double](repeating: 0, count: pairs.count)
            try shimCall { status in
                rp_rotation_from_bearings(a, b, selected, n, &refCam, &curCam, &r, &residuals, residuals.count, status)
            }
            let limit = threshold * PoseConfig.transferToSampsonThreshold / focal
            return (Matrix3(r), residuals.filter { $0 < limit }.count)
        }

        var out = rp_relative_pose()
        var mask = [UInt8](repeating: 0, count: pairs.count)
        var sampson = [Double](repeating: 0, count: pairs.count)
        do {
            try shimCall { status in
                rp_estimate_relative_pose(a, b, n, &refCam, &curCam, &params, &out, &mask, mask.count, &sampson, sampson.count, status)
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
        let rotation = Matrix3(out.R)
        let t = [out.t.0, out.t.1, out.t.2]
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
