import Foundation

/// A 3x3 matrix of doubles, row-major. Encoded in JSON as an array of three rows.
public struct Matrix3: Equatable, Sendable, Codable, CustomStringConvertible {
    public var elements: [Double]

    public init(_ elements: [Double]) {
        precondition(elements.count == 9, "Matrix3 needs 9 elements")
        self.elements = elements
    }

    public init(rows: [[Double]]) {
        self.init(rows.flatMap { $0 })
    }

    public static let identity = Matrix3([1, 0, 0, 0, 1, 0, 0, 0, 1])

    public subscript(row: Int, column: Int) -> Double {
        get { elements[row * 3 + column] }
        set { elements[row * 3 + column] = newValue }
    }

    public var rows: [[Double]] { [Array(elements[0..<3]), Array(elements[3..<6]), Array(elements[6..<9])] }

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
        var out = [Double](repeating: 0, count: 9)
        for r in 0..<3 {
            for c in 0..<3 {
                out[r * 3 + c] = a[r, 0] * b[0, c] + a[r, 1] * b[1, c] + a[r, 2] * b[2, c]
            }
        }
        return Matrix3(out)
    }

    public static func * (a: Matrix3, v: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3(a[0, 0] * v.x + a[0, 1] * v.y + a[0, 2] * v.z,
              a[1, 0] * v.x + a[1, 1] * v.y + a[1, 2] * v.z,
              a[2, 0] * v.x + a[2, 1] * v.y + a[2, 2] * v.z)
    }

    public func scaled(by s: Double) -> Matrix3 { Matrix3(elements.map { $0 * s }) }

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

/// A pixel position, encoded in JSON as [x, y].
public struct Point2: Equatable, Sendable, Codable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    public func distance(to other: Point2) -> Double { ((x - other.x) * (x - other.x) + (y - other.y) * (y - other.y)).squareRoot() }

    public init(from decoder: Decoder) throws {
        let pair = try [Double](from: decoder)
        guard pair.count == 2 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected [x, y]"))
        }
        self.init(x: pair[0], y: pair[1])
    }

    public func encode(to encoder: Encoder) throws { try [x, y].encode(to: encoder) }
}

func dot(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double { (a * b).sum() }
func length(_ a: SIMD3<Double>) -> Double { dot(a, a).squareRoot() }
