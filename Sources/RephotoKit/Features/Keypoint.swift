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
}
