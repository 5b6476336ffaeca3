import Foundation

/// Four corners, clockwise from top-left (top-left, top-right, bottom-right, bottom-left), in pixels.
public struct Quadrilateral: Equatable, Sendable, Codable {
    public var topLeft: Point2
    public var topRight: Point2
    public var bottomRight: Point2
    public var bottomLeft: Point2

    public init(_ topLeft: Point2, _ topRight: Point2, _ bottomRight: Point2, _ bottomLeft: Point2) {
        self.topLeft = topLeft
        self.topRight = topRight
        self.bottomRight = bottomRight
        self.bottomLeft = bottomLeft
    }

    /// The four corners in order (top-left, top-right, bottom-right, bottom-left).
    public var corners: [Point2] { [topLeft, topRight, bottomRight, bottomLeft] }

    /// The centred rectangle covering `fraction` of each side of a frame.
    public static func centred(in size: ImageSize, fraction: Double) -> Quadrilateral {
        let w = Double(size.width), h = Double(size.height)
        let x0 = w * (1 - fraction) / 2, y0 = h * (1 - fraction) / 2
        let x1 = w - x0, y1 = h - y0
        return Quadrilateral(Point2(x: x0, y: y0), Point2(x: x1, y: y0), Point2(x: x1, y: y1), Point2(x: x0, y: y1))
    }

    public func mapped(by h: Matrix3) -> Quadrilateral {
        Quadrilateral(h.project(topLeft), h.project(topRight), h.project(bottomRight), h.project(bottomLeft))
    }

    /// Shoelace area (positive for the clockwise-on-screen order used here).
    public var area: Double {
        var sum = 0.0
        for i in 0..<4 {
            let a = corners[i], b = corners[(i + 1) % 4]
            sum += a.x * b.y - b.x * a.y
        }
        return sum / 2
    }

    /// Intersection of the diagonals: the image of a rectangle's centre under a homography.
    public var diagonalCentre: Point2? {
        let p = topLeft, r = bottomRight, q = topRight, s = bottomLeft
        let d1 = Point2(x: r.x - p.x, y: r.y - p.y), d2 = Point2(x: s.x - q.x, y: s.y - q.y)
        let den = d1.x * d2.y - d1.y * d2.x
        // Relative to the diagonals' lengths: parallel diagonals, whatever the quadrilateral's size.
        guard abs(den) > 1e-12 * (d1.x * d1.x + d1.y * d1.y + d2.x * d2.x + d2.y * d2.y), den.isFinite else { return nil }
        let t = ((q.x - p.x) * d2.y - (q.y - p.y) * d2.x) / den
        return Point2(x: p.x + t * d1.x, y: p.y + t * d1.y)
    }

    /// The mean of the four corners.
    public var cornerMean: Point2 {
        Point2(x: corners.map(\.x).reduce(0, +) / 4, y: corners.map(\.y).reduce(0, +) / 4)
    }

    /// Mean distance between corresponding corners.
    public func meanCornerDistance(to other: Quadrilateral) -> Double {
        zip(corners, other.corners).map { $0.distance(to: $1) }.reduce(0, +) / 4
    }

    public func maxCornerDistance(to other: Quadrilateral) -> Double {
        zip(corners, other.corners).map { $0.distance(to: $1) }.max() ?? 0
    }

    public var isConvex: Bool {
        var sign = 0.0
        for i in 0..<4 {
            let a = corners[i], b = corners[(i + 1) % 4], c = corners[(i + 2) % 4]
            let cross = (b.x - a.x) * (c.y - b.y) - (b.y - a.y) * (c.x - b.x)
            guard cross != 0 else { return false }
            if sign == 0 { sign = cross } else if (cross > 0) != (sign > 0) { return false }
        }
        return true
    }

    public init(from decoder: Decoder) throws {
        let c = try [Point2](from: decoder)
        guard c.count == 4 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected 4 corners"))
        }
        self.init(c[0], c[1], c[2], c[3])
    }

    public func encode(to encoder: Encoder) throws { try corners.encode(to: encoder) }
}

