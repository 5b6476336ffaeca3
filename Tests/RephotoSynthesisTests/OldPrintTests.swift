import Foundation
import RephotoData
import RephotoEvaluation
import RephotoSynthesis
import RephotoTestSupport
import Testing
@testable import RephotoKit

/// Old prints: their scanned border (`PrintBorder`), and `rephoto synth --old-print` with its true camera.
@Suite struct OldPrintTests {
    /// A photo of 480 x 360 (graf1's grey) printed inside `margins` (top, right, bottom, left) and scanned.
    static func scan(colour: Int, tilt: Double, margins: [Int] = [30, 50, 24, 40]) throws -> Image {
        try Fixtures.image("graf1.png").resized(width: 480, height: 360).grayscale()
            .adjusted(contrast: 0.55, brightness: 70, blur: 1, noise: 6, seed: 3)
            .printScan(vignette: 0.25, borderColour: colour, margins: margins, tiltDegrees: tilt)
    }

    /// The photo's axis-aligned box inside its border, turned by `tilt` about the scan's centre: the largest box
    /// the turned photo covers, from its corners.
    static func truthBox(tilt: Double, margins: [Int] = [30, 50, 24, 40]) -> (x0: Double, y0: Double, x1: Double, y1: Double) {
        let width = 480 + margins[1] + margins[3], height = 360 + margins[0] + margins[2]
        let c = (x: Double(width - 1) / 2, y: Double(height - 1) / 2), a = tilt * .pi / 180
        let left = Double(margins[3]), top = Double(margins[0])
        let flat: [Point2] = [Point2(x: left, y: top), Point2(x: left + 480, y: top), Point2(x: left + 480, y: top + 360), Point2(x: left, y: top + 360)]
        let corners = flat.map { p -> Point2 in
            let dx = p.x - c.x, dy = p.y - c.y
            return Point2(x: c.x + dx * cos(a) - dy * sin(a), y: c.y + dx * sin(a) + dy * cos(a))
        }
        return (max(corners[0].x, corners[3].x), max(corners[0].y, corners[1].y), min(corners[1].x, corners[2].x), min(corners[2].y, corners[3].y))
    }

    /// Cream, black and a print turned 2° on the scanner: the box lies inside the photo (no border in it) and covers
    /// nearly all of it; the tilt is measured.
    @Test(arguments: [(235, 0.0), (15, 0.0), (235, 2.0), (200, -3.0)])
    func aPrintsBorderIsFoundWhereItWasPut(colour: Int, tilt: Double) throws {
        let border = try #require(try PrintBorder.detect(in: Self.scan(colour: colour, tilt: tilt)))
        let truth = Self.truthBox(tilt: tilt)
        #expect(Double(border.x) >= truth.x0 && Double(border.y) >= truth.y0, "\(border) in \(truth)")
        #expect(Double(border.x + border.width) <= truth.x1 && Double(border.y + border.height) <= truth.y1, "\(border) in \(truth)")
        let covered = Double(border.width * border.height) / ((truth.x1 - truth.x0) * (truth.y1 - truth.y0))
        #expect(covered > 0.9, "\(border) covers \(covered) of \(truth)")
        #expect(abs(border.tiltDegrees - tilt) < 0.5, "\(border.tiltDegrees)")
        #expect(border.sides.count == 4 && abs(border.colour - colour) <= 12)
    }

    /// A scan cut tight on two sides keeps the other two; a photo without a border, and a border whose inner edge is
    /// ragged (a photo torn along it), give none.
    @Test func onlyStraightBandsAreBorders() throws {
        let tight = try #require(try PrintBorder.detect(in: Self.scan(colour: 235, tilt: 0, margins: [0, 50, 24, 0])))
        #expect(tight.x == 0 && tight.y == 0 && Set(tight.sides.map(\.rawValue)) == ["right", "bottom"])
        #expect(tight.x + tight.width <= 480 && tight.x + tight.width > 470 && tight.y + tight.height <= 360 && tight.y + tight.height > 350)
        #expect(try PrintBorder.detect(in: Fixtures.image("graf1.png")) == nil)
        // Looking leaves the image as it was: a grey image under 600 px was median-filtered in place, and the
        // reference's keypoints changed with features.referenceBorder.
        let small = try Fixtures.image("graf1.png").resized(width: 400, height: 320).grayscale()
        let before = try small.pixels()
        _ = try PrintBorder.detect(in: small)
        #expect(try small.pixels() == before)
        // A torn edge: the photo's top rows cut away in teeth 40 px deep.
        var pixels = try Self.scan(colour: 235, tilt: 0).pixels()
        let width = 480 + 90
        for x in 0..<width where (x / 30) % 2 == 0 { for y in 30..<70 { pixels[y * width + x] = 235 } }
        #expect(try PrintBorder.detect(in: Image(width: width, height: 360 + 54, channels: 1, pixels: pixels)) == nil)
    }

    /// Navigation and the score frame the photo inside a print's border, not the scan: a border far wider on the
    /// right (150 px against 40) moved the target's centre by half the difference, and said "turn right" to a camera
    /// that framed the photo exactly (found by probing).
    @Test func navigationFramesThePhotoNotTheScan() throws {
        let scan = try Self.scan(colour: 235, tilt: 0, margins: [30, 150, 24, 40])
        let photo = try Fixtures.image("graf1.png").resized(width: 480, height: 360).grayscale()
        let config = PipelineConfig().forReference(kind: .print)
        let estimator = try PoseEstimator(config: config)
        let reference = try estimator.prepareReference(scan, camera: nil, cameraUnknown: true)
        let border = try #require(reference.border)
        let result = try estimator.estimate(reference: reference, current: photo, camera: CameraIntrinsics(fx: 500, fy: 500, cx: 239.5, cy: 179.5))
        // The photo's box is the current frame less a few pixels of margin: the target is centred on it.
        let boxCentre = Point2(x: border.center.x - 40, y: border.center.y - 30)
        let navigation = result.navigation
        #expect(abs(navigation.offsetX - (boxCentre.x - 239.5)) < 2 && abs(navigation.offsetY - (boxCentre.y - 179.5)) < 2,
                "offset \(navigation.offsetX), \(navigation.offsetY) px for a box centred at \(boxCentre)")
        #expect(abs(navigation.offsetXPercent) < 2, "\(navigation.hints)")
        // The score compares the photo's points, scaled from its box, with the frame's: a few pixels apart, not the
        // border's 55.
        #expect(result.metrics.afdPixels < 6, "AFD \(result.metrics.afdPixels) px, score \(result.metrics.score)")
    }

    /// `synth --old-print`: the reference is a bordered grey print whose camera frames.csv gives. That camera is the
    /// truth: with it the pose lands on the true rotation; without it (unknown), the focal length estimated from the
    /// matches lands within 5 % of it wherever a pose is reported, with the border found around the photo; the other
    /// frames are refused as undetermined (on these three planes the fit is nearly flat over the focal length), and a
    /// refused pose is never reported beside its refusal.
    @Test func anOldPrintSequenceCarriesItsTrueCamera() throws {
        let (options, directory, sequence) = try Self.oldPrintSequence(frames: 4)
        #expect(sequence.manifest.referenceIntrinsics == .unknown)
        let frames = sequence.frames.dropFirst()
        let truth = try #require(frames.first?.truthReferenceCamera)
        #expect(frames.allSatisfy { $0.truthReferenceCamera == truth })
        // The focal length is the zoom times the frames', at three quarters of their width.
        #expect(abs(truth.x - 1.5 * options.camera.fx * 0.75) < 1e-9)

        let estimator = try PoseEstimator(config: PipelineConfig())
        let referenceImage = try estimator.load(contentsOfFile: directory.appendingPathComponent("reference.jpg").path)
        let known = try estimator.prepareReference(referenceImage, camera: CameraIntrinsics(fx: truth.x, fy: truth.y, cx: truth.z, cy: truth.w))
        // As every entry point does for an old photo: detected with features.oldPhotoClahe.
        let oldPhotos = try PoseEstimator(config: PipelineConfig().forReference(kind: .print))
        let unknown = try oldPhotos.prepareReference(referenceImage, camera: nil, cameraUnknown: true)
        let border = try #require(unknown.border)
        #expect(border.center.distance(to: Point2(x: truth.z, y: truth.w)) < 0.06 * Double(border.width))
        #expect(known.border == nil)
        var focalErrors: [Double] = []
        for frame in frames {
            let image = try estimator.load(contentsOfFile: directory.appendingPathComponent(frame.file).path)
            let withTruth = try estimator.estimate(reference: known, current: image, camera: options.camera)
            let rotation = try #require(withTruth.pose?.rotation)
            let error = GroundTruthErrors.rotationError(estimate: rotation, truth: try #require(frame.truth.rotation))
            #expect(error < 1, "\(frame.file): \(error)°")
            let estimated = try oldPhotos.estimate(reference: unknown, current: image, camera: options.camera)
            if estimated.pose != nil, let camera = estimated.referenceCamera {
                focalErrors.append(abs(camera.fx / truth.x - 1) * 100)
                #expect(GroundTruthErrors.rotationError(estimate: estimated.pose!.rotation, truth: frame.truth.rotation!) < 3)
            } else {
                #expect(estimated.poseRefusal?.cause == .referenceCameraUndetermined, "\(frame.file): \(String(describing: estimated.poseRefusal))")
            }
            #expect(estimated.referenceBorder == border)
        }
        #expect(!focalErrors.isEmpty && focalErrors.allSatisfy { $0 < 5 }, "\(focalErrors) on \(frames.count) frames")
        // The focal length's sigma widened (the principal point assumed within 10 %) until it turns the rotation past
        // pose.referenceFocal.maxRotationShift: refused, and no pose. On the first pass's matches alone: the epipolar
        // pass's determine the focal length too well for the sigma to reach that bound.
        var strict = PipelineConfig().forReference(kind: .print)
        strict.matching.oldPhotoEpipolarRatio = 0
        strict.pose.referenceFocal.maxRotationShift = 0.3
        strict.pose.referenceFocal.principalPointSigma = 10
        strict.pose.referenceFocal.maxSigmaPercent = 50
        let first = try estimator.load(contentsOfFile: directory.appendingPathComponent(try #require(frames.first).file).path)
        let refused = try PoseEstimator(config: strict).estimate(reference: unknown, current: first, camera: options.camera)
        #expect(refused.poseRefusal?.cause == .referenceCameraUndetermined && refused.pose == nil, "\(String(describing: refused.poseRefusal))")
        let reason = try #require(refused.poseRefusal?.description)
        #expect(reason.hasPrefix("the rotation depends on the old camera"), "\(reason)")
        // The same turn under a bound 1.5 times it: the pose is answered, with the warning that the turn passes half
        // the bound. The searches are seeded, so the turn is the same.
        let turn = try #require(reason.firstMatch(of: /turns it ([0-9.]+)°/).flatMap { Double($0.1) })
        strict.pose.referenceFocal.maxRotationShift = 1.5 * turn
        let answered = try PoseEstimator(config: strict).estimate(reference: unknown, current: first, camera: options.camera)
        let pose = try #require(answered.pose, "\(String(describing: answered.poseRefusal))")
        #expect(answered.warnings.contains { $0.hasPrefix("rotation uncertain with the old camera") }, "\(answered.warnings)")
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: try #require(frames.first?.truth.rotation)) < 3)
        // Every scanned focal length counted as fitting nearly as well (pose.referenceFocal.spanInliers past the
        // correspondences): the focal length is undetermined, and no pose.
        var spanned = PipelineConfig().forReference(kind: .print)
        spanned.pose.referenceFocal.spanInliers = 100_000
        let undetermined = try PoseEstimator(config: spanned).estimate(reference: unknown, current: first, camera: options.camera)
        #expect(undetermined.poseRefusal?.cause == .referenceCameraUndetermined && undetermined.pose == nil)
        #expect(undetermined.poseRefusal?.description.contains("inliers' worth of the best (pose.referenceFocal.spanInliers)") == true,
                "\(String(describing: undetermined.poseRefusal))")
    }

    /// The frames of a sequence share its old reference (`pose.referenceFocal.shareMinFrames`): `rephoto evaluate`
    /// combines their answers into one camera, within 3 % of the true one, and estimates every frame on it, each pose
    /// within 3° of the truth; estimated frame by frame, the cameras differ.
    @Test func aSequencesFramesShareTheOldReferencesCamera() throws {
        let (_, directory, _) = try Self.oldPrintSequence(frames: 6)
        func run(_ share: Bool) throws -> [EvaluationRow] { try Self.evaluate(directory, sharing: share) }
        let shared = try run(true), alone = try run(false)
        let errors = shared.compactMap(\.referenceFocalErrorPercent)
        #expect(errors.count == 6 && Set(errors).count == 1 && abs(errors[0]) < 3, "\(errors)")
        #expect(shared.allSatisfy { !$0.failed && $0.poseRefusal == nil && ($0.rotationErrorDegrees ?? 180) < 3 },
                "\(shared.map { ($0.poseRefusal, $0.rotationErrorDegrees) })")
        #expect(Set(alone.compactMap(\.referenceFocalErrorPercent)).count > 1)
    }

    /// Four frames of which one answers alone: under `pose.referenceFocal.shareMinFrames` 2 nothing is shared, and
    /// the rows are the frames' own, as with sharing off. That frame listed twice in frames.csv is still one answer
    /// (it was counted twice, and its camera given to the frames that could not estimate their own).
    @Test func aFrameListedTwiceIsOneAnswer() throws {
        let (_, directory, _) = try Self.oldPrintSequence(frames: 4)
        func run(_ share: Bool) throws -> [EvaluationRow] { try Self.evaluate(directory, sharing: share) }
        func comparable(_ rows: [EvaluationRow]) -> [String] {
            rows.map { "\($0.file) \($0.poseRefusal ?? "-") \($0.referenceFocalErrorPercent ?? .nan) \($0.rotationErrorDegrees ?? .nan)" }
        }
        let alone = try run(false)
        let answered = alone.filter { !$0.failed && $0.poseRefusal == nil }
        #expect(answered.count == 1 && alone.count == 4, "\(comparable(alone))")
        #expect(comparable(try run(true)) == comparable(alone))
        let file = try #require(answered.first?.file)
        let csv = directory.appendingPathComponent("frames.csv")
        let lines = try String(contentsOf: csv, encoding: .utf8).split(separator: "\n").map(String.init)
        let line = try #require(lines.first { $0.hasPrefix(file + ",") })
        try (lines + [line]).joined(separator: "\n").appending("\n").write(to: csv, atomically: true, encoding: .utf8)
        let twice = try run(true)
        #expect(twice.count == 5)
        #expect(twice.filter { $0.file != file }.allSatisfy { row in alone.contains { comparable([$0]) == comparable([row]) } },
                "\(comparable(twice)) against \(comparable(alone))")
    }

    /// `rephoto evaluate`'s rows for a sequence, its old reference's camera shared by its frames (the default) or not.
    static func evaluate(_ directory: URL, sharing: Bool) throws -> [EvaluationRow] {
        var config = PipelineConfig()
        config.pose.referenceFocal.shareMinFrames = sharing ? 2 : 0
        var evaluator = try Evaluator(config: config, jobs: 2)
        evaluator.thumbnails = false
        return evaluator.run([directory]).rows
    }

    /// `synth --old-print` with `frames` frames (seed 4), in a scratch directory.
    static func oldPrintSequence(frames: Int) throws -> (SyntheticSequenceOptions, URL, FrameSequence) {
        var options = SyntheticSequenceOptions.defaults
        options.frames = frames
        options.oldPrint = true
        options.seed = 4
        let directory = try Scratch.directory()
        return (options, directory, try SyntheticSequence.generate(options, textureDirectory: Fixtures.textures, to: directory))
    }

    /// An old photo's second matching pass (`matching.oldPhotoEpipolarRatio`): on a synthetic old print's frames,
    /// matches that miss Lowe's ratio but lie on their epipolar lines join the first pass's, and every pose given is
    /// within 1° of the true rotation (at least one is given); turned off (0), or for a reference of known camera, the
    /// first pass's matches stand alone.
    @Test func anOldPhotosSecondPassAddsMatchesOnTheirEpipolarLines() throws {
        let (options, directory, sequence) = try Self.oldPrintSequence(frames: 4)
        let truth = try #require(sequence.frames.last?.truthReferenceCamera)
        var posed = 0
        for frame in sequence.frames.dropFirst() {
            func estimate(_ config: PipelineConfig, referenceCamera: CameraIntrinsics?) throws -> PoseResult {
                let estimator = try PoseEstimator(config: config)
                let reference = try estimator.prepareReference(try estimator.load(contentsOfFile: directory.appendingPathComponent("reference.jpg").path),
                                                               camera: referenceCamera, cameraUnknown: referenceCamera == nil)
                let current = try estimator.load(contentsOfFile: directory.appendingPathComponent(frame.file).path)
                return try estimator.estimate(reference: reference, current: current, camera: options.camera)
            }
            var counts: [Int] = [], known: [Int] = []
            for ratio in [0.9, 0] {
                var config = PipelineConfig().forReference(kind: .print)
                config.matching.oldPhotoEpipolarRatio = ratio
                let result = try estimate(config, referenceCamera: nil)
                counts.append(result.counts.matches)
                if let pose = result.pose {
                    #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: try #require(frame.truth.rotation)) < 1, "\(frame.file)")
                    if ratio > 0 { posed += 1 }
                }
                // A known camera: no second pass, whatever its ratio.
                var plain = PipelineConfig()
                plain.matching.oldPhotoEpipolarRatio = ratio
                known.append(try estimate(plain, referenceCamera: CameraIntrinsics(fx: truth.x, fy: truth.y, cx: truth.z, cy: truth.w)).counts.matches)
            }
            #expect(counts[0] > counts[1] + counts[1] / 10, "\(frame.file): matches with the second pass \(counts[0]), without \(counts[1])")
            #expect(known[0] == known[1], "\(frame.file)")
        }
        #expect(posed > 0, "no pose with the second pass on any frame")
    }
}
