import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation
import Testing

@Suite struct SequenceCommandTests {
    static func directory() -> String { (try? Scratch.directory().appendingPathComponent("out").path) ?? "/nonexistent-scratch" }

    @Test func synthIsDeterministicAndReadable() throws {
        let a = Self.directory(), b = Self.directory()
        let arguments = ["--frames", "3", "--width", "160", "--height", "120", "--seed", "4", "--occluder",
                         "--textures", CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path]
        for out in [a, b] {
            let run = try CLI.run(["synth", "--out", out] + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty)  // no progress bar when stderr is not a terminal
        }
        for file in ["frames.csv", "sequence.json", "frame-0002.jpg"] {
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(a)/\(file)")) == Data(contentsOf: URL(fileURLWithPath: "\(b)/\(file)")))
        }
        let sequence = try FrameSequence.load(from: URL(fileURLWithPath: a))
        #expect(sequence.currentFrames.count == 3 && sequence.frames.allSatisfy { $0.truthRotation != nil && $0.attitude != nil })
    }

    @Test func importAndCalibrateRefuseBadInput() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let cases: [([String], String)] = [
            (["import", "strecha", "/nonexistent", "--out", Self.directory()], "/nonexistent/images/K.txt: cannot read"),
            (["import", "opencv-samples", "/nonexistent", "--out", Self.directory()], "/nonexistent/H1to3p.xml: no such file"),
            (["calibrate", "\(samples)/left01.jpg", "\(samples)/left02.jpg", "\(samples)/left03.jpg", "--board", "9x6", "--square", "0.025",
              "--out", "\(Self.directory()).yml"], "the 9x6 board was found in 3 of 3 images; calibration needs at least 5 views"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9by6", "--square", "0.025", "--out", "x.yml"], "--board '9by6' must be WIDTHxHEIGHT"),
            // Once ate 6 GB searching for the corners.
            (["calibrate", "\(samples)/left01.jpg", "--board", "30000x30000", "--square", "0.025", "--out", "\(Self.directory()).yml"],
             "board must have 2...100 inner corners a side, got 30000x30000"),
            (["synth", "--out", Self.directory(), "--frames", "1000"], "frames = 1000 is out of range"),
        ]
        for (arguments, message) in cases {
            let run = try CLI.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(message) && run.stderr.filter { $0 == "\n" }.count == 1, "\(run.stderr)")
        }
    }

    @Test func calibrateWritesWhatPoseReads() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let images = (1...9).map { String(format: "\(samples)/left%02d.jpg", $0) }
        let out = "\(Self.directory()).yml"
        let run = try CLI.run(["calibrate"] + images + ["--board", "9x6", "--square", "0.025", "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let fx = try #require(run.json?["fx"] as? Double)
        #expect(abs(fx - 535.9) / 535.9 < 0.01)
        #expect(try CameraIntrinsics.load(from: out).fx == fx)
    }
}
