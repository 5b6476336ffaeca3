import Foundation

/// A Hamilton quaternion (w, x, y, z), scalar first, as CoreMotion's CMQuaternion. As a rotation it acts
/// on vectors by v' = q v q*, so the matrix of q1 * q2 is R(q1) R(q2).
/// (swift-numerics 1.1.1 ships no quaternion module, hence this small type.)
public struct Quaternion: Equatable, Sendable, Codable, CustomStringConvertible {
    public var w: Double
    public var x: Double
    public var y: Double
    public var z: Double

    public init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w
        self.x = x
        self.y = y
        self.z = z
    }

    public static let identity = Quaternion(w: 1, x: 0, y: 0, z: 0)

    /// Rotation by `angle` radians about `axis` (any length > 0).
    public init(axis: SIMD3<Double>, angle: Double) {
        let n = axis / length(axis), s = sin(angle / 2)
        self.init(w: cos(angle / 2), x: n.x * s, y: n.y * s, z: n.z * s)
    }

    public var norm: Double { (w * w + x * x + y * y + z * z).squareRoot() }
    public var normalized: Quaternion { let n = norm; return Quaternion(w: w / n, x: x / n, y: y / n, z: z / n) }
    public var conjugate: Quaternion { Quaternion(w: w, x: -x, y: -y, z: -z) }
    public var inverse: Quaternion {
        let n2 = w * w + x * x + y * y + z * z
        return Quaternion(w: w / n2, x: -x / n2, y: -y / n2, z: -z / n2)
    }
    public var isFinite: Bool { w.isFinite && x.isFinite && y.isFinite && z.isFinite }

    public static func * (a: Quaternion, b: Quaternion) -> Quaternion {
        Quaternion(w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
                   x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                   y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                   z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)
    }

    public func dot(_ other: Quaternion) -> Double { w * other.w + x * other.x + y * other.y + z * other.z }

    /// The rotation matrix of a unit quaternion.
    public var rotationMatrix: Matrix3 {
        Matrix3([
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ])
    }

    /// The unit quaternion of a rotation matrix (Shepperd's method: the largest pivot keeps it exact), w ≥ 0.
    public init(rotationMatrix m: Matrix3) {
        let trace = m[0, 0] + m[1, 1] + m[2, 2]
        var q: Quaternion
        if trace > 0 {
            let s = (trace + 1).squareRoot() * 2
            q = Quaternion(w: s / 4, x: (m[2, 1] - m[1, 2]) / s, y: (m[0, 2] - m[2, 0]) / s, z: (m[1, 0] - m[0, 1]) / s)
        } else if m[0, 0] > m[1, 1] && m[0, 0] > m[2, 2] {
            let s = (1 + m[0, 0] - m[1, 1] - m[2, 2]).squareRoot() * 2
            q = Quaternion(w: (m[2, 1] - m[1, 2]) / s, x: s / 4, y: (m[0, 1] + m[1, 0]) / s, z: (m[0, 2] + m[2, 0]) / s)
        } else if m[1, 1] > m[2, 2] {
            let s = (1 + m[1, 1] - m[0, 0] - m[2, 2]).squareRoot() * 2
            q = Quaternion(w: (m[0, 2] - m[2, 0]) / s, x: (m[0, 1] + m[1, 0]) / s, y: s / 4, z: (m[1, 2] + m[2, 1]) / s)
        } else {
            let s = (1 + m[2, 2] - m[0, 0] - m[1, 1]).squareRoot() * 2
            q = Quaternion(w: (m[1, 0] - m[0, 1]) / s, x: (m[0, 2] + m[2, 0]) / s, y: (m[1, 2] + m[2, 1]) / s, z: s / 4)
        }
        q = q.normalized
        self = q.w < 0 ? Quaternion(w: -q.w, x: -q.x, y: -q.y, z: -q.z) : q
    }

    /// Spherical linear interpolation along the shorter arc, t in 0...1.
    public func slerp(to other: Quaternion, t: Double) -> Quaternion {
        var b = other
        var c = dot(other)
        if c < 0 {
            b = Quaternion(w: -b.w, x: -b.x, y: -b.y, z: -b.z)
            c = -c
        }
        if c > 1 - 1e-12 {
            return Quaternion(w: w + (b.w - w) * t, x: x + (b.x - x) * t, y: y + (b.y - y) * t, z: z + (b.z - z) * t).normalized
        }
        let theta = acos(c), s = sin(theta)
        let ka = sin((1 - t) * theta) / s, kb = sin(t * theta) / s
        return Quaternion(w: ka * w + kb * b.w, x: ka * x + kb * b.x, y: ka * y + kb * b.y, z: ka * z + kb * b.z)
    }

    /// Geodesic angle between the rotations of two unit quaternions, degrees (q and −q are the same rotation).
    /// atan2 of the relative rotation's vector and scalar parts stays exact near 0°, where acos(|q1·q2|) loses
    /// about 1e-6°.
    public func angleDegrees(to other: Quaternion) -> Double {
        let r = conjugate * other
        let v = (r.x * r.x + r.y * r.y + r.z * r.z).squareRoot()
        return 2 * atan2(v, abs(r.w)) * 180 / .pi
    }

    public var description: String { String(format: "(%.9g, %.9g, %.9g, %.9g)", w, x, y, z) }

    /// Encoded as [w, x, y, z].
    public init(from decoder: Decoder) throws {
        let v = try [Double](from: decoder)
        guard v.count == 4 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected [w, x, y, z]"))
        }
        self.init(w: v[0], x: v[1], y: v[2], z: v[3])
    }

    public func encode(to encoder: Encoder) throws { try [w, x, y, z].encode(to: encoder) }
}

/// Euler angles in the 2-1-3 sequence of Plsek (2019), radians: R = Rz(yaw) · Rx(pitch) · Ry(roll),
/// axes of the device frame (x right, y up, z out of the screen). For a relative attitude this makes roll the
/// turn about the device's vertical axis (left/right), pitch the tilt about its horizontal axis (up/down)
/// and yaw the rotation about the viewing axis.
public struct EulerAngles213: Equatable, Sendable, Codable {
    public var roll: Double
    public var pitch: Double
    public var yaw: Double

    public init(roll: Double, pitch: Double, yaw: Double) {
        self.roll = roll
        self.pitch = pitch
        self.yaw = yaw
    }

    /// The paper's formulas: ROLL = atan2(−2qxqz + 2qwqy, qz² − qy² − qx² + qw²), PITCH = asin(2qyqz + 2qwqx),
    /// and YAW = atan2(2qwqz − 2qxqy, qw² − qx² + qy² − qz²) of the same sequence.
    public init(_ q: Quaternion) {
        let n = q.normalized
        let (w, x, y, z) = (n.w, n.x, n.y, n.z)
        roll = atan2(-2 * x * z + 2 * w * y, z * z - y * y - x * x + w * w)
        pitch = asin(max(-1, min(1, 2 * y * z + 2 * w * x)))
        yaw = atan2(2 * w * z - 2 * x * y, w * w - x * x + y * y - z * z)
    }

    public var quaternion: Quaternion {
        Quaternion(axis: SIMD3(0, 0, 1), angle: yaw) * Quaternion(axis: SIMD3(1, 0, 0), angle: pitch)
            * Quaternion(axis: SIMD3(0, 1, 0), angle: roll)
    }

    /// The same angles in degrees, for output.
    public var degrees: EulerAngles213 { EulerAngles213(roll: roll * 180 / .pi, pitch: pitch * 180 / .pi, yaw: yaw * 180 / .pi) }
}
