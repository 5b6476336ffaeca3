import RephotoShim
import Foundation

/// Pinhole intrinsics with OpenCV's distortion model, for a given image size when known.
public struct CameraIntrinsics: Codable, Hashable, Sendable {
    public var fx: Double
    public var fy: Double
    public var cx: Double
    public var cy: Double
    /// OpenCV order (k1, k2, p1, p2[, k3[, k4, k5, k6[, s1..s4[, tx, ty]]]]); empty for none.
    public var distortion: [Double]
    /// The image size these intrinsics belong to; nil when unknown (then they are used as given).
    public var imageSize: ImageSize?

    public init(fx: Double, fy: Double, cx: Double, cy: Double, distortion: [Double] = [], imageSize: ImageSize? = nil) {
        self.fx = fx
        self.fy = fy
        self.cx = cx
        self.cy = cy
        self.distortion = distortion
        self.imageSize = imageSize
    }

    public var matrix: Matrix3 { Matrix3([fx, 0, cx, 0, fy, cy, 0, 0, 1]) }

    /// Parses "fx,fy,cx,cy" (pixels of the full-resolution frames).
    public init(parsing text: String) throws {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { decimalNumber($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let fx = parts[0], let fy = parts[1], let cx = parts[2], let cy = parts[3] else {
            throw RephotoError.badInput("intrinsics '\(text)' must be four finite decimal numbers fx,fy,cx,cy")
        }
        self.init(fx: fx, fy: fy, cx: cx, cy: cy)
        try validate("intrinsics '\(text)'")
    }

    /// Reads a calibration in OpenCV's FileStorage layouts (YAML, XML or JSON) as written by OpenCV's
    /// calibration sample or tutorial, or by `rephoto calibrate`.
    public static func load(from path: String) throws -> CameraIntrinsics {
        guard FileManager.default.fileExists(atPath: path) else {
            throw RephotoError.badInput("\(path): no such calibration file")
        }
        return try parse(try readSmallFile(path, limit: FileStorageReader.maxBytes), path: path)
    }

    /// A calibration file's bytes (YAML, XML or JSON), checked as `load` checks a file; `path` names it in errors.
    public static func parse(_ data: Data, path: String = "calibration") throws -> CameraIntrinsics {
        let intrinsics = try FileStorageReader.parse(data, path: path)
        try intrinsics.validate(path)
        return intrinsics
    }

    package func validate(_ source: String) throws {
        let values = [fx, fy, cx, cy] + distortion
        guard values.allSatisfy(\.isFinite) else { throw RephotoError.badInput("\(source): intrinsics contain a non-finite value") }
        guard fx > 0, fy > 0 else { throw RephotoError.badInput("\(source): focal lengths must be positive, got fx=\(fx) fy=\(fy)") }
        // From a fisheye on a tiny sensor to a long lens on a 100 MP one, focal lengths stay within 1 ... 10^6 px;
        // beyond, normalised coordinates over- or underflow and the pose is noise.
        guard fx >= 1, fy >= 1, fx <= 1e6, fy <= 1e6 else {
            throw RephotoError.badInput("\(source): focal lengths fx=\(fmt(fx, 6)) fy=\(fmt(fy, 6)) px are outside 1...1000000: not a camera's")
        }
        // Pixels of real sensors are square or nearly so (anamorphic lenses: up to 2:1).
        guard fy / fx >= 0.5, fy / fx <= 2 else {
            throw RephotoError.badInput("\(source): fy/fx = \(fmt(fy / fx)) (fx=\(fmt(fx, 6)), fy=\(fmt(fy, 6))): pixels more than 2:1 from square are not a camera's")
        }
        try checkDistortionCount(source)  // first: the checks below index the coefficients by position
        if let imageSize {
            guard imageSize.width > 0, imageSize.height > 0 else {
                throw RephotoError.badInput("\(source): image size \(imageSize.width)x\(imageSize.height) must be positive")
            }
            // Larger than any sensor and than the images the pixel limits admit: named as a size, not reported
            // later as a lens whose distortion moves the corners 1000-fold.
            guard imageSize.width <= 1 << 20, imageSize.height <= 1 << 20 else {
                throw RephotoError.badInput("\(source): image size \(imageSize.width)x\(imageSize.height) is over 1048576 pixels a side: not a camera's")
            }
            try checkPrincipalPoint(in: imageSize, source: source)
            try checkFieldOfView(in: imageSize, source: source)
            try checkDistortion(in: imageSize, source: source)
        }
    }

    /// A camera's field of view across the image's longer side lies between 1° and 170°: outside it the intrinsics
    /// belong to no phone or print camera (fx = 10⁶ on a 3072 px frame, 0.18°, gave a confident pose 30° wrong).
    func checkFieldOfView(in size: ImageSize, source: String) throws {
        let side = Double(max(size.width, size.height)), focal = size.width >= size.height ? fx : fy
        let degrees = 2 * atan(side / 2 / focal) * 180 / .pi
        guard degrees >= 1, degrees <= 170 else {
            throw RephotoError.badInput(
                "\(source): focal length \(fmt(focal, 6)) px gives a field of view of \(fmt(degrees, 3))° across the \(Int(side)) px side, outside 1-170°: the intrinsics are not this image's camera")
        }
    }

    /// OpenCV's distortion models: none, k1 k2 p1 p2 [k3 [k4 k5 k6 [s1..s4 [tauX tauY]]]].
    func checkDistortionCount(_ source: String) throws {
        guard [0, 4, 5, 8, 12, 14].contains(distortion.count) else {
            throw RephotoError.badInput("\(source): \(distortion.count) distortion coefficients, expected 4, 5, 8, 12 or 14")
        }
    }

    /// These intrinsics for an image of `size`: scaled when the calibration was made at another resolution
    /// with the same aspect ratio; refused when the aspect ratio differs (a crop or a rotated frame).
    public func adapted(to size: ImageSize) throws -> CameraIntrinsics {
        var out = self
        if let calibrated = imageSize, calibrated != size {
            let sx = Double(size.width) / Double(calibrated.width)
            let sy = Double(size.height) / Double(calibrated.height)
            // Allow the rounding of a resize (about a pixel), nothing more.
            guard abs(sx - sy) * Double(max(calibrated.width, calibrated.height)) <= 2 else {
                throw RephotoError.badInput(
                    "calibration is for \(calibrated.width)x\(calibrated.height) but the image is \(size.width)x\(size.height): aspect ratio differs (\(fmt(Double(calibrated.width) / Double(calibrated.height))) vs \(fmt(Double(size.width) / Double(size.height)))); a cropped or rotated frame needs its own calibration")
            }
            out.fx = fx * sx
            out.fy = fy * sy
            out.cx = (cx + 0.5) * sx - 0.5
            out.cy = (cy + 0.5) * sy - 0.5
            out.imageSize = size
        }
        try out.checkPrincipalPoint(in: size, source: "intrinsics")
        try out.checkFieldOfView(in: size, source: "intrinsics")
        try out.checkDistortion(in: size, source: "intrinsics")
        return out
    }

    func checkPrincipalPoint(in size: ImageSize, source: String) throws {
        guard cx >= 0, cy >= 0, cx < Double(size.width), cy < Double(size.height) else {
            throw RephotoError.badInput(
                "\(source): principal point (\(fmt(cx)), \(fmt(cy))) lies outside the \(size.width)x\(size.height) image: the intrinsics are for another resolution")
        }
    }

    /// The radial distortion must map the image out to its farthest corner one-to-one: where the distorted
    /// radius stops growing, the model folds back, undistortion becomes ambiguous and every pose from it is
    /// wrong (a distortion of [1e6, -1e6, ...] turned a 30° rotation into 110°).
    func checkDistortion(in size: ImageSize, source: String) throws {
        guard !distortion.isEmpty else { return }
        try checkDistortionCount(source)
        // Tangential terms of real lenses are of order 1e-3; beyond 0.1 they skew the image more than any lens does.
        if let p = distortion[2...3].first(where: { abs($0) > 0.1 }) {
            throw RephotoError.badInput("\(source): tangential distortion \(fmt(p)) (p1, p2) is beyond any lens's (|p| <= 0.1)")
        }
        // Thin-prism terms are of the tangential terms' order; a Scheimpflug sensor tilts by degrees, not radians
        // (a tilt of 10 rad was taken and turned a 26° pose into a confident 34°).
        if distortion.count >= 12, let s = distortion[8...11].first(where: { abs($0) > 0.1 }) {
            throw RephotoError.badInput("\(source): thin-prism distortion \(fmt(s)) (s1..s4) is beyond any lens's (|s| <= 0.1)")
        }
        if distortion.count == 14, let tau = distortion[12...13].first(where: { abs($0) > 0.5 }) {
            throw RephotoError.badInput("\(source): sensor tilt \(fmt(tau)) rad (tauX, tauY) is beyond any camera's (|tau| <= 0.5)")
        }
        var k = [Double](repeating: 0, count: 14)
        for (i, v) in distortion.enumerated() { k[i] = v }
        let (k1, k2, k3, k4, k5, k6) = (k[0], k[1], distortion.count >= 5 ? k[4] : 0, k[5], k[6], k[7])
        func distorted(_ r: Double) -> Double {
            let r2 = r * r
            return r * (1 + r2 * (k1 + r2 * (k2 + r2 * k3))) / (1 + r2 * (k4 + r2 * (k5 + r2 * k6)))
        }
        // The farthest corner's distance from the principal point, in normalised (distorted) coordinates.
        var reach = 0.0
        for x in [0.0, Double(size.width)] {
            for y in [0.0, Double(size.height)] {
                let u = (x - cx) / fx, v = (y - cy) / fy
                reach = max(reach, (u * u + v * v).squareRoot())
            }
        }
        let steps = 4000
        let step = 4 * reach / Double(steps)
        var previous = 0.0
        for i in 1...steps {
            let value = distorted(Double(i) * step)
            guard value.isFinite, value > previous else {
                throw RephotoError.badInput(
                    "\(source): distortion [\(distortion.map { fmt($0) }.joined(separator: ", "))] folds back at radius \(fmt(Double(i) * step)) before reaching the image corners (\(fmt(reach))): not a lens")
            }
            if value >= reach {
                // Real lenses move the corners by tens of percent (fisheyes by a few times), not by orders of magnitude.
                let ratio = Double(i) * step / reach
                guard ratio >= 0.25, ratio <= 4 else {
                    throw RephotoError.badInput(
                        "\(source): distortion [\(distortion.map { fmt($0) }.joined(separator: ", "))] moves the image corners by a factor of \(fmt(1 / ratio)): not a lens")
                }
                return
            }
            previous = value
        }
        throw RephotoError.badInput("\(source): distortion [\(distortion.map { fmt($0) }.joined(separator: ", "))] never reaches the image corners: not a lens")
    }

    /// The shim's camera; refuses a distortion vector it cannot hold rather than truncating it.
    package func shimCamera() throws -> rp_camera {
        guard [0, 4, 5, 8, 12, 14].contains(distortion.count) else {
            throw RephotoError.badInput("\(distortion.count) distortion coefficients, expected 0, 4, 5, 8, 12 or 14")
        }
        var camera = rp_camera()
        camera.K = matrix.tuple
        withUnsafeMutableBytes(of: &camera.distortion) { raw in
            let d = raw.bindMemory(to: Double.self)
            for (i, v) in distortion.enumerated() { d[i] = v }
        }
        camera.distortion_count = Int32(distortion.count)
        camera.width = try cInt(imageSize?.width ?? 0, "calibration width")
        camera.height = try cInt(imageSize?.height ?? 0, "calibration height")
        return camera
    }

    /// From the shim's camera (as read from a file or calibrated).
    package init(_ camera: rp_camera) {
        let k = Matrix3(camera.K)
        let d = withUnsafeBytes(of: camera.distortion) { Array($0.bindMemory(to: Double.self).prefix(Int(camera.distortion_count))) }
        let size = camera.width > 0 && camera.height > 0 ? ImageSize(width: Int(camera.width), height: Int(camera.height)) : nil
        self.init(fx: k[0, 0], fy: k[1, 1], cx: k[0, 2], cy: k[1, 2], distortion: d, imageSize: size)
    }
}

/// A number for people with `digits` significant digits, never in exponent notation: %g writes 110 as
/// "1.1e+02", which no one reads as an instruction.
package func fmt(_ value: Double, _ digits: Int = 3) -> String {
    let text = String(format: "%.\(digits)g", value)
    // Spelt out below 10^15; past it the exponent form stays (1e+308 was printed with all 309 digits).
    guard text.contains("e"), value.isFinite, abs(value) < 1e15 else { return text }
    return abs(value) >= 1 ? String(format: "%.0f", value) : formatNumber(Double(String(format: "%.\(digits - 1)e", value)) ?? value)
}

extension CameraIntrinsics {
    /// Whether `text` is the word that says a camera is unknown (an old photo's): "unknown", in any case. One rule for
    /// the CLI's --reference-intrinsics, sequence.json's referenceIntrinsics and the worker's metadata.
    public static func namesUnknown(_ text: String) -> Bool { text.lowercased() == "unknown" }
}
