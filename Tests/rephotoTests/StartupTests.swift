import RephotoTestSupport
import Foundation
import Testing

/// What the process loads before any work, by the dynamic loader's own report (`LD_DEBUG=libs` writes a
/// "calling init" line for every library it initialises). OpenCV's imgcodecs and videoio, with their about 220
/// libraries (GDAL, FFmpeg, GStreamer), live in the media plugin and load only when a file needs them.
@Suite struct StartupTests {
    /// The libraries `arguments` made the loader initialise; its report goes to a file (LD_DEBUG_OUTPUT), as
    /// it outgrows a pipe.
    static func initialised(_ arguments: [String]) throws -> (run: CLI.Run, libraries: [String]) {
        let folder = try Scratch.directory()
        let run = try CLI.run(arguments, environment: ["LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": folder.appendingPathComponent("ld").path])
        var libraries: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let range = line.range(of: "calling init: ") { libraries.append(String(line[range.upperBound...])) }
            }
        }
        return (run, libraries)
    }

    static let tiff = CLI.packageRoot.appendingPathComponent("Tests/fixtures/formats/source.tif").path

    @Test func startingLoadsNoCodecsUntilAFileNeedsThem() throws {
        let (version, atStart) = try Self.initialised(["--version"])
        #expect(version.status == 0)
        #expect(atStart.contains { $0.contains("libopencv_core.so") }, "\(atStart)")
        for heavy in ["libopencv_imgcodecs", "libopencv_videoio", "libopencv_highgui", "libgdal", "libavcodec", "libQt", "libvtk", "libRephotoMedia"] {
            #expect(!atStart.contains { $0.contains(heavy) }, "\(heavy) loaded by --version")
        }
        #expect(atStart.count < 80, "\(atStart.count) libraries initialised by --version")

        // A TIFF needs OpenCV's decoder: the plugin is loaded then, and the pixels are the PNG fixture's.
        let (pose, later) = try Self.initialised(["pose", "--reference", Self.tiff, "--current", Self.tiff, "--json"])
        #expect(pose.status == 0, "\(pose.stderr)")
        #expect(later.contains { $0.hasSuffix("/libRephotoMedia.so") }, "\(later.suffix(5))")
        #expect(later.contains { $0.contains("libopencv_imgcodecs.so") })
    }

    /// Started by a bare name from PATH, as an installed command is, the process still finds the plugin beside
    /// itself (argv[0] then names no folder).
    @Test func theMediaPluginIsFoundWhenStartedFromPath() throws {
        let folder = CLI.executable.deletingLastPathComponent().path
        let run = try CLI.run(["-c", "rephoto pose --reference \"$0\" --current \"$0\" --json", Self.tiff],
                              environment: ["PATH": folder + ":/usr/bin:/bin"], executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(run.status == 0, "\(run.stderr)")
        // The TIFF holds the PNG fixture's pixels, so detection finds the same keypoints in both.
        let png = CLI.packageRoot.appendingPathComponent("Tests/fixtures/formats/source.png").path
        let fromPNG = try CLI.run(["pose", "--reference", png, "--current", png, "--json"])
        let count = { (run: CLI.Run) in (run.json?["counts"] as? [String: Any])?["keypointsReference"] as? Int }
        #expect(count(run) != nil && count(run) == count(fromPNG) && (count(run) ?? 0) > 20, "\(String(describing: count(run)))")
    }

    /// A binary without its plugin still reads JPEG, PNG and HEIC, and refuses a TIFF by saying what is missing,
    /// without a path (the worker sends the same text to its clients). A truncated copy of the plugin, which the
    /// loader would map past its end and die on with SIGBUS, and a FIFO, on which dlopen blocks, are refused unopened.
    @Test func withoutItsPluginTheBinarySaysWhatIsMissing() throws {
        let folder = try Scratch.directory()
        let alone = folder.appendingPathComponent("rephoto"), plugin = folder.appendingPathComponent("libRephotoMedia.so")
        try CLI.copyExecutable(to: alone)
        let png = CLI.sample("graf1.png")
        let fine = try CLI.run(["pose", "--reference", png, "--current", CLI.sample("graf3.png"), "--json"], executable: alone)
        #expect(fine.status == 0, "\(fine.stderr)")
        let needs = "rephoto: \(Self.tiff): reading TIFF needs the media plugin libRephotoMedia.so, beside the program or in ../lib/rephoto from it (scripts/install-cli): "
        let real = try Data(contentsOf: CLI.executable.deletingLastPathComponent().appendingPathComponent("libRephotoMedia.so"))
        for (make, reason) in [({ () throws in }, "not installed"),
                               ({ try real.prefix(3000).write(to: plugin) }, "not a complete 64-bit shared library (a partial copy?)"),
                               ({ try FileManager.default.removeItem(at: plugin); #expect(mkfifo(plugin.path, 0o600) == 0) }, "not a regular file")] {
            try make()
            let tiff = try CLI.run(["pose", "--reference", Self.tiff, "--current", png], executable: alone)
            #expect(tiff.status == 2)
            #expect(tiff.stderr == needs + reason + "\n", "\(tiff.stderr)")
        }
    }

    /// A TIFF reference stored by a worker with the plugin, then aligned by id on one without it: the client sent no
    /// TIFF, so the answer is the worker's 503 naming what is missing, not a 415.
    @Test func aStoredTIFFOnAWorkerWithoutThePluginIsTheWorkersToMend() throws {
        let folder = try Scratch.directory()
        let alone = folder.appendingPathComponent("rephoto"), store = folder.appendingPathComponent("store").path
        try CLI.copyExecutable(to: alone)
        func stdio(_ executable: URL, _ line: String) throws -> [String: Any] {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["serve", "--stdio", "--reference-store", store]
            let input = Pipe(), output = Pipe()
            (process.standardInput, process.standardOutput, process.standardError) = (input, output, FileHandle.nullDevice)
            try process.run()
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
            try input.fileHandleForWriting.close()
            let out = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (try JSONSerialization.jsonObject(with: out)) as? [String: Any] ?? [:]
        }
        let added = try stdio(CLI.executable, #"{"op": "addReference", "image": {"path": "\#(Self.tiff)"}}"#)
        let id = try #require(added["id"] as? String)
        let png = CLI.packageRoot.appendingPathComponent("Tests/fixtures/formats/source.png").path
        let answer = try stdio(alone, #"{"op": "align", "referenceId": "\#(id)", "retake": {"path": "\#(png)"}}"#)
        let error = answer["error"] as? [String: Any]
        #expect(answer["status"] as? Int == 503 && error?["code"] as? String == "unavailable", "\(answer)")
        #expect(error?["message"] as? String == "the stored reference \(id) cannot be decoded by this worker: reading TIFF needs the media plugin libRephotoMedia.so, beside the program or in ../lib/rephoto from it (scripts/install-cli): not installed", "\(answer)")
    }

    /// `evaluate` on a sequence of TIFFs without the plugin fails every frame, exit 3, and says why on its summary line
    /// rather than leaving the reason in frames.csv alone.
    @Test func anEvaluationWithoutThePluginSaysWhyItsFramesFailed() throws {
        let folder = try Scratch.directory()
        let alone = folder.appendingPathComponent("rephoto")
        try CLI.copyExecutable(to: alone)
        let sequence = folder.appendingPathComponent("tiffs")
        try FileManager.default.createDirectory(at: sequence, withIntermediateDirectories: true)
        for name in ["reference.tif", "frame-0.tif", "frame-1.tif"] {
            try FileManager.default.copyItem(atPath: Self.tiff, toPath: sequence.appendingPathComponent(name).path)
        }
        try #"{"name": "tiffs", "reference": "reference.tif"}"#.write(to: sequence.appendingPathComponent("sequence.json"), atomically: true, encoding: .utf8)
        try "file\nframe-0.tif\nframe-1.tif\n".write(to: sequence.appendingPathComponent("frames.csv"), atomically: true, encoding: .utf8)
        let run = try CLI.run(["evaluate", sequence.path, "--out", folder.appendingPathComponent("out").path], executable: alone)
        #expect(run.status == 3, "\(run.stderr)")
        let reason = "\(sequence.path)/reference.tif: reading TIFF needs the media plugin libRephotoMedia.so, beside the program or in ../lib/rephoto from it (scripts/install-cli): not installed"
        #expect(run.stdout.contains("failed: bad_input 2; most often (2 frames): " + reason + "\n"), "\(run.stdout)")
    }
}
