import Foundation
import RephotoData
import RephotoEvaluation
import RephotoSynthesis
import RephotoTestSupport
import Testing
@testable import RephotoKit

/// Points marked by hand (`--points`): the file, the checks, and what they do for a pair matching cannot answer.
@Suite struct MarkedPointsTests {
    @Test func aPointsFileIsReadOrRefusedByLine() throws {
        let good = try MarkedPoints.parse("# marked on the phone\nreference_x,reference_y,current_x,current_y\n1,2,3,4\n\n5.5, 6 ,7,8e1\n", name: "p.csv")
        #expect(good.reference == [Point2(x: 1, y: 2), Point2(x: 5.5, y: 6)] && good.current == [Point2(x: 3, y: 4), Point2(x: 7, y: 80)])
        // As a spreadsheet saves it: a byte-order mark first, CRLF lines. The worker refused it (found by probing).
        let saved = Data("\u{FEFF}reference_x,reference_y,current_x,current_y\r\n1,2,3,4\r\n".utf8)
        #expect(try MarkedPoints.parse(saved, name: "p.csv").current == [Point2(x: 3, y: 4)])
        let wide = try #require("reference_x,reference_y,current_x,current_y\n1,2,3,4\n".data(using: .utf16))
        #expect(throws: RephotoError.badInput("p.csv is not UTF-8 text")) { try MarkedPoints.parse(wide, name: "p.csv") }
        let cases: [(String, String)] = [
            ("", "p.csv is empty"),
            ("x,y\n1,2,3,4\n", "the first line must be the header reference_x,reference_y,current_x,current_y"),
            ("reference_x,reference_y,current_x,current_y\n1,2,3\n", "p.csv line 2: 3 fields, expected 4"),
            ("reference_x,reference_y,current_x,current_y\n1,2,nan,4\n", "p.csv line 2: '1,2,nan,4' is not four finite numbers"),
            // Double() read these as 10 and 16 (found by probing).
            ("reference_x,reference_y,current_x,current_y\n1,10\u{0}9,3,4\n", "p.csv line 2:"),
            ("reference_x,reference_y,current_x,current_y\n1,0x10,3,4\n", "p.csv line 2: '1,0x10,3,4' is not four finite numbers"),
        ]
        for (text, message) in cases {
            let error = #expect(throws: RephotoError.self) { try MarkedPoints.parse(text, name: "p.csv") }
            #expect(error?.kind == .badInput && error?.message.contains(message) == true, "\(error?.message ?? "")")
        }
        let size = ImageSize(width: 100, height: 80)
        #expect(throws: RephotoError.badInput("p.csv: 2 marked pairs: at least 5 are needed")) { try good.check(referenceSize: size, currentSize: size) }
        let outside = MarkedPoints(reference: Array(repeating: Point2(x: 10, y: 10), count: 5),
                                   current: Array(repeating: Point2(x: 10, y: 10), count: 4) + [Point2(x: 10, y: 90)])
        let error = #expect(throws: RephotoError.self) { try outside.check(referenceSize: size, currentSize: size) }
        #expect(error?.message == "marked pair 5: current point (10, 90) lies outside the 100x80 current image (-0.5 to width - 0.5)")
        // One pair given again counted towards the five while checking nothing more (found by probing).
        let distinct = (0..<4).map { Point2(x: 10 + 15 * Double($0), y: 20 + 10 * Double($0)) }
        let repeated = MarkedPoints(reference: distinct + [Point2(x: 25.4, y: 30.3)], current: distinct.map { Point2(x: $0.x + 3, y: $0.y) } + [Point2(x: 28.2, y: 30)])
        let twice = #expect(throws: RephotoError.self) { try repeated.check(referenceSize: size, currentSize: size) }
        #expect(twice?.message == "marked pairs 2 and 5 are one pair, (25.4, 30.3) -> (28.2, 30), given twice: mark each pair once", "\(twice?.message ?? "")")
        // A directory and an oversized file are named as points files, not images.
        let directory = try Scratch.directory().path
        #expect(throws: RephotoError.badInput("\(directory): is a directory, not a file")) { try MarkedPoints.read(directory) }
        let big = try Fixtures.temporaryFile("big-points.csv", Data(repeating: 0x31, count: (1 << 20) + 1))
        #expect(throws: RephotoError.badInput("\(big): a points file is at most 1 MB (1,000 pairs)")) { try MarkedPoints.read(big) }
    }

    /// The true correspondence of texture points of the scene's planes: the reference camera at the origin, the
    /// current one at `pose`, both `camera`. Exact, so the marks carry no error of their own.
    static func truthMarks(scene: [TexturedPlane], pose: SyntheticCameraPose, reference: CameraIntrinsics, current: CameraIntrinsics,
                           at positions: [(plane: Int, a: Double, b: Double)]) -> MarkedPoints {
        func project(_ x: SIMD3<Double>, _ k: CameraIntrinsics) -> Point2 { Point2(x: k.fx * x.x / x.z + k.cx, y: k.fy * x.y / x.z + k.cy) }
        var a: [Point2] = [], b: [Point2] = []
        for p in positions {
            let plane = scene[p.plane]
            let x = plane.origin + plane.u * p.a + plane.v * p.b
            a.append(project(x, reference))
            b.append(project(pose.rotation * x + pose.translation, current))
        }
        return MarkedPoints(reference: a, current: b)
    }

    /// Five marks spread over the scene's planes where both cameras see them (farthest-point order in the reference).
    static func spreadMarks(scene: [TexturedPlane], pose: SyntheticCameraPose, reference: CameraIntrinsics, referenceSize: ImageSize,
                            current: CameraIntrinsics, currentSize: ImageSize) -> MarkedPoints {
        var candidates: [(plane: Int, a: Double, b: Double)] = []
        for (i, plane) in scene.enumerated() {
            for fa in stride(from: 0.1, through: 0.9, by: 0.1) { for fb in stride(from: 0.1, through: 0.9, by: 0.1) {
                candidates.append((i, fa * Double(plane.texture.width), fb * Double(plane.texture.height)))
            } }
        }
        let all = truthMarks(scene: scene, pose: pose, reference: reference, current: current, at: candidates)
        func inside(_ p: Point2, _ size: ImageSize) -> Bool { p.x > 10 && p.y > 10 && p.x < Double(size.width - 10) && p.y < Double(size.height - 10) }
        let visible = (0..<all.count).filter { inside(all.reference[$0], referenceSize) && inside(all.current[$0], currentSize) }
        var chosen = [visible[0]]
        while chosen.count < 5 {
            chosen.append(visible.max { a, b in
                chosen.map { all.reference[$0].distance(to: all.reference[a]) }.min()! < chosen.map { all.reference[$0].distance(to: all.reference[b]) }.min()!
            }!)
        }
        return MarkedPoints(reference: chosen.map { all.reference[$0] }, current: chosen.map { all.current[$0] })
    }

    /// An old print 40° round the scene: matching alone gives a pose 30° wrong (its 50 inliers sit on one plane).
    /// Five exact marks refuse that pose and guide a second pass to one within 5° of the truth; a sixth mark 60 px
    /// off is named.
    @Test func marksTurnAWrongPoseIntoARightOne() throws {
        var options = SyntheticSequenceOptions.defaults
        options.frames = 6
        options.oldPrint = true
        options.orbitDegrees = 40
        options.seed = 2
        let directory = try Scratch.directory()
        let sequence = try SyntheticSequence.generate(options, textureDirectory: Fixtures.textures, to: directory)
        let frame = sequence.frames[1]
        let truth = try #require(frame.truthReferenceCamera), truthRotation = try #require(frame.truth.rotation)
        let referenceCamera = CameraIntrinsics(fx: truth.x, fy: truth.y, cx: truth.z, cy: truth.w)
        let pose = try SyntheticSequence.cameraPoses(options)[0]
        let scene = try SyntheticSequence.scene(options, poses: [pose], textureDirectory: Fixtures.textures)

        let estimator = try PoseEstimator(config: PipelineConfig())
        let referenceImage = try estimator.load(contentsOfFile: directory.appendingPathComponent("reference.jpg").path)
        let image = try estimator.load(contentsOfFile: directory.appendingPathComponent(frame.file).path)
        let reference = try estimator.prepareReference(referenceImage, camera: referenceCamera)
        let plain = try estimator.estimate(reference: reference, current: image, camera: options.camera)
        let plainError = GroundTruthErrors.rotationError(estimate: try #require(plain.pose?.rotation), truth: truthRotation)
        #expect(plainError > 10, "matching alone is \(plainError)° off: this pair no longer needs the marks")

        let marks = Self.spreadMarks(scene: scene, pose: pose, reference: referenceCamera, referenceSize: referenceImage.fullSize,
                                     current: options.camera, currentSize: image.fullSize)
        let marked = try estimator.estimate(reference: reference, current: image, camera: options.camera, marks: marks)
        let markedError = GroundTruthErrors.rotationError(estimate: try #require(marked.pose?.rotation), truth: truthRotation)
        #expect(markedError < 5, "\(markedError)°")
        // Within matching.markTolerance (1.5 % of 640 px); a pose 4° off moves an exact mark's epipolar line about 7 px.
        #expect(marked.marks?.guided == true && (marked.marks?.largestPixels ?? .infinity) < 9.6)

        var slipped = marks
        slipped.reference.append(marks.reference[2])
        // Across the epipolar lines, which the orbit lays nearly level: a slip along them would go unseen.
        slipped.current.append(Point2(x: marks.current[2].x + 10, y: marks.current[2].y + 60))
        let error = #expect(throws: RephotoError.self) { _ = try estimator.estimate(reference: reference, current: image, camera: options.camera, marks: slipped) }
        #expect(error?.kind == .badInput && error?.cause == .marksDoNotFit, "\(error?.message ?? "")")
        // Which pair is the subject: the slipped one, and only it.
        #expect(error?.message.hasPrefix("marked pair 6 does not fit the pose") == true, "\(error?.message ?? "")")
    }
}
