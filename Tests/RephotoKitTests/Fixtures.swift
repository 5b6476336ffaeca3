import Foundation
import Testing
@testable import RephotoKit

struct FixtureMissing: Error, CustomStringConvertible {
    var description: String
}

/// Test data: OpenCV's samples (fetched by scripts/fetch-sample-data into .cache, required) and
/// ../shared/datasets (optional: tests using it are skipped where it is absent).
enum Fixtures {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func sample(_ name: String) throws -> String {
        let path = packageRoot.appendingPathComponent(".cache/opencv-samples/\(name)").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw FixtureMissing(description: "\(path) missing: run scripts/fetch-sample-data (scripts/test does)")
        }
        return path
    }

    static func image(_ name: String) throws -> Image { try Image(contentsOfFile: sample(name)) }

    static let sharedDatasets = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets")
    static var strecha: URL? {
        let url = sharedDatasets.appendingPathComponent("strecha-herzjesu-p8")
        return FileManager.default.fileExists(atPath: url.appendingPathComponent("images/K.txt").path) ? url : nil
    }

    static func temporaryFile(_ name: String, _ data: Data) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rephoto-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    // MARK: synthetic scenes with exact ground truth

    static let camera = CameraIntrinsics(fx: 700, fy: 700, cx: 319.5, cy: 239.5, imageSize: ImageSize(width: 640, height: 480))
    static let frameSize = ImageSize(width: 640, height: 480)

    static func threePlaneScene() throws -> [TexturedPlane] {
        try SyntheticScene.threePlanes(textureDirectory: packageRoot.appendingPathComponent(".cache/opencv-samples").path)
    }

    static func rotationXYZ(degrees x: Double, _ y: Double, _ z: Double) -> Matrix3 {
        Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: z * .pi / 180)
            * Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: y * .pi / 180)
            * Matrix3.rotation(axis: SIMD3(1, 0, 0), angle: x * .pi / 180)
    }

    static func pose(rotation: Matrix3, centre: SIMD3<Double>) -> (Matrix3, SIMD3<Double>) {
        SyntheticScene.pose(rotation: rotation, centre: centre)
    }
}

func close(_ a: Double, _ b: Double, _ tolerance: Double) -> Bool { abs(a - b) <= tolerance }
