/// A detected keypoint in full-resolution pixels of the original (EXIF-oriented) image.
public struct Keypoint: Equatable, Sendable {
    public var x: Double
    public var y: Double
    /// Diameter of the meaningful neighbourhood, full-resolution pixels.
    public var size: Double
    /// Orientation in degrees, -1 when the detector does not compute one.
    public var angle: Double
    public var response: Double
    public var octave: Int

    public var point: Point2 { Point2(x: x, y: y) }

    /// The keypoint's local frame: what the essential search's sample screen compares across a match.
    public struct Frame: Equatable, Sendable {
        /// Degrees, -1 when the detector computes no orientation.
        public var angle: Double
        /// Full-resolution pixels.
        public var size: Double

        public init(angle: Double, size: Double) {
            self.angle = angle
            self.size = size
        }
    }

    public var frame: Frame { Frame(angle: angle, size: size) }
}
