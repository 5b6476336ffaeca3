import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit
import RephotoSynthesis

public struct FixtureMissing: Error, CustomStringConvertible {
    public var description: String
}

/// Test data: OpenCV's samples (fetched by scripts/fetch-sample-data into .cache, required) and
/// ../shared/datasets (optional: tests using it are skipped, and say so, where it is absent).
public enum Fixtures {
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A four-trial grid search space over two parameters, small enough for a test's tuning run.
    public static let tuningSpace = """
        strategy: grid
        fixed: {features.maxDimension: 320}
        parameters:
          matching.ratio: [0.7, 0.9]
          pose.essential.threshold: {values: [0.5, 2]}
        """

    public static func sample(_ name: String) throws -> String {
        let path = packageRoot.appendingPathComponent(".cache/opencv-samples/\(name)").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw FixtureMissing(description: "\(path) missing: run scripts/fetch-sample-data (scripts/test does)")
        }
        return path
    }

    /// OpenCV's sample folder, the textures of the synthetic scenes.
    public static var textures: String { packageRoot.appendingPathComponent(".cache/opencv-samples").path }

    public static func image(_ name: String) throws -> Image { try Image(contentsOfFile: sample(name)) }

    /// APP1 Exif segment holding one IFD entry: Orientation (0x0112), SHORT, value.
    public static func exifOrientationSegment(_ orientation: UInt8) -> Data {
        let tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,  // little-endian TIFF, IFD at 8
                             0x01, 0x00,  // one entry
                             0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, orientation, 0x00, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00]  // no next IFD
        let payload: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        return Data([0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload)
    }

    public static let sharedDatasets = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets")
    public static var strecha: URL? {
        let url = sharedDatasets.appendingPathComponent("strecha-herzjesu-p8")
        return FileManager.default.fileExists(atPath: url.appendingPathComponent("images/K.txt").path) ? url : nil
    }
    public static let strechaMissing = "../shared/datasets/strecha-herzjesu-p8 is absent: Strecha checks skipped"

    /// Nine nested YAML anchors of nine aliases each: 300 bytes standing for 9^9 values (a "billion laughs").
    public static let yamlAliasBomb: String = {
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
        for i in 1...9 { text += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 9).joined(separator: ", ") + "]\n" }
        return text
    }()

    /// A file with `data` in a fresh scratch folder (removed when the test process exits).
    public static func temporaryFile(_ name: String, _ data: Data) throws -> String {
        let url = try Scratch.directory().appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    /// H1to3p.xml from OpenCV's samples: the published graf1 -> graf3 homography, parsed here independently
    /// of the shim's FileStorage reader.
    public static func graf13() throws -> Matrix3 {
        let xml = try String(contentsOfFile: sample("H1to3p.xml"), encoding: .utf8)
        let body = xml.components(separatedBy: "<data>")[1].components(separatedBy: "</data>")[0]
        return try Matrix3(elements: body.split(whereSeparator: { $0.isWhitespace }).compactMap { Double($0) })
    }

    /// A points file (`--points`) of five exact marks on graf1 -> graf3, a plane: each spot carried by `graf13()`.
    public static func grafMarks() throws -> Data {
        let published = try graf13()
        var lines = [MarkedPoints.header]
        for (x, y) in [(150.0, 120.0), (600.0, 150.0), (620.0, 500.0), (180.0, 520.0), (400.0, 330.0)] {
            let p = published * SIMD3(x, y, 1)
            lines.append("\(x),\(y),\(p.x / p.z),\(p.y / p.z)")
        }
        return Data(lines.joined(separator: "\n").utf8)
    }

    /// A result's errors against a truth, as the evaluator computes them.
    public static func errors(_ result: PoseResult, _ truth: GroundTruth) throws -> GroundTruthErrors {
        try GroundTruthErrors.compute(truth: truth, rotation: result.pose?.rotation, translation: result.pose?.translation,
                                  homography: result.homography, referenceSize: result.referenceSize)
    }

    // MARK: synthetic scenes with exact ground truth

    public static let camera = CameraIntrinsics(fx: 700, fy: 700, cx: 319.5, cy: 239.5, imageSize: ImageSize(width: 640, height: 480))
    public static let frameSize = ImageSize(width: 640, height: 480)

    public static func threePlaneScene() throws -> [TexturedPlane] {
        try SyntheticScene.threePlanes(textureDirectory: packageRoot.appendingPathComponent(".cache/opencv-samples").path)
    }

    public static func rotationXYZ(degrees x: Double, _ y: Double, _ z: Double) -> Matrix3 {
        Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: z * .pi / 180)
            * Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: y * .pi / 180)
            * Matrix3.rotation(axis: SIMD3(1, 0, 0), angle: x * .pi / 180)
    }

    public static func pose(rotation: Matrix3, centre: SIMD3<Double>) -> (Matrix3, SIMD3<Double>) {
        SyntheticScene.pose(rotation: rotation, centre: centre)
    }
}

public func close(_ a: Double, _ b: Double, _ tolerance: Double) -> Bool { abs(a - b) <= tolerance }

/// Scratch folders for tests, all under one folder per test process that is removed when the process exits,
/// so a run leaves nothing behind in the temporary directory.
public enum Scratch {
    private static let root: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rephoto-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Scratch.rootIfCreated) }
        return url
    }()
    private static var rootIfCreated: URL { FileManager.default.temporaryDirectory.appendingPathComponent("rephoto-tests-\(getpid())") }

    /// A new, empty folder.
    public static func directory() throws -> URL {
        let url = root.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// SHA-256 of `text` by sha256sum, an implementation apart from the one under test.
public func sha256sum(_ text: String) throws -> String {
    let file = try Scratch.directory().appendingPathComponent("text")
    try Data(text.utf8).write(to: file)
    let process = Process(), pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [file.path]
    process.standardOutput = pipe
    try process.run()
    process.waitUntilExit()
    return String(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64))
}

/// A TCP connection to this machine's `port` from `source` (any address of 127/8 is this machine), reads timing out
/// after `timeout` s; nil when it cannot connect.
public func loopbackConnection(_ port: Int, from source: String = "127.0.0.1", timeout: Int = 10) -> Int32? {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(socket)
        return nil
    }
    var wait = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    return socket
}
