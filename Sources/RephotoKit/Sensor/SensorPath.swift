import Foundation

/// The sensor-quaternion path (Plsek 2019): the relative rotation from two phone attitudes, the paper's
/// navigation point, and the rotation-only quadrilateral H = K R K⁻¹ in the vision path's pixel space.
public struct SensorPath: Encodable, Sendable {
    /// X_current = R X_reference (vision convention, OpenCV camera axes): directly comparable with the pose.
    public var rotation: Matrix3
    public var rotationDegrees: Double
    /// q_delta = q0⁻¹ q1 in device axes, as in the paper.
    public var relativeQuaternion: Quaternion
    /// 2-1-3 Euler angles of q_delta, degrees.
    public var euler: EulerAngles213
    /// The paper's point: x = (ROLL + π)/(2π)·W, y = (PITCH + π/2)/π·H for the current frame's size; the
    /// centre when the attitudes agree.
    public var navigationPoint: Point2
    /// The reference's centred rectangle mapped by K_current R K_reference⁻¹; nil without intrinsics.
    @NullEncoded public var quadrilateral: Quadrilateral?
    /// Level indicator for a new capture, from the current attitude alone.
    public var level: Level
    public var warnings: [String]
    /// Up in the reference camera's axes (unit). A phone's attitude errs mostly in heading, a turn about the
    /// vertical, so the sensor-guided search varies the rotation about this axis. Not part of the JSON.
    public var referenceVertical: SIMD3<Double> = SIMD3(0, -1, 0)

    enum CodingKeys: String, CodingKey {
        case rotation, rotationDegrees, relativeQuaternion, euler, navigationPoint, quadrilateral, level, warnings
    }
    enum PointKeys: String, CodingKey { case x, y }

    // The navigation point is documented as {"x", "y"} (docs/json-output.md), unlike Point2's [x, y].
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rotation, forKey: .rotation)
        try c.encode(rotationDegrees, forKey: .rotationDegrees)
        try c.encode(relativeQuaternion, forKey: .relativeQuaternion)
        try c.encode(euler, forKey: .euler)
        var point = c.nestedContainer(keyedBy: PointKeys.self, forKey: .navigationPoint)
        try point.encode(navigationPoint.x, forKey: .x)
        try point.encode(navigationPoint.y, forKey: .y)
        try c.encode(_quadrilateral, forKey: .quadrilateral)
        try c.encode(level, forKey: .level)
        try c.encode(warnings, forKey: .warnings)
    }

    public struct Level: Encodable, Sendable, Equatable {
        /// Rotation of the horizon in the image, degrees; > 0: the level rectangle turns clockwise on screen
        /// (the camera is rolled counter-clockwise).
        public var angleDegrees: Double
        /// The centred target rectangle rotated by that angle about the frame centre.
        public var rectangle: Quadrilateral
        /// Set when the angle is noise: gravity lies along the optical axis (reported in `SensorPath.warnings`).
        public var warning: String?

        enum CodingKeys: String, CodingKey { case angleDegrees, rectangle }
    }

    /// Both attitudes expressed in one frame (east-north-up when they are tied to the same north).
    static func commonFrame(_ reference: Attitude, _ current: Attitude) throws -> (Matrix3, Matrix3, [String]) {
        if reference.frame == current.frame {
            let warning = reference.frame.north == .arbitrary
                ? ["attitude frame \(reference.frame.rawValue) has an arbitrary yaw origin: the sensor yaw is meaningful only if both captures share one session"]
                : []
            return (.identity, .identity, warning)
        }
        guard reference.frame.north == current.frame.north, reference.frame.north != .arbitrary else {
            throw RephotoError.badInput(
                "attitude frames \(reference.frame.rawValue) (reference) and \(current.frame.rawValue) (current) do not share a heading origin: the relative rotation is undefined",
                cause: .headingOriginsDiffer)
        }
        return (reference.frame.toEastNorthUp, current.frame.toEastNorthUp, [])
    }

    /// World-from-camera rotation of a capture.
    static func worldFromCamera(_ attitude: Attitude, frame: Matrix3, config: SensorConfig) -> Matrix3 {
        frame * attitude.quaternion.rotationMatrix * config.cameraFromDevice(attitude.orientation).transposed
    }

    public static func compute(reference: Attitude, current: Attitude, referenceSize: ImageSize, currentSize: ImageSize,
                               referenceCamera: CameraIntrinsics?, currentCamera: CameraIntrinsics?,
                               config: SensorConfig = SensorConfig(), targetFraction: Double = NavigationConfig().targetFraction) throws -> SensorPath {
        let (f0, f1, warnings) = try commonFrame(reference, current)
        let r0 = worldFromCamera(reference, frame: f0, config: config)
        let r1 = worldFromCamera(current, frame: f1, config: config)
        let rotation = r1.transposed * r0
        let q0 = Quaternion(rotationMatrix: f0) * reference.quaternion
        let q1 = Quaternion(rotationMatrix: f1) * current.quaternion
        let delta = (q0.inverse * q1).normalized
        let euler = EulerAngles213(delta)
        let w = Double(currentSize.width), h = Double(currentSize.height)
        let point = Point2(x: (euler.roll + .pi) / (2 * .pi) * w, y: (euler.pitch + .pi / 2) / .pi * h)
        var quad: Quadrilateral?
        var quadWarning: String? = "no intrinsics: no sensor quadrilateral"
        if let kr = referenceCamera?.matrix, let kc = currentCamera?.matrix, let krInverse = kr.inverse {
            let target = Quadrilateral.centred(in: referenceSize, fraction: targetFraction)
            // A corner whose ray the rotation turns behind the current camera has no image: the projected shape
            // would be mirrored or crossed, a precise-looking wrong guide.
            let behind = target.corners.filter { (rotation * (krInverse * SIMD3($0.x, $0.y, 1))).z <= 0 }.count
            if behind == 0 {
                quad = target.mapped(by: kc * rotation * krInverse)
                quadWarning = nil
            } else {
                quadWarning = String(format: "the sensor's rotation (%.0f°) turns %d of the target's 4 corners behind the camera: no sensor quadrilateral",
                                     rotation.rotationAngleDegrees, behind)
            }
        }
        let level = level(current, frameSize: currentSize, config: config, targetFraction: targetFraction)
        return SensorPath(rotation: rotation, rotationDegrees: rotation.rotationAngleDegrees, relativeQuaternion: delta,
                          euler: euler.degrees, navigationPoint: point, quadrilateral: quad, level: level,
                          warnings: warnings + (quadWarning.map { [$0] } ?? []) + (level.warning.map { [$0] } ?? []),
                          referenceVertical: worldFromCamera(reference, frame: reference.frame.toEastNorthUp, config: config).transposed * SIMD3(0, 0, 1))
    }

    /// Within this angle of straight up or down the level indicator is flagged as undefined.
    static let minLevelTiltDegrees = 5.0

    /// The level indicator: the angle of gravity in the image (0 when it points straight down the frame).
    public static func level(_ attitude: Attitude, frameSize: ImageSize, config: SensorConfig = SensorConfig(),
                             targetFraction: Double = NavigationConfig().targetFraction) -> Level {
        let cameraToWorld = worldFromCamera(attitude, frame: attitude.frame.toEastNorthUp, config: config)
        let gravity = cameraToWorld.transposed * SIMD3(0, 0, -1)
        let angle = atan2(-gravity.x, gravity.y)
        let cx = Double(frameSize.width) / 2, cy = Double(frameSize.height) / 2
        let turn = Matrix3([1, 0, cx, 0, 1, cy, 0, 0, 1]) * Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: angle)
            * Matrix3([1, 0, -cx, 0, 1, -cy, 0, 0, 1])
        // Gravity along the optical axis leaves the horizon's angle to noise: 0.1° of tilt swings it by 90°.
        let offAxis = atan2((gravity.x * gravity.x + gravity.y * gravity.y).squareRoot(), abs(gravity.z)) * 180 / .pi
        let warning = offAxis < minLevelTiltDegrees
            ? String(format: "the camera points within %.1f° of straight %@: the level angle is undefined", offAxis, gravity.z > 0 ? "down" : "up")
            : nil
        // + 0 turns atan2's -0 (gravity straight down the frame, x = -0) into 0: JSON printed "-0".
        return Level(angleDegrees: angle * 180 / .pi + 0,
                     rectangle: Quadrilateral.centred(in: frameSize, fraction: targetFraction).mapped(by: turn), warning: warning)
    }
}
