// Swift-overhead benchmark: the RephotoKit pose pipeline against the same pipeline written directly in C++
// (rp_native_pipeline in CShims), interleaved in one process so machine noise hits both alike.
// Usage: rephoto-bench [--iterations N] [--csv FILE]   (run through scripts/bench)
//        rephoto-bench --hamming-kernel                 (prints the brute-force Hamming kernel this CPU runs)
//        rephoto-bench export-matches ...               (scripts/bench-accuracy; MatchExport.swift)
//        rephoto-bench calibrate-views N | chessboard-photos --count N --out DIR   (scripts/bench-calibrate)
import RephotoShimTools
import Foundation
import RephotoKit
import RephotoSynthesis

struct Options {
    var iterations = 15
    var csv: String?

    init(_ arguments: [String]) throws {
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            switch flag {
            case "--iterations":
                guard let n = rest.popFirst().flatMap(Int.init), n > 0 else { throw RephotoError.badInput("--iterations needs a positive number") }
                iterations = n
            case "--hamming-kernel":
                print((HammingKernel.auto.resolved ?? .portable).name)
                exit(0)
            case "--csv":
                guard let path = rest.popFirst() else { throw RephotoError.badInput("--csv needs a file") }
                csv = path
            default:
                throw RephotoError.badInput("unknown argument \(flag) (usage: rephoto-bench [--iterations N] [--csv FILE])")
            }
        }
    }
}

let stages = ["decode", "detectReference", "detectCurrent", "match", "homography", "essential", "total"]

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.isEmpty ? .nan : (s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2)
}

func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }

func elapsed(_ start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

/// A rendered pair of the three-plane scene at a given width (4:3), as JPEG bytes like a phone sends.
func renderPair(width: Int, samples: String) throws -> (Data, Data, CameraIntrinsics) {
    let height = width * 3 / 4
    let f = 700.0 * Double(width) / 640
    let camera = CameraIntrinsics(fx: f, fy: f, cx: Double(width - 1) / 2, cy: Double(height - 1) / 2)
    let planes = try SyntheticScene.threePlanes(textureDirectory: samples)
    let r = Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: 4 * .pi / 180)
    let t = SyntheticScene.pose(rotation: r, centre: SIMD3(0.8, -0.25, 0.4)).translation
    let size = ImageSize(width: width, height: height)
    let reference = try SceneRenderer.render(planes, camera: camera, size: size)
    let current = try SceneRenderer.render(planes, camera: camera, rotation: r, translation: t, size: size)
    return (try reference.encoded(as: .jpeg(quality: 92)), try current.encoded(as: .jpeg(quality: 92)), camera)
}

func swiftPath(_ reference: Data, _ current: Data, camera: CameraIntrinsics, estimator: PoseEstimator) throws -> [String: Double] {
    let total = ContinuousClock.now
    let decode = ContinuousClock.now
    let a = try estimator.decode(reference), b = try estimator.decode(current)
    var times = ["decode": elapsed(decode)]
    let prepared = try estimator.prepareReference(a, camera: camera)
    let result = try estimator.estimate(reference: prepared, current: b, camera: camera)
    let t = result.timings
    for (key, ms) in [("detectReference", t.detectReference), ("detectCurrent", t.detectCurrent), ("match", t.match),
                      ("homography", t.homography), ("essential", t.essential ?? 0)] { times[key] = ms }
    times["total"] = elapsed(total)
    return times
}

func nativePath(_ reference: Data, _ current: Data, camera: CameraIntrinsics, config: PipelineConfig) throws -> [String: Double] {
    var detector = try config.features.shimParameters()
    var matching = try config.matching.shimParameters()
    var homography = try config.homography.shimParameters()
    // The Swift path's search settings (PROSAC, minimum iterations, ...), so both search alike (without a sensor, and
    // without the reproductions, which PoseDecision asks for).
    let search = RelativePose.SearchSettings(config.pose, pairs: Correspondences(matches: [], reference: [], current: []))
    var essential = try search.shimParameters()
    let orderByRatio: Int32 = config.pose.prosacOrder == .ratio ? 1 : 0
    var shimCamera = try camera.shimCamera()
    var timings = [Double](repeating: 0, count: 7)
    var counts = [Int32](repeating: 0, count: 4)
    var status = rp_status()
    let code = reference.withUnsafeBytes { r in
        current.withUnsafeBytes { c in
            rp_native_pipeline(r.bindMemory(to: UInt8.self).baseAddress, r.count, c.bindMemory(to: UInt8.self).baseAddress, c.count,
                               &detector, &matching, &homography, &essential, orderByRatio, &shimCamera, &timings, &counts, &status)
        }
    }
    guard code == 0 else { throw RephotoError(.internal, "native pipeline failed (\(code))") }
    return Dictionary(uniqueKeysWithValues: zip(stages, timings))
}

if CommandLine.arguments.dropFirst().first == "export-matches" {
    do {
        try MatchExport.run(Array(CommandLine.arguments.dropFirst(2)))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("rephoto-bench: \(error)\n".utf8))
        exit(2)
    }
}

if let mode = CommandLine.arguments.dropFirst().first, ["calibrate-views", "chessboard-photos"].contains(mode) {
    do {
        try CalibrationBench.run(Array(CommandLine.arguments.dropFirst()))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("rephoto-bench: \(error)\n".utf8))
        exit(2)
    }
}

do {
    let options = try Options(CommandLine.arguments)
    let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.cache/opencv-samples").standardized.path
    var csv = "detector,size,stage,swift_ms,native_ms,ratio\n"
    print("Swift (RephotoKit) vs native C++ pipeline, median of \(options.iterations) interleaved runs, ms (Hamming kernel \((HammingKernel.auto.resolved ?? .portable).name))")
    print("detector  size       stage              swift    native   swift/native")
    var overheads: [String] = []
    for width in [640, 1280] {
        let (reference, current, camera) = try renderPair(width: width, samples: samples)
        for detector in [DetectorKind.akaze, .orb] {
            var config = PipelineConfig()
            config.features.detector = detector
            let estimator = try PoseEstimator(config: config)
            _ = try swiftPath(reference, current, camera: camera, estimator: estimator)  // warm-up both paths
            _ = try nativePath(reference, current, camera: camera, config: config)
            var swift: [String: [Double]] = [:], native: [String: [Double]] = [:]
            for _ in 0..<options.iterations {
                for (k, v) in try swiftPath(reference, current, camera: camera, estimator: estimator) { swift[k, default: []].append(v) }
                for (k, v) in try nativePath(reference, current, camera: camera, config: config) { native[k, default: []].append(v) }
            }
            let size = "\(width)x\(width * 3 / 4)"
            for stage in stages {
                let s = median(swift[stage] ?? []), n = median(native[stage] ?? [])
                print(pad(detector.rawValue, 9) + " " + pad(size, 10) + " " + pad(stage, 16) + String(format: "%8.1f  %8.1f   %6.3f", s, n, s / n))
                csv += "\(detector.rawValue),\(size),\(stage),\(s),\(n),\(s / n)\n"
            }
            let ratio = median(swift["total"] ?? []) / median(native["total"] ?? [])
            overheads.append("\(detector.rawValue) \(size): " + String(format: "%+.1f %%", (ratio - 1) * 100))
        }
    }
    print("Swift overhead on the total (target < 5 %): " + overheads.joined(separator: ", "))
    if let path = options.csv { try csv.write(toFile: path, atomically: true, encoding: .utf8) }
} catch {
    FileHandle.standardError.write(Data("rephoto-bench: \(error)\n".utf8))
    exit(2)
}
