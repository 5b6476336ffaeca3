import Foundation

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

package func dot(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double { (a * b).sum() }
package func length(_ a: SIMD3<Double>) -> Double { dot(a, a).squareRoot() }
