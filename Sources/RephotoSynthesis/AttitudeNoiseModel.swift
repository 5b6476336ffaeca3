import RephotoKit
import RephotoData
import Foundation

/// How a phone's fused attitude departs from the truth, for simulated sequences: white noise on every
/// sample, a gyro-bias drift that grows linearly with time about a fixed axis, and a constant heading
/// (yaw, about the world vertical) offset between the reference session and the current one.
///
/// Defaults are of the order reported for phone attitude estimation: a few hundredths of a degree of
/// sample noise (MEMS gyroscope noise densities of about 0.007 °/s/√Hz, e.g. Bosch BMI160 datasheet,
/// integrated at 100 Hz), drift of about a degree per minute in an uncorrected arbitrary-yaw frame, and
/// heading errors of a few degrees from the magnetometer between sessions.
public struct AttitudeNoiseModel: Codable, Equatable, Sendable {
    /// Standard deviation of the white rotation noise, per axis, degrees.
    public var noiseDegrees = 0.05
    /// Rate of the bias drift, degrees per second.
    public var driftDegreesPerSecond = 0.02
    /// Heading offset of the current session, degrees about the world vertical.
    public var yawOffsetDegrees = 3.0

    public init(noiseDegrees: Double = 0.05, driftDegreesPerSecond: Double = 0.02, yawOffsetDegrees: Double = 3.0) {
        self.noiseDegrees = noiseDegrees
        self.driftDegreesPerSecond = driftDegreesPerSecond
        self.yawOffsetDegrees = yawOffsetDegrees
    }

    public func validate() throws {
        try require(noiseDegrees >= 0 && noiseDegrees <= 180, "attitude noise", noiseDegrees, "0...180 degrees")
        try require(abs(driftDegreesPerSecond) <= 100, "attitude drift", driftDegreesPerSecond, "-100...100 degrees per second")
        try require(abs(yawOffsetDegrees) <= 360, "yaw offset", yawOffsetDegrees, "-360...360 degrees")
    }

    /// The deterministic part of the error at time t (world frame): heading offset and drift so far.
    public func systematicError(at time: Double, driftAxis: SIMD3<Double>) -> Quaternion {
        Quaternion(axis: SIMD3(0, 0, 1), angle: yawOffsetDegrees * .pi / 180)
            * Quaternion(axis: driftAxis, angle: driftDegreesPerSecond * time * .pi / 180)
    }

    /// One measured attitude: systematic error, then white noise, applied in the world frame to the truth.
    public func measure(_ truth: Quaternion, at time: Double, driftAxis: SIMD3<Double>, random: inout SeededRandom) -> Quaternion {
        let s = noiseDegrees * .pi / 180
        let v = SIMD3(random.gaussian() * s, random.gaussian() * s, random.gaussian() * s)
        let noise = length(v) > 0 ? Quaternion(axis: v, angle: length(v)) : .identity
        return (systematicError(at: time, driftAxis: driftAxis) * noise * truth).normalized
    }
}
