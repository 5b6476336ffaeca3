import RephotoShim
import Foundation

/// Pinhole intrinsics with OpenCV's distortion model, for a given image size when known.
public struct CameraIntrinsics: Codable, Equatable, Sendable {
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
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let fx = parts[0], let fy = parts[1], let cx = parts[2], let cy = parts[3] else {
            throw RephotoError.badInput("intrinsics '\(text)' must be four numbers fx,fy,cx,cy")
        }
        self.init(fx: fx, fy: fy, cx: cx, cy: cy)
        try validate("intrinsics '\(text)'")
    }

    /// Reads OpenCV FileStorage (YAML, XML or JSON) as written by OpenCV's calibration sample or tutorial.
    public static func load(from path: String) throws -> CameraIntrinsics {
        guard FileManager.default.fileExists(atPath: path) else {
            throw RephotoError.badInput("\(path): no such calibration file")
        }
        var file = rp_camera()
        do {
            try shimCall { rp_calibration_read(path, &file, $0) }
        } catch let error as RephotoError {
            throw RephotoError.badInput(error.message)
        }
        let k = Matrix3(file.K).elements
        let d = withUnsafeBytes(of: file.distortion) { Array($0.bindMemory(to: Double.self).prefix(Int(file.distortion_count))) }
        guard k[1] == 0, k[3] == 0, k[6] == 0, k[7] == 0, k[8] == 1 else {
            throw RephotoError.badInput("\(path): camera_matrix \(Matrix3(k)) is not of the form [fx 0 cx; 0 fy cy; 0 0 1]")
        }
        let size = file.width > 0 && file.height > 0 ? ImageSize(width: Int(file.width), height: Int(file.height)) : nil
        let intrinsics = CameraIntrinsics(fx: k[0], fy: k[4], cx: k[2], cy: k[5], distortion: d.allSatisfy { $0 == 0 } ? [] : d,
                                          imageSize: size)
        try intrinsics.validate(path)
        return intrinsics
    }

    package func validate(_ source: String) throws {
        let values = [fx, fy, cx, cy] + distortion
        guard values.allSatisfy(\.isFinite) else { throw RephotoError.badInput("\(source): intrinsics contain a non-finite value") }
        guard fx > 0, fy > 0 else { throw RephotoError.badInput("\(source): focal lengths must be positive, got fx=\(fx) fy=\(fy)") }
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
        guard out.cx >= 0, out.cy >= 0, out.cx < Double(size.width), out.cy < Double(size.height) else {
            throw RephotoError.badInput(
                "principal point (\(fmt(out.cx)), \(fmt(out.cy))) lies outside the \(size.width)x\(size.height) image: the intrinsics are for another resolution")
        }
        return out
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
    guard text.contains("e"), value.isFinite else { return text }
    return abs(value) >= 1 ? String(format: "%.0f", value) : formatNumber(Double(String(format: "%.\(digits - 1)e", value)) ?? value)
}
