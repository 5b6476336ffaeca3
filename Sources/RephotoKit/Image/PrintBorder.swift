import RephotoShim

/// When to look for a scanned print's border around the reference (`features.referenceBorder`).
public enum BorderMode: String, Codable, CaseIterable, Sendable {
    /// On prints (`ReferenceKind.print`: declared, detected, or a reference of unknown camera).
    case auto
    /// On every reference. (Not "on" and "off": YAML reads those as booleans.)
    case always
    case never

    /// Whether a reference (a print or not) is searched for a border: its features then depend on its pixels beyond
    /// what features saved without the border say, so those are not reused for it.
    public func applies(print: Bool) -> Bool { self == .always || (self == .auto && print) }
}

/// A scanned print's border: the photo inside it as an axis-aligned box in the file's pixels. Keypoints are
/// detected inside the box only, and the box's centre is an unknown camera's principal point (the photo was
/// printed whole, or cropped about evenly).
public struct PrintBorder: Encodable, Equatable, Sendable {
    public enum Side: String, Encodable, Sendable {
        case top, right, bottom, left
    }

    /// The photo's inner box, full-resolution pixels of the reference file.
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    /// The print's rotation in the scan, degrees, positive clockwise on the image.
    public var tiltDegrees: Double
    /// The sides with a band of the border's colour (a tight scan may have lost some).
    public var sides: [Side]
    /// The border's grey level, 0 (black) to 255 (white).
    public var colour: Int

    /// The box's centre, the reference's pixels.
    public var center: Point2 { Point2(x: Double(x) + Double(width - 1) / 2, y: Double(y) + Double(height - 1) / 2) }
    public var size: ImageSize { ImageSize(width: width, height: height) }

    /// The border of `image`, nil when it has none: a band of one colour around it on at least two sides, whose
    /// inner edges are straight lines at one tilt of at most 10°.
    public static func detect(in image: Image) throws -> PrintBorder? {
        var params = rp_border_params(colour_tolerance: 24, max_band: 0.3, max_tilt_degrees: 10, margin: 0.01)
        var out = rp_print_border()
        try shimCall { rp_detect_print_border(image.handle, &params, &out, $0) }
        guard out.found != 0 else { return nil }
        let all: [(Int32, Side)] = [(1, .top), (2, .right), (4, .bottom), (8, .left)]
        return PrintBorder(x: Int(out.x), y: Int(out.y), width: Int(out.width), height: Int(out.height), tiltDegrees: out.tilt_degrees,
                           sides: all.filter { out.sides & $0.0 != 0 }.map(\.1), colour: Int(out.colour))
    }

    /// `mask` (the image's size, 8-bit) cleared outside the box, or a new mask of the box.
    func mask(for image: Image, within mask: Image?) throws -> Image {
        let scaleX = Double(image.width) / Double(image.fullSize.width), scaleY = Double(image.height) / Double(image.fullSize.height)
        let x0 = Int((Double(x) * scaleX).rounded(.up)), y0 = Int((Double(y) * scaleY).rounded(.up))
        let x1 = min(image.width, Int((Double(x + width) * scaleX).rounded(.down)))
        let y1 = min(image.height, Int((Double(y + height) * scaleY).rounded(.down)))
        var pixels = try mask?.pixels() ?? [UInt8](repeating: 255, count: image.width * image.height)
        let w = image.width
        pixels.withUnsafeMutableBufferPointer { p in
            for row in 0..<image.height {
                let start = row * w
                if row < y0 || row >= y1 || x0 >= x1 {
                    p[start..<start + w].update(repeating: 0)
                } else {
                    p[start..<start + x0].update(repeating: 0)
                    p[start + x1..<start + w].update(repeating: 0)
                }
            }
        }
        return try Image(width: image.width, height: image.height, channels: 1, pixels: pixels)
    }
}
