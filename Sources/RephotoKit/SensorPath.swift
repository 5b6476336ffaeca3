import Foundation

/// A pixel position encoded as {"x": …, "y": …}.
public struct PixelPoint: Equatable, Sendable, Codable {
    public var x: Double
    public var y: Double
}

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
    public var navigationPoint: PixelPoint
    /// The reference's centred rectangle mapped by K_current R K_reference⁻¹; nil without intrinsics.
    @NullEncoded public var quadrilateral: Quadrilateral?
    /// Level indicator for a new capture, from the current attitude alone.
    public var level: Level
    public var warnings: [String]

    public struct Level: Encodable, Sendable, Equatable {
        /// Rotation of the horizon in the image, degrees; > 0: the level rectangle turns clockwise on screen
        /// (the camera is rolled counter-clockwise).
        public var angleDegrees: Double
        /// The centred target rectangle rotated by that angle about the frame centre.
        public var rectangle: Quadrilateral
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
                "attitude frames \(reference.frame.rawValue) (reference) and \(current.frame.rawValue) (current) do not share a heading origin: the relative rotation is undefined")
        }
        return (reference.frame.toEastNorthUp, current.frame.toEastNorthUp, [])
    }

    /// World-from-camera rotation of a capture.
    static func worldFromCamera(_ attitude: Attitude, frame: Matrix3, config: SensorConfig) -> Matrix3 {
        frame * attitude.quaternion.rotationMatrix * config.cameraFromDevice(attitude.orientation).transposed
    }

    public static func compute(reference: Attitude, current: Attitude, referenceSize: ImageSize, currentSize: ImageSize,
                               referenceCamera: CameraIntrinsics?, currentCamera: CameraIntrinsics?,
                               config: SensorConfig = SensorConfig(), targetFraction: Double = 0.6) throws -> SensorPath {
        try config.validate()
        let (f0, f1, warnings) = try commonFrame(reference, current)
        let r0 = worldFromCamera(reference, frame: f0, config: config)
        let r1 = worldFromCamera(current, frame: f1, config: config)
        let rotation = r1.transposed * r0
        let q0 = Quaternion(rotationMatrix: f0) * reference.quaternion
        let q1 = Quaternion(rotationMatrix: f1) * current.quaternion
        let delta = (q0.inverse * q1).normalized
        let euler = EulerAngles213(delta)
        let w = Double(currentSize.width), h = Double(currentSize.height)
        let point = PixelPoint(x: (euler.roll + .pi) / (2 * .pi) * w, y: (euler.pitch + .pi / 2) / .pi * h)
        var quad: Quadrilateral?
        if let kr = referenceCamera?.matrix, let kc = currentCamera?.matrix, let krInverse = kr.inverse {
            quad = Quadrilateral.centred(in: referenceSize, fraction: targetFraction).mapped(by: kc * rotation * krInverse)
        }
        return SensorPath(rotation: rotation, rotationDegrees: rotation.rotationAngleDegrees, relativeQuaternion: delta,
                          euler: euler.degrees, navigationPoint: point, quadrilateral: quad,
                          level: level(current, frameSize: currentSize, config: config, targetFraction: targetFraction),
                          warnings: warnings + (quad == nil ? ["no intrinsics: no sensor quadrilateral"] : []))
    }

    /// The level indicator: the angle of gravity in the image (0 when it points straight down the frame).
    public static func level(_ attitude: Attitude, frameSize: ImageSize, config: SensorConfig = SensorConfig(),
                             targetFraction: Double = 0.6) -> Level {
        let cameraToWorld = worldFromCamera(attitude, frame: attitude.frame.toEastNorthUp, config: config)
        let gravity = cameraToWorld.transposed * SIMD3(0, 0, -1)
        let angle = atan2(-gravity.x, gravity.y)
        let cx = Double(frameSize.width) / 2, cy = Double(frameSize.height) / 2
        let turn = Matrix3([1, 0, cx, 0, 1, cy, 0, 0, 1]) * Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: angle)
            * Matrix3([1, 0, -cx, 0, 1, -cy, 0, 0, 1])
        return Level(angleDegrees: angle * 180 / .pi,
                     rectangle: Quadrilateral.centred(in: frameSize, fraction: targetFraction).mapped(by: turn))
    }
}

/// How far the sensor path and the vision path agree on one pair.
public struct PathComparison: Encodable, Sendable, Equatable {
    /// Geodesic angle between the sensor rotation and the vision rotation, degrees; nil without a vision pose.
    @NullEncoded public var rotationAngleDegrees: Double?
    /// Sensor minus vision, 2-1-3 Euler angles of the relative attitude in device axes, degrees, wrapped to ±180.
    @NullEncoded public var rollDifferenceDegrees: Double?
    @NullEncoded public var pitchDifferenceDegrees: Double?
    @NullEncoded public var yawDifferenceDegrees: Double?
    /// Mean corner distance between the sensor and vision quadrilaterals; nil without intrinsics.
    @NullEncoded public var quadrilateralErrorPixels: Double?
    /// The same as a percentage of the current frame's width.
    @NullEncoded public var quadrilateralErrorPercent: Double?
    /// Each path's rotation error against a ground truth, when one is given.
    @NullEncoded public var sensorRotationErrorDegrees: Double?
    @NullEncoded public var visionRotationErrorDegrees: Double?

    public static func compare(sensor: SensorPath, reference: Attitude, current: Attitude, visionRotation: Matrix3?,
                               visionQuadrilateral: Quadrilateral, currentWidth: Int, truth: Matrix3? = nil,
                               config: SensorConfig = SensorConfig()) -> PathComparison {
        var out = PathComparison()
        if let vision = visionRotation {
            out.rotationAngleDegrees = Matrix3.angleDegrees(between: sensor.rotation, and: vision)
            // The vision rotation as a relative device attitude: R(q_delta) = C0ᵀ Rᵀ C1.
            let c0 = config.cameraFromDevice(reference.orientation), c1 = config.cameraFromDevice(current.orientation)
            let visionEuler = EulerAngles213(Quaternion(rotationMatrix: c0.transposed * vision.transposed * c1)).degrees
            out.rollDifferenceDegrees = wrapDegrees(sensor.euler.roll - visionEuler.roll)
            out.pitchDifferenceDegrees = wrapDegrees(sensor.euler.pitch - visionEuler.pitch)
            out.yawDifferenceDegrees = wrapDegrees(sensor.euler.yaw - visionEuler.yaw)
            if let truth { out.visionRotationErrorDegrees = Matrix3.angleDegrees(between: vision, and: truth) }
        }
        if let quad = sensor.quadrilateral {
            let error = quad.meanCornerDistance(to: visionQuadrilateral)
            out.quadrilateralErrorPixels = error
            out.quadrilateralErrorPercent = error / Double(currentWidth) * 100
        }
        if let truth { out.sensorRotationErrorDegrees = Matrix3.angleDegrees(between: sensor.rotation, and: truth) }
        return out
    }
}

func wrapDegrees(_ angle: Double) -> Double {
    var a = angle.truncatingRemainder(dividingBy: 360)
    if a > 180 { a -= 360 }
    if a < -180 { a += 360 }
    return a
}
