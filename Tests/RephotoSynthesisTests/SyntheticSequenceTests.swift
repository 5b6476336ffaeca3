import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct SyntheticSequenceTests {
    static var textures: String { Fixtures.textures }
    static var bundled: URL { Fixtures.packageRoot.appendingPathComponent("datasets") }

    /// Rendering is exact: bright dots at known texture positions on a slanted plane appear where the camera
    /// model projects them, to a fraction of a pixel (centroids measured in the rendered image).
    @Test func renderedDotsLandWhereTheyProject() throws {
        let side = 240
        var pixels = [UInt8](repeating: 20, count: side * side)
        let dots = stride(from: 40, to: 220, by: 60).flatMap { a in stride(from: 40, to: 220, by: 60).map { b in (Double(a), Double(b)) } }
        for (a, b) in dots {
            for y in Int(b) - 6...Int(b) + 6 { for x in Int(a) - 6...Int(a) + 6 {
                let d2 = (Double(x) - a) * (Double(x) - a) + (Double(y) - b) * (Double(y) - b)
                pixels[y * side + x] = UInt8((20 + 230 * exp(-d2 / (2 * 1.2 * 1.2))).rounded())
            } }
        }
        let texture = try Image(width: side, height: side, channels: 1, pixels: pixels)
        let plane = TexturedPlane(texture: texture, centre: SIMD3(0.2, -0.1, 4), right: SIMD3(0.9, 0, 0.436) / length(SIMD3(0.9, 0, 0.436)),
                                  down: SIMD3(0, 1, 0), width: 2.5)
        let (r, t) = Fixtures.pose(rotation: Fixtures.rotationXYZ(degrees: 2, -4, 3), centre: SIMD3(0.3, 0.1, -0.2))
        let image = try SceneRenderer.render([plane], camera: Fixtures.camera, rotation: r, translation: t, size: Fixtures.frameSize)
        let gray = try image.grayscale().pixels()
        var worst = 0.0
        for (a, b) in dots {
            let p = r * (plane.origin + plane.u * a + plane.v * b) + t
            let u = Fixtures.camera.fx * p.x / p.z + Fixtures.camera.cx, v = Fixtures.camera.fy * p.y / p.z + Fixtures.camera.cy
            // A window centred on the prediction and wide enough for the whole blob (about 2 px sigma here).
            var sw = 0.0, sx = 0.0, sy = 0.0
            let cu = Int(u.rounded()), cv = Int(v.rounded())
            for y in cv - 9...cv + 9 { for x in cu - 9...cu + 9 {
                let w = max(0, Double(gray[y * 640 + x]) - 20)
                sw += w; sx += w * Double(x); sy += w * Double(y)
            } }
            worst = max(worst, Point2(x: sx / sw, y: sy / sw).distance(to: Point2(x: u, y: v)))
        }
        #expect(worst < 0.2, "largest centroid offset \(worst) px")
    }

    static func small(_ seed: UInt64, _ change: (inout SyntheticSequenceOptions) -> Void = { _ in }) throws -> URL {
        var o = SyntheticSequenceOptions.defaults
        o.frames = 3
        o.width = 160
        o.height = 120
        o.seed = seed
        o.name = "small"  // else the (random) folder's name: identical options give identical files
        change(&o)
        let dir = try Scratch.directory()
        _ = try SyntheticSequence.generate(o, textureDirectory: textures, to: dir)
        return dir
    }

    static func bytes(_ dir: URL, _ file: String) throws -> Data { try Data(contentsOf: dir.appendingPathComponent(file)) }

    @Test func deterministicForASeed() throws {
        let a = try Self.small(5), b = try Self.small(5), c = try Self.small(6)
        for file in ["frames.csv", "sequence.json", "reference.jpg", "frame-0002.jpg"] {
            #expect(try Self.bytes(a, file) == Self.bytes(b, file), "\(file)")
        }
        #expect(try Self.bytes(a, "frames.csv") != Self.bytes(c, "frames.csv"))
    }

    /// "Then" options change only the reference; "now" options only the current frames.
    @Test func thenAndNowChangesLandOnTheRightFrames() throws {
        let plain = try Self.small(9)
        let now = try Self.small(9) { $0.occluder = true; $0.replacedRegion = true }
        let then = try Self.small(9) { $0.referenceContrast = 0.6; $0.referenceBlur = 1.5 }
        #expect(try Self.bytes(plain, "reference.jpg") == Self.bytes(now, "reference.jpg"))
        #expect(try Self.bytes(plain, "frame-0001.jpg") != Self.bytes(now, "frame-0001.jpg"))
        #expect(try Self.bytes(plain, "reference.jpg") != Self.bytes(then, "reference.jpg"))
        #expect(try Self.bytes(plain, "frame-0001.jpg") == Self.bytes(then, "frame-0001.jpg"))
        // Contrast 0.6 shrinks the reference's grey-level spread.
        func spread(_ dir: URL) throws -> Double {
            let p = try Image(contentsOfFile: dir.appendingPathComponent("reference.jpg").path).grayscale().pixels().map(Double.init)
            let mean = p.reduce(0, +) / Double(p.count)
            return (p.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(p.count)).squareRoot()
        }
        #expect(try spread(then) < 0.7 * spread(plain))
    }

    /// The noise model's statistics match its options: per-axis white noise, linear drift, constant yaw offset.
    @Test func attitudeNoiseStatisticsMatchTheOptions() {
        let model = AttitudeNoiseModel(noiseDegrees: 0.2, driftDegreesPerSecond: 0.05, yawOffsetDegrees: 4)
        var random = SeededRandom(seed: 3)
        let axis = random.unitVector()
        var components: [Double] = []
        for k in 0..<3000 {
            let time = Double(k) / 30
            let truth = Quaternion(axis: random.unitVector(), angle: random.uniform(0, 3))
            let measured = model.measure(truth, at: time, driftAxis: axis, random: &random)
            // Remove the deterministic part; what is left is the white noise.
            let residual = model.systematicError(at: time, driftAxis: axis).inverse * measured * truth.inverse
            let r = residual.w < 0 ? Quaternion(w: -residual.w, x: -residual.x, y: -residual.y, z: -residual.z) : residual
            let angle = 2 * atan2((r.x * r.x + r.y * r.y + r.z * r.z).squareRoot(), r.w)
            let scale = angle / max(sin(angle / 2), 1e-300) * 180 / .pi
            components += [r.x * scale, r.y * scale, r.z * scale]
        }
        let mean = components.reduce(0, +) / Double(components.count)
        let sd = (components.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(components.count)).squareRoot()
        #expect(abs(sd - 0.2) < 0.01, "per-axis sd \(sd)°")
        #expect(abs(mean) < 0.01)
        // The deterministic part, against its definition: at t = 0 only the heading offset, 4° about the vertical;
        // after it is removed, drift about the drawn axis growing linearly at 0.05°/s.
        let heading = Quaternion(axis: SIMD3(0, 0, 1), angle: 4 * .pi / 180)
        #expect(model.systematicError(at: 0, driftAxis: axis).angleDegrees(to: heading) < 1e-9)
        for time in [10.0, 50.0, 100.0] {
            let drift = heading.inverse * model.systematicError(at: time, driftAxis: axis)
            #expect(abs(drift.angleDegrees(to: .identity) - 0.05 * time) < 1e-9)
            let v = SIMD3(drift.x, drift.y, drift.z)
            #expect(abs(dot(v / length(v), axis) - 1) < 1e-9)
        }
    }

    /// The bundled sequence: its attitudes and ground truth agree to within the simulated sensor errors
    /// (3° heading offset, 0.02°/s drift, 0.05° noise), and the vision path meets the ground truth.
    @Test func bundledApproachSequence() throws {
        let sequence = try FrameSequence.load(from: Self.bundled.appendingPathComponent("synth-approach"))
        #expect(sequence.currentFrames.count == 40)
        let referenceAttitude = try Attitude(quaternion: try #require(sequence.attitude(of: "reference.jpg")),
                                             frame: sequence.manifest.attitudeFrame, orientation: sequence.manifest.cameraOrientation)
        let size = ImageSize(width: 480, height: 360)
        for frame in sequence.currentFrames {
            let current = try Attitude(quaternion: try #require(frame.attitude), frame: sequence.manifest.attitudeFrame,
                                       orientation: sequence.manifest.cameraOrientation)
            let sensor = try SensorPath.compute(reference: referenceAttitude, current: current, referenceSize: size, currentSize: size,
                                                referenceCamera: nil, currentCamera: nil)
            let error = Matrix3.angleDegrees(between: sensor.rotation, and: try #require(frame.truth.rotation))
            let time = try #require(frame.timestamp)
            #expect(error > 3 - 0.02 * time - 0.3 && error < 3 + 0.02 * time + 0.3, "\(frame.file): \(error)°")
        }
        let estimator = try PoseEstimator()
        let camera = try sequence.camera()
        let reference = try estimator.prepareReference(Image(contentsOfFile: sequence.path(of: "reference.jpg")), camera: camera)
        for index in [0, 8, 24, 39] {
            let frame = sequence.currentFrames[index]
            let result = try estimator.estimate(reference: reference, current: Image(contentsOfFile: sequence.path(of: frame.file)),
                                                camera: camera)
            let errors = try GroundTruthErrors.compute(truth: frame.truth, rotation: result.pose?.rotation, translation: result.pose?.translation,
                                                   homography: result.homography, referenceSize: result.referenceSize)
            #expect(try #require(errors.rotationErrorDegrees) < 0.5, "\(frame.file)")
            // Converging on the reference, the baseline vanishes: translation must then be reported undetermined.
            if let error = errors.translationErrorDegrees {
                #expect(error < 5, "\(frame.file)")
            } else {
                #expect(result.pose?.rotationOnly == true, "\(frame.file)")
            }
        }
    }
}
