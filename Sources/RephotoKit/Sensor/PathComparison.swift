import Foundation

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

    public static func compare(sensor: SensorPath, reference: Attitude, current: Attitude, visionRotation: Matrix3?,
                               visionQuadrilateral: Quadrilateral, currentWidth: Int,
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
        }
        if let quad = sensor.quadrilateral {
            let error = quad.meanCornerDistance(to: visionQuadrilateral)
            out.quadrilateralErrorPixels = error
            out.quadrilateralErrorPercent = error / Double(currentWidth) * 100
        }
        return out
    }
}

func wrapDegrees(_ angle: Double) -> Double {
    var a = angle.truncatingRemainder(dividingBy: 360)
    if a > 180 { a -= 360 }
    if a < -180 { a += 360 }
    return a
}
