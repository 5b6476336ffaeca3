import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoData
import Testing

/// `rephoto import video`: clips made here with ffmpeg from `rephoto synth` frames, and a motion log written from
/// synth's attitudes; the imported sequence must carry exactly those attitudes at the frames' times.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "ffmpeg is absent (scripts/setup installs it)"))
struct VideoImportCommandTests {
    /// A 240x180 synthetic sequence of 12 frames at 30 fps, its clip (`codec`, `container`), and a plain motion log with
    /// its attitudes (timestamps shifted by `logShift` seconds).
    static func clip(codec: String = "libx264", container: String = "mp4", logShift: Double = 0, logRows: Range<Int>? = nil) throws
        -> (root: String, clip: String, log: String, sequence: FrameSequence) {
        let root = SequenceCommandTests.directory()
        let made = try CLI.run(["synth", "--out", "\(root)/synth", "--name", "s", "--frames", "12", "--width", "240", "--height", "180",
                                "--seed", "2", "--textures", CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path])
        #expect(made.status == 0, "\(made.stderr)")
        let sequence = try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/synth"))
        let clip = "\(root)/clip.\(container)"
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-hide_banner", "-loglevel", "error", "-framerate", "30", "-i", "\(root)/synth/frame-%04d.jpg", "-c:v", codec,
                            "-pix_fmt", "yuv420p", clip]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        #expect(ffmpeg.terminationStatus == 0)
        let frames = sequence.currentFrames
        let rows = (logRows ?? 0..<frames.count).map { k -> String in
            let q = frames[k].attitude!
            return "\(frames[k].timestamp! + logShift),\(q.w),\(q.x),\(q.y),\(q.z)"
        }
        let log = "\(root)/motion.csv"
        try (["timestamp,qw,qx,qy,qz"] + rows).joined(separator: "\n").write(toFile: log, atomically: true, encoding: .utf8)
        return (root, clip, log, sequence)
    }

    static func leftovers(_ root: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains("partial") || $0 == "seq" }
    }

    @Test(arguments: [("libx264", "mp4"), ("libx265", "mov")])
    func everyFrameKeepsItsTimeAndAttitude(codec: String, container: String) throws {
        let (root, clip, log, synth) = try Self.clip(codec: codec, container: container)
        let run = try CLI.run(["import", "video", clip, "--motion", log, "--out", "\(root)/seq", "--reference-frame", "11"])
        #expect(run.status == 0, "\(run.stderr)")
        let imported = try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/seq"))
        #expect(imported.frames.count == 12 && imported.manifest.reference == "frame-00011.jpg")
        for (k, frame) in imported.frames.enumerated() {
            let truth = synth.currentFrames[k]
            #expect(abs(frame.timestamp! - Double(k) / 30) < 1e-6, "frame \(k): \(frame.timestamp!)")
            #expect(frame.attitude!.angleDegrees(to: truth.attitude!) < 1e-6, "frame \(k)")
        }
        // The frames are the clip's pictures: the first within a few grey levels of synth's frame (lossy codec).
        let a = try Image(contentsOfFile: "\(root)/seq/frame-00000.jpg", grayscale: true), b = try Image(contentsOfFile: "\(root)/synth/frame-0000.jpg", grayscale: true)
        #expect(a.width == 240 && a.height == 180 && b.width == 240)
    }

    @Test func everyNthFrameAFrameRateAndAClockOffset() throws {
        let (root, clip, log, synth) = try Self.clip(logShift: 1000)
        let every = try CLI.run(["import", "video", clip, "--motion", log, "--clock-offset", "-1000", "--every", "3", "--out", "\(root)/every",
                                 "--reference", "\(root)/synth/reference.jpg"])
        #expect(every.status == 0, "\(every.stderr)")
        let kept = try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/every"))
        #expect(kept.currentFrames.map(\.file) == ["frame-00000.jpg", "frame-00001.jpg", "frame-00002.jpg", "frame-00003.jpg"])
        for (k, frame) in kept.currentFrames.enumerated() {
            #expect(frame.attitude!.angleDegrees(to: synth.currentFrames[3 * k].attitude!) < 1e-6)
        }
        // Half-way between two samples the attitude is their SLERP: 10 fps keeps frames 0, 3, 6, 9.
        let rate = try CLI.run(["import", "video", clip, "--motion", log, "--clock-offset", "-1000", "--fps", "10", "--out", "\(root)/rate",
                                "--reference-frame", "0"])
        #expect(rate.status == 0, "\(rate.stderr)")
        let sampled = try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/rate"))
        #expect(sampled.frames.map { ($0.timestamp! * 30).rounded() } == [0, 3, 6, 9])
    }

    /// A log that does not cover the clip, a clock that runs backwards, a truncated clip and a file that is no video:
    /// each one line naming the problem, exit 2, and nothing left behind.
    @Test func badInputsAreRefusedAndLeaveNothing() throws {
        let (root, clip, short, _) = try Self.clip(logRows: 0..<6)
        let uncovered = try CLI.run(["import", "video", clip, "--motion", short, "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(uncovered.status == 2 && uncovered.stderr.contains("the motion log covers 0.000-0.167 s of the video's clock"), "\(uncovered.stderr)")
        #expect(try Self.leftovers(root).isEmpty)
        // --out's parents made for the staging folder are removed with it (a failed import left /nonexistent/dir).
        let deep = try CLI.run(["import", "video", clip, "--motion", short, "--out", "\(root)/made/for/seq", "--reference-frame", "0"])
        #expect(deep.status == 2 && deep.stderr.contains("the motion log covers"), "\(deep.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/made"))

        let backwards = "\(root)/backwards.csv"
        try "timestamp,qw,qx,qy,qz\n0,1,0,0,0\n0.2,1,0,0,0\n0.1,1,0,0,0\n".write(toFile: backwards, atomically: true, encoding: .utf8)
        let clock = try CLI.run(["import", "video", clip, "--motion", backwards, "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(clock.status == 2 && clock.stderr.contains("line 4: the clock runs backwards"), "\(clock.stderr)")

        // A log that covers the clip, for the refusals that come from the video itself.
        let still = "\(root)/still.csv"
        try "timestamp,qw,qx,qy,qz\n0,1,0,0,0\n1,1,0,0,0\n".write(toFile: still, atomically: true, encoding: .utf8)
        let data = try Data(contentsOf: URL(fileURLWithPath: clip))
        let truncated = "\(root)/truncated.mp4"
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: truncated))
        let cut = try CLI.run(["import", "video", truncated, "--motion", still, "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(cut.status == 2, "\(cut.stderr)")
        #expect(cut.stderr.contains("truncated") || cut.stderr.contains("not a video"), "\(cut.stderr)")
        #expect(try Self.leftovers(root).isEmpty)

        let photo = "\(root)/photo.mp4"
        try Data(contentsOf: URL(fileURLWithPath: "\(root)/synth/reference.jpg")).write(to: URL(fileURLWithPath: photo))
        let notVideo = try CLI.run(["import", "video", "\(root)/nothing.mp4", "--motion", still, "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(notVideo.status == 2 && notVideo.stderr.contains("nothing.mp4: no such file"), "\(notVideo.stderr)")
        // A FIFO would block the demuxer for ever; a folder and an empty file say what they are, as for an image.
        #expect(mkfifo("\(root)/pipe.mp4", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: "\(root)/folder.mp4", withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: "\(root)/empty.mp4"))
        for (name, reason) in [("pipe.mp4", "not a regular file"), ("folder.mp4", "is a directory, not a video"), ("empty.mp4", "empty file (0 bytes)")] {
            let refused = try CLI.run(["import", "video", "\(root)/\(name)", "--motion", still, "--out", "\(root)/seq", "--reference-frame", "0"])
            #expect(refused.status == 2 && refused.stderr == "rephoto: \(root)/\(name): \(reason)\n", "\(refused.stderr)")
        }
        let photoRun = try CLI.run(["import", "video", photo, "--motion", still, "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(photoRun.status == 2 && photoRun.stderr.contains("not a video"), "\(photoRun.stderr)")
        #expect(photoRun.stderr.split(separator: "\n").count == 1, "one line: \(photoRun.stderr)")
        let badName = try CLI.run(["import", "video", clip, "--motion", still, "--out", "\(root)/seq", "--reference-frame", "0", "--name", "a/b"])
        #expect(badName.status == 2 && badName.stderr.contains("--name"), "\(badName.stderr)")
        #expect(try Self.leftovers(root).isEmpty)
        // A clip's file name the format does not allow becomes a plain name, without its extension.
        let accented = "\(root)/caf\u{E9} clip.mp4"
        try FileManager.default.copyItem(atPath: clip, toPath: accented)
        let renamed = try CLI.run(["import", "video", accented, "--motion", still, "--out", "\(root)/named", "--reference-frame", "0"])
        #expect(renamed.status == 0, "\(renamed.stderr)")
        #expect(try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/named")).manifest.name == "caf--clip")
    }

    /// --motion is required and says so in the help; --clock-offset and --intrinsics out of all reason are refused
    /// with a bounded line naming the value.
    @Test func requiredLogAndBoundedValues() throws {
        let help = try CLI.run(["import", "video", "--help"])
        #expect(help.stdout.contains("USAGE: rephoto import video [<options>] <clip> --motion <motion> --out <out>"), "\(help.stdout)")
        let (root, clip, log, _) = try Self.clip()
        let offset = try CLI.run(["import", "video", clip, "--motion", log, "--clock-offset", "1e300", "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(offset.status == 2 && offset.stderr == "rephoto: --clock-offset 1e+300 must be a number of seconds within ±1e+10\n", "\(offset.stderr)")
        // 240x180 frames: a principal point at (900, 90) is for other frames.
        let far = try CLI.run(["import", "video", clip, "--motion", log, "--intrinsics", "200,200,900,90", "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(far.status == 2 && far.stderr.hasPrefix("rephoto: --intrinsics: principal point (900, 90) is far from the centre of the 240x180 frames"), "\(far.stderr)")
        #expect(try Self.leftovers(root).isEmpty)
        let near = try CLI.run(["import", "video", clip, "--motion", log, "--intrinsics", "200,200,121,88", "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(near.status == 0, "\(near.stderr)")
        #expect(try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/seq")).manifest.name == "clip")
    }

    /// A clip stored 240x180 with rotation metadata of 90° is written as displayed, 180x240, and --intrinsics are of
    /// those frames: the stored frames' principal point (119.5, 89.5) is refused, the displayed one's taken.
    @Test func rotatedClipsAreWrittenAsDisplayed() throws {
        let (root, clip, log, _) = try Self.clip()
        let rotated = "\(root)/rotated.mp4"
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-hide_banner", "-loglevel", "error", "-i", clip, "-c", "copy", "-metadata:s:v:0", "rotate=90", rotated]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        let stored = try CLI.run(["import", "video", rotated, "--motion", log, "--intrinsics", "200,200,119.5,89.5", "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(stored.status == 2 && stored.stderr.contains("principal point (119.5, 89.5) is far from the centre of the 180x240 frames"), "\(stored.stderr)")
        let shown = try CLI.run(["import", "video", rotated, "--motion", log, "--intrinsics", "200,200,89.5,119.5", "--out", "\(root)/seq", "--reference-frame", "0"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let frame = try Image(contentsOfFile: "\(root)/seq/frame-00000.jpg")
        #expect(frame.width == 180 && frame.height == 240)
    }

    /// SIGTERM or SIGINT in the middle of an import removes its staging folder (it stayed, 21 MB, until the same --out
    /// was imported again).
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalLeavesNoPartialFolder(signal: Int32) throws {
        let root = SequenceCommandTests.directory()
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let clip = "\(root)/long.mp4"
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=40:size=640x480:rate=30", "-c:v", "libx264",
                            "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        let log = "\(root)/motion.csv"
        try "timestamp,qw,qx,qy,qz\n0,1,0,0,0\n121,1,0,0,0\n".write(toFile: log, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["import", "video", clip, "--motion", log, "--out", "\(root)/seq", "--reference-frame", "0"]
        (process.standardOutput, process.standardError) = (FileHandle.nullDevice, FileHandle.nullDevice)
        try process.run()
        // Signalled once the staging folder holds a frame (polled; the import of 1,200 frames takes far longer).
        let staging = "\(root)/.seq.partial-\(process.processIdentifier)"
        var polls = 0
        while ((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []).isEmpty, process.isRunning, polls < 6000 {
            usleep(10_000)
            polls += 1
        }
        #expect(process.isRunning, "the import ended before it could be signalled")
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationStatus == 128 + signal)
        let left = try Self.leftovers(root)
        #expect(left.isEmpty, "\(left)")
    }
}
