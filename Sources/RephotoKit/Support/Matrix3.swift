import Foundation

/// A 3x3 matrix of doubles: three fixed rows, no heap storage. Encoded in JSON as an array of three rows.
public struct Matrix3: Hashable, Sendable, Codable, CustomStringConvertible {
    public var row0: SIMD3<Double>
    public var row1: SIMD3<Double>
    public var row2: SIMD3<Double>

    public init(_ row0: SIMD3<Double>, _ row1: SIMD3<Double>, _ row2: SIMD3<Double>) {
        self.row0 = row0
        self.row1 = row1
        self.row2 = row2
    }

    /// Nine row-major elements, for literals in code; untrusted data goes through `init(elements:)`, which throws.
    public init(_ elements: [Double]) {
        precondition(elements.count == 9, "Matrix3 literal needs 9 elements")
        self.init(SIMD3(elements[0], elements[1], elements[2]), SIMD3(elements[3], elements[4], elements[5]),
                  SIMD3(elements[6], elements[7], elements[8]))
    }

    /// Nine row-major elements from data; throws unless there are exactly nine.
    public init(elements: [Double]) throws {
        guard elements.count == 9 else { throw RephotoError.badInput("a 3x3 matrix needs 9 numbers, got \(elements.count)") }
        self.init(elements)
    }

    public init(rows: [[Double]]) {
        self.init(rows.flatMap { $0 })
    }

    /// From a C `double[9]` as Swift imports it.
    public init(_ t: (Double, Double, Double, Double, Double, Double, Double, Double, Double)) {
        self.init(SIMD3(t.0, t.1, t.2), SIMD3(t.3, t.4, t.5), SIMD3(t.6, t.7, t.8))
    }

    public static let identity = Matrix3(SIMD3(1, 0, 0), SIMD3(0, 1, 0), SIMD3(0, 0, 1))

    /// Row-major elements.
    public var elements: [Double] { rows.flatMap { $0 } }

    /// As a C `double[9]` tuple.
    var tuple: (Double, Double, Double, Double, Double, Double, Double, Double, Double) {
        (row0.x, row0.y, row0.z, row1.x, row1.y, row1.z, row2.x, row2.y, row2.z)
    }

    public subscript(row: Int, column: Int) -> Double {
        get {
            switch row {
            case 0: row0[column]
            case 1: row1[column]
            default: row2[column]
            }
        }
        set {
            switch row {
            case 0: row0[column] = newValue
            case 1: row1[column] = newValue
            default: row2[column] = newValue
            }
        }
    }

    public var rows: [[Double]] { [[row0.x, row0.y, row0.z], [row1.x, row1.y, row1.z], [row2.x, row2.y, row2.z]] }

    /// Orthonormal with determinant 1, to 1e-6.
    public var isRotation: Bool { isRotation(tolerance: 1e-6) }

    /// Orthonormal with determinant 1, to `tolerance` (rotations printed to six digits need about 1e-5).
    public func isRotation(tolerance: Double) -> Bool {
        let deviation = zip((self * transposed).elements, Matrix3.identity.elements).map { abs($0 - $1) }.max() ?? .infinity
        return isFinite && deviation < tolerance && abs(determinant - 1) < tolerance
    }

    public var transposed: Matrix3 {
        Matrix3([self[0, 0], self[1, 0], self[2, 0], self[0, 1], self[1, 1], self[2, 1], self[0, 2], self[1, 2], self[2, 2]])
    }

    public var determinant: Double {
        self[0, 0] * (self[1, 1] * self[2, 2] - self[1, 2] * self[2, 1])
            - self[0, 1] * (self[1, 0] * self[2, 2] - self[1, 2] * self[2, 0])
            + self[0, 2] * (self[1, 0] * self[2, 1] - self[1, 1] * self[2, 0])
    }

    public var inverse: Matrix3? {
        let d = determinant
        guard d != 0, d.isFinite else { return nil }
        let a = self
        let cofactors: [Double] = [
            a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1], a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2], a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1],
            a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2], a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0], a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2],
            a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0], a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1], a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0],
        ]
        return Matrix3(cofactors.map { $0 / d })
    }

    public var isFinite: Bool { elements.allSatisfy(\.isFinite) }

    public static func * (a: Matrix3, b: Matrix3) -> Matrix3 {
        func row(_ r: SIMD3<Double>) -> SIMD3<Double> { r.x * b.row0 + r.y * b.row1 + r.z * b.row2 }
        return Matrix3(row(a.row0), row(a.row1), row(a.row2))
    }

    public static func * (a: Matrix3, v: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3((a.row0 * v).sum(), (a.row1 * v).sum(), (a.row2 * v).sum())
    }

    public func scaled(by s: Double) -> Matrix3 { Matrix3(row0 * s, row1 * s, row2 * s) }

    /// Applies the matrix as a homography to a pixel.
    public func project(_ p: Point2) -> Point2 {
        let v = self * SIMD3(p.x, p.y, 1)
        return Point2(x: v.x / v.z, y: v.y / v.z)
    }

    /// The matrix scaled so that element (2,2) is 1, the usual normal form of a homography.
    public var normalizedHomography: Matrix3 { self[2, 2] != 0 ? scaled(by: 1 / self[2, 2]) : self }

    /// Angle of a rotation matrix, degrees: atan2(sin, cos) from the skew and trace parts, which unlike
    /// acos((trace − 1) / 2) stays exact for small angles.
    public var rotationAngleDegrees: Double {
        let sx = self[2, 1] - self[1, 2], sy = self[0, 2] - self[2, 0], sz = self[1, 0] - self[0, 1]
        let sine = (sx * sx + sy * sy + sz * sz).squareRoot() / 2
        let cosine = (self[0, 0] + self[1, 1] + self[2, 2] - 1) / 2
        return atan2(sine, cosine) * 180 / .pi
    }

    /// Geodesic angle between two rotations, degrees: the angle of a^T b.
    public static func angleDegrees(between a: Matrix3, and b: Matrix3) -> Double {
        (a.transposed * b).rotationAngleDegrees
    }

    /// Rotation about a unit axis by an angle in radians (Rodrigues).
    public static func rotation(axis: SIMD3<Double>, angle: Double) -> Matrix3 {
        let n = axis / (axis * axis).sum().squareRoot()
        let c = cos(angle), s = sin(angle), k = 1 - c
        return Matrix3([
            c + n.x * n.x * k, n.x * n.y * k - n.z * s, n.x * n.z * k + n.y * s,
            n.y * n.x * k + n.z * s, c + n.y * n.y * k, n.y * n.z * k - n.x * s,
            n.z * n.x * k - n.y * s, n.z * n.y * k + n.x * s, c + n.z * n.z * k,
        ])
    }

    public var description: String {
        rows.map { $0.map { String(format: "%.6g", $0) }.joined(separator: " ") }.joined(separator: "; ")
    }

    public init(from decoder: Decoder) throws {
        let rows = try [[Double]](from: decoder)
        guard rows.count == 3, rows.allSatisfy({ $0.count == 3 }) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected 3 rows of 3 numbers"))
        }
        self.init(rows: rows)
    }

    public func encode(to encoder: Encoder) throws { try rows.encode(to: encoder) }
}

