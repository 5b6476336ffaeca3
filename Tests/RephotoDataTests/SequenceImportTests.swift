import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct SequenceImportTests {
    static func imported() throws -> URL {
        let out = try Scratch.directory()
        let samples = Fixtures.packageRoot.appendingPathComponent(".cache/opencv-samples")
        _ = try Fixtures.sample("graf1.png")
        try SequenceImport.openCVSamples(from: samples, to: out)
        return out
    }

    @Test func openCVSamplePairsCarryTheirPublishedTruth() throws {
        let out = try Self.imported()
        let graf = try FrameSequence.load(from: out.appendingPathComponent("graf"))
        let h = try #require(graf.frames.first?.truthHomography)
        // The same matrix as H1to3p.xml read independently: corner error of the truth against itself is 0.
        #expect(GroundTruthErrors.cornerError(estimate: h, truth: try Fixtures.graf13(), size: ImageSize(width: 800, height: 640)) == 0)

        let suzanne = try FrameSequence.load(from: out.appendingPathComponent("suzanne"))
        let r = try #require(suzanne.frames.first?.truth.rotation)
        #expect(abs(r.rotationAngleDegrees - 30) < 0.01)
        #expect(suzanne.frames.first?.truthTranslation == nil)
        #expect(try suzanne.camera() == CameraIntrinsics(fx: 700, fy: 700, cx: 320, cy: 240))

        let aloe = try FrameSequence.load(from: out.appendingPathComponent("aloe"))
        #expect(aloe.frames.first?.truth.rotation == .identity)
        #expect(aloe.frames.first?.truth.translation == SIMD3(-1, 0, 0))
        #expect(try aloe.camera()?.fx == 3740)

        let leuven = try FrameSequence.load(from: out.appendingPathComponent("leuven"))
        #expect(try leuven.camera()?.fx == 651.4462353114224)
        #expect(leuven.frames.first?.truth == GroundTruth())
    }

    /// The vision path over the imported sequences meets each truth (the evaluator's use of the format).
    @Test func visionPathMeetsImportedTruth() throws {
        let out = try Self.imported()
        for (name, check) in [("graf", "corner"), ("suzanne", "rotation")] {
            let sequence = try FrameSequence.load(from: out.appendingPathComponent(name))
            let frame = try #require(sequence.currentFrames.first)
            let result = try PoseEstimator().estimate(
                reference: Image(contentsOfFile: sequence.path(of: try #require(sequence.referenceFile(for: frame)))),
                current: Image(contentsOfFile: sequence.path(of: frame.file)), camera: try sequence.camera())
            let errors = try Fixtures.errors(result, frame.truth)
            if check == "corner" { #expect(try #require(errors.cornerErrorPixels) < 2) }
            if check == "rotation" { #expect(try #require(errors.rotationErrorDegrees) < 1) }
        }
    }

    @Test(.enabled(if: Fixtures.strecha != nil, "../shared/datasets/strecha-herzjesu-p8 is absent"))
    func strechaImportMatchesTheCameraFiles() throws {
        let root = try #require(Fixtures.strecha)
        let out = try Scratch.directory().appendingPathComponent("herzjesu")
        let sequence = try SequenceImport.strecha(from: root, to: out)
        let back = try FrameSequence.load(from: out)
        #expect(back.frames == sequence.frames)
        #expect(back.frames.count == 28)  // every pair of the 8 images
        func rotation(_ i: Int) throws -> Matrix3 {
            let text = try String(contentsOf: root.appendingPathComponent(String(format: "gt_dense_cameras/%04d.jpg.camera", i)), encoding: .utf8)
            return Matrix3(Array(text.split(whereSeparator: { $0.isWhitespace }).compactMap { Double($0) }[12..<21]))
        }
        for i in 1..<8 {
            let row = try #require(back.frames.first { $0.file == String(format: "%04d.jpg", i) && $0.referenceFile == String(format: "%04d.jpg", i - 1) })
            let independent = try rotation(i).transposed * rotation(i - 1)
            // The .camera files print R with about 6 digits, so it is orthonormal only to ~1e-6.
            #expect(Matrix3.angleDegrees(between: try #require(row.truth.rotation), and: independent) < 1e-3)
            let angle = independent.rotationAngleDegrees
            #expect(angle > 3 && angle < 12, "pair \(i - 1)->\(i): \(angle)°")
        }
        #expect(FileManager.default.fileExists(atPath: back.path(of: "0003.jpg")))
    }

    @Test func strechaImportRefusesIncompleteFolders() throws {
        let error = #expect(throws: RephotoError.self) {
            try SequenceImport.strecha(from: URL(fileURLWithPath: "/nonexistent"), to: Scratch.directory())
        }
        #expect(error?.message == "/nonexistent/images/K.txt: cannot read")
    }

    /// A camera file's name becomes a path in the output: "...camera" named the output's parent, which the import
    /// then replaced with a link (found by probing). Such names, and centres whose baseline overflows, are refused
    /// before anything is written.
    @Test(arguments: ["...camera", "..camera", ".camera"])
    func strechaImportRefusesCameraNamesThatAreNotImages(hostile: String) throws {
        let root = try Scratch.directory(), parent = try Scratch.directory()
        let out = parent.appendingPathComponent("seq")
        try Self.strechaFolder(at: root, cameras: ["0000.jpg.camera": "0 0 0", hostile: "1 0 0"])
        try "keep".write(to: parent.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        let error = #expect(throws: RephotoError.self) { try SequenceImport.strecha(from: root, to: out) }
        #expect(error?.message.hasSuffix("names no image file (\"\(hostile.dropLast(".camera".count))\")") == true, "\(error?.message ?? "")")
        #expect(try String(contentsOf: parent.appendingPathComponent("notes.txt"), encoding: .utf8) == "keep")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test func strechaImportRefusesABaselineThatOverflows() throws {
        let root = try Scratch.directory(), out = try Scratch.directory().appendingPathComponent("seq")
        try Self.strechaFolder(at: root, cameras: ["0000.jpg.camera": "0 0 0", "0001.jpg.camera": "1e200 1e200 0"])
        let error = #expect(throws: RephotoError.self) { try SequenceImport.strecha(from: root, to: out) }
        #expect(error?.message.hasSuffix("0001.jpg.camera: the baseline to 0000.jpg is not finite") == true, "\(error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    /// images/K.txt, an image per camera (a few bytes: the import links them, it does not decode them) and
    /// gt_dense_cameras/ files with R = I and the given centres.
    static func strechaFolder(at root: URL, cameras: [String: String]) throws {
        let images = root.appendingPathComponent("images"), folder = root.appendingPathComponent("gt_dense_cameras")
        for url in [images, folder] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        try "2759 0 1520\n0 2764 1006\n0 0 1\n".write(to: images.appendingPathComponent("K.txt"), atomically: true, encoding: .utf8)
        for (name, centre) in cameras {
            let image = String(name.dropLast(".camera".count))
            if !image.isEmpty, !image.hasPrefix(".") { try Data([0xFF, 0xD8]).write(to: images.appendingPathComponent(image)) }
            let text = "2759 0 1520\n0 2764 1006\n0 0 1\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n\(centre)\n3072 2048\n"
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    /// A missing input is found before any sequence is written, so that the run again, with it, finds an empty folder.
    @Test func openCVSamplesChecksEveryInputFirst() throws {
        let samples = try Scratch.directory(), out = try Scratch.directory().appendingPathComponent("samples")
        for name in ["graf1.png", "graf3.png", "H1to3p.xml", "Blender_Suzanne1.jpg", "Blender_Suzanne2.jpg", "leuvenA.jpg", "leuvenB.jpg",
                     "aloeL.jpg", "aloeR.jpg"] {
            try Data([0]).write(to: samples.appendingPathComponent(name))
        }
        let error = #expect(throws: RephotoError.self) { try SequenceImport.openCVSamples(from: samples, to: out) }
        #expect(error?.message == samples.appendingPathComponent("essential_mat_data.txt").path + ": no such file")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }
}
