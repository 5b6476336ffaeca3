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

    /// A folder with a newline and a terminal escape in its name: the success line stays one line, escaped, as the
    /// error messages are. (A sequence name like that is refused outright.)
    @Test func successLinesEscapeControlCharactersInPaths() throws {
        let out = Self.directory() + "-a\nb\u{1B}[31m"
        let run = try CLI.run(["synth", "--out", out, "--name", "x", "--frames", "2", "--width", "160", "--height", "120"])
        #expect(run.status == 0, "\(run.stderr)")
        let escaped = out.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\u{1B}", with: "\\u{1B}")
        #expect(run.stdout == "x: reference + 2 frames with ground truth -> \(escaped)\n", "\(run.stdout)")
    }

    /// README's `calibrate .cache/opencv-samples/left*.jpg`: the glob also matches left.jpg (612x459) among thirteen
    /// 640x480 views; it is skipped and named, and the others calibrate (OpenCV's sample camera: fx 536 px).
    @Test func calibrateSkipsPhotosOfAnotherSize() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let photos = try FileManager.default.contentsOfDirectory(atPath: samples)
            .filter { $0.hasPrefix("left") && $0.hasSuffix(".jpg") }.sorted().map { "\(samples)/\($0)" }
        #expect(photos.first == "\(samples)/left.jpg" && photos.count == 14)
        let out = Self.directory() + ".yml"
        let run = try CLI.run(["calibrate"] + photos + ["--board", "9x6", "--square", "0.025", "-o", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr == "rephoto: \(samples)/left.jpg: 612x459, the other photos are 640x480: skipped\n", "\(run.stderr)")
        #expect(run.stdout.hasPrefix("calibrated from 13 of 13 views: fx 536."), "\(run.stdout)")
    }

    @Test func importAndCalibrateRefuseBadInput() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        // A pipe named as a photo: calibrate read it as a settings file would, and waited for a writer forever.
        let fifo = Self.directory() + ".jpg"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let cases: [([String], String)] = [
            (["calibrate", "\(samples)/left01.jpg", "\(samples)/left02.jpg", fifo, "--board", "9x6", "--square", "0.025", "--minimum-views", "3",
              "--out", "\(Self.directory()).yml"],
             "\(fifo): not a regular file"),
            (["import", "strecha", "/nonexistent", "--out", Self.directory()], "/nonexistent/images/K.txt: cannot read"),
            (["import", "opencv-samples", "/nonexistent", "--out", Self.directory()], "/nonexistent/graf1.png: no such file"),
            (["calibrate", "\(samples)/left01.jpg", "\(samples)/left02.jpg", "\(samples)/left03.jpg", "--board", "9x6", "--square", "0.025",
              "--out", "\(Self.directory()).yml"], "3 photos given; calibration needs at least 5 views with the board (--minimum-views)"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9by6", "--square", "0.025", "--out", "x.yml"], "--board '9by6' must be WIDTHxHEIGHT"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6x", "--square", "0.025", "--out", "x.yml"], "--board '9x6x' must be WIDTHxHEIGHT"),
            // Once ate 6 GB searching for the corners.
            (["calibrate", "\(samples)/left01.jpg", "--board", "30000x30000", "--square", "0.025", "--out", "\(Self.directory()).yml"],
             "board must have 3...100 inner corners a side, got 30000x30000"),
            (["synth", "--out", Self.directory(), "--frames", "1000"], "frames = 1000 is out of range"),
            (["synth", "--out", Self.directory(), "--reference-blur", "1e9"], "image changes = contrast"),
            (["synth", "--out", Self.directory(), "--heading", "inf"], "heading = inf is out of range"),
            (["synth", "--out", Self.directory(), "--old-print", "--reference-blur", "2"], "--old-print ages the reference itself: leave out --reference-contrast"),
            // Names every reader refuses were written (probe), one a path out of the folder.
            (["defaults", "--yaml", "--markdown"], "--yaml and --markdown are two formats: give one"),
            (["synth", "--out", Self.directory(), "--name", "../evil"], "--name: name '../evil' must be 1 to 128 ASCII letters"),
            (["synth", "--out", Self.directory(), "--name", ""], "--name: name is empty"),
            (["synth", "--out", Self.directory(), "--name", "a,b"], "--name: name 'a,b' must be"),
            (["synth", "--out", Self.directory(), "--name", "a/b"], "--name: name 'a/b' must be"),
            (["synth", "--out", Self.directory(), "--name", ".h"], "--name: name '.h' must be"),
            (["synth", "--out", Self.directory(), "--name", "a\nb"], "--name: name 'a\\nb' must be"),
            // The current folder, to the file system: its reference.jpg and frames.csv were overwritten (probe).
            (["synth", "--out", ""], "--out is empty: name a folder"),
            (["import", "strecha", "\(samples)", "--out", ""], "--out is empty: name a folder"),
            // These reached OpenCV and came back as internal errors (exit 1), or calibrated nonsense (found by probing).
            (["calibrate", "\(samples)/left01.jpg", "--board", "2x2", "--square", "0.025", "--out", "\(Self.directory()).yml"],
             "board must have 3...100 inner corners a side, got 2x2"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "100", "--out", "\(Self.directory()).yml"],
             "square size must be 0.0001...10 metres, got 100"),
            // ArgumentParser's Double read "0x1" as 1 and took "inf".
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "inf", "--out", "\(Self.directory()).yml"],
             "The value 'inf' is invalid for '--square <square>': 'inf' is not a finite decimal number"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "0x1", "--out", "\(Self.directory()).yml"],
             "The value '0x1' is invalid for '--square <square>': '0x1' is not a finite decimal number"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "0.025", "--minimum-views", "1", "--out", "\(Self.directory()).yml"],
             "at least 3 views are needed to calibrate, not 1"),
            (["calibrate"] + Array(repeating: "\(samples)/left01.jpg", count: 5) + ["--board", "9x6", "--square", "0.025", "--out", "\(Self.directory()).yml"],
             "\(samples)/left01.jpg and \(samples)/left01.jpg are the same photo: one view, counted twice"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "0.025", "--out", "\(Self.directory()).jpg"],
             "must end in .yml, .yaml, .xml or .json"),
        ]
        for (arguments, message) in cases {
            let run = try CLI.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(message) && run.stderr.filter { $0 == "\n" }.count == 1, "\(run.stderr)")
        }
    }

    /// Outputs never land on inputs (each of these overwrote or deleted its input, found by probing): the
    /// command is refused with exit 2 and the inputs are left as they were.
    @Test func outputsThatWouldOverwriteTheirInputsAreRefused() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let sequence = Self.directory()
        let made = try CLI.run(["synth", "--out", sequence, "--frames", "2", "--width", "160", "--height", "120", "--textures", samples])
        #expect(made.status == 0, "\(made.stderr)")
        let frames = try Data(contentsOf: URL(fileURLWithPath: "\(sequence)/frames.csv"))
        let copy = Self.directory()
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in ["graf1.png", "graf3.png", "H1to3p.xml"] {
            try FileManager.default.copyItem(atPath: "\(samples)/\(name)", toPath: "\(copy)/\(name)")
        }
        let graf1 = try Data(contentsOf: URL(fileURLWithPath: "\(copy)/graf1.png"))
        let mine = Self.directory()
        try FileManager.default.createDirectory(atPath: mine, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: "\(mine)/summary.json"))
        let other = Self.directory()
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: "\(other)/sequence.json"))
        let cases: [([String], String)] = [
            (["evaluate", sequence, "--out", sequence], "--out \(sequence) is the input folder \(sequence): its files would be overwritten"),
            (["evaluate", sequence, "--out", sequence + "/."], "is the input folder"),
            (["evaluate", "merge", sequence, "--out", sequence], "is the input folder"),
            (["import", "opencv-samples", copy, "--out", copy + "/out"], "--out \(copy)/out overlaps the input folder \(copy)"),
            (["align", "--reference", "\(copy)/graf1.png", "--current", "\(copy)/graf3.png", "--out", "\(copy)/graf1.png"],
             "--out \(copy)/graf1.png is the input \(copy)/graf1.png: it would be overwritten"),
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "0.025", "--out", "\(samples)/left01.jpg"],
             "must end in .yml, .yaml, .xml or .json"),
            // Probe: the reference photo was replaced by the drawing, exit 0.
            (["pose", "--reference", "\(copy)/graf1.png", "--current", "\(copy)/graf3.png", "--draw", "\(copy)/./graf1.png"],
             "--draw \(copy)/./graf1.png is the input \(copy)/graf1.png: it would be overwritten"),
            // Probe: a user's file in thumbnails/ was deleted and a sequence's frames.csv overwritten, exit 0.
            (["evaluate", sequence, "--out", copy], "\(copy) holds files that no earlier run wrote (H1to3p.xml, fifo.png, folder.png, ...), and they could be overwritten or deleted"),
            // A result's name is no proof of one (probe: the user's summary.json was overwritten).
            (["evaluate", sequence, "--out", mine], "\(mine) holds files that no earlier run wrote (summary.json)"),
            (["evaluate", sequence, "--out", other], "\(other) is a sequence folder (it has sequence.json): its frames.csv would be overwritten"),
            // A FIFO takes no write until a reader comes, /dev/full none at all (probe: both reported success or hung).
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "0.025", "--out", "\(copy)/full.yml"],
             "--out \(copy)/full.yml: cannot write (not a regular file)"),
            (["align", "--reference", "\(copy)/graf1.png", "--current", "\(copy)/graf3.png", "--out", "\(copy)/fifo.png"],
             "--out \(copy)/fifo.png: cannot write (not a regular file)"),
            // A hard link is the input under another name (probe: the photo was replaced by the calibration).
            (["align", "--reference", "\(copy)/graf1.png", "--current", "\(copy)/graf3.png", "--out", "\(copy)/hard.png"],
             "--out \(copy)/hard.png is the input \(copy)/graf1.png: it would be overwritten"),
            (["evaluate", sequence, "--out", Self.directory(), "--grace", "1e19"], "--grace 1e+19 must be a number of seconds from 0 to 86400"),
            // Foundation's words were "NSCocoaErrorDomain error 512".
            (["align", "--reference", "\(copy)/graf1.png", "--current", "\(copy)/graf3.png", "--out", copy + "/folder.png"],
             "--out \(copy)/folder.png: cannot write (a folder is in the way)"),
            // Reported before the work, not after minutes of board search.
            (["calibrate", "\(samples)/left01.jpg", "--board", "9x6", "--square", "0.025", "--out", copy + "/no/such/folder/out.yml"],
             "--out \(copy)/no/such/folder/out.yml: cannot write (no folder \(copy)/no/such/folder)"),
        ]
        try FileManager.default.createDirectory(atPath: copy + "/folder.png", withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: "\(copy)/graf1.png", toPath: "\(copy)/hard.png")
        try FileManager.default.createSymbolicLink(atPath: "\(copy)/full.yml", withDestinationPath: "/dev/full")
        #expect(mkfifo("\(copy)/fifo.png", 0o600) == 0)
        for (arguments, message) in cases {
            let run = try CLI.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(message) && run.stderr.filter { $0 == "\n" }.count == 1, "\(arguments): \(run.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(sequence)/frames.csv")) == frames)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(copy)/graf1.png")) == graf1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(mine)/summary.json")) == Data("precious".utf8))
    }

    /// A sequence writer refuses an --out that holds anything: into another sequence it replaced that one's
    /// frames.csv and left its frames as strays; into a folder of sequences it made their parent a sequence.
    @Test func sequenceWritersRefuseAFolderThatIsNotEmpty() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let parent = Self.directory(), sequence = "\(parent)/s1"
        let made = try CLI.run(["synth", "--out", sequence, "--frames", "2", "--width", "160", "--height", "120", "--textures", samples])
        #expect(made.status == 0, "\(made.stderr)")
        let frames = try Data(contentsOf: URL(fileURLWithPath: "\(sequence)/frames.csv"))
        let strecha = "/work/shared/datasets/strecha-herzjesu-p8"
        var cases: [([String], String)] = [
            (["synth", "--out", sequence, "--seed", "3", "--textures", samples], "--out \(sequence) is not empty (frame-0000.jpg, frame-0001.jpg, frames.csv, ...)"),
            (["synth", "--out", parent, "--textures", samples], "--out \(parent) is not empty (s1)"),
            (["synth", "--out", "\(sequence)/frames.csv", "--textures", samples], "--out \(sequence)/frames.csv is a file"),
        ]
        if FileManager.default.fileExists(atPath: strecha) {
            cases.append((["import", "strecha", strecha, "--out", sequence], "--out \(sequence) is not empty"))
        }
        // The samples import makes a folder per sequence: an earlier sequence of one of those names is kept.
        let earlier = Self.directory()
        try FileManager.default.createDirectory(atPath: "\(earlier)/suzanne", withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: "\(earlier)/suzanne/frames.csv"))
        cases.append((["import", "opencv-samples", samples, "--out", earlier],
                      "--out \(earlier): its sequence folder \(earlier)/suzanne is not empty (frames.csv): name a new or empty folder"))
        // Links there are refused before anything is written (probe: a link to nothing failed after three
        // sequences were written; a link to an empty folder wrote the sequence outside --out), and so is a file.
        let linked = Self.directory(), outside = Self.directory()
        try FileManager.default.createDirectory(atPath: linked, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(linked)/aloe", withDestinationPath: "/nonexistent/dir")
        try FileManager.default.createSymbolicLink(atPath: "\(linked)/graf", withDestinationPath: outside)
        cases.append((["import", "opencv-samples", samples, "--out", linked], "its sequence folder \(linked)/graf is a symbolic link"))
        cases.append((["synth", "--out", "\(linked)/aloe", "--textures", samples], "--out \(linked)/aloe is a symbolic link to nothing"))
        cases.append((["import", "opencv-samples", samples, "--out", "\(sequence)/frames.csv"], "--out \(sequence)/frames.csv is a file: name a folder"))
        for (arguments, message) in cases {
            let run = try CLI.run(arguments)
            #expect(run.status == 2 && run.stderr.contains(message) && run.stderr.filter { $0 == "\n" }.count == 1, "\(arguments): \(run.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(sequence)/frames.csv")) == frames)
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent) == ["s1"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(earlier)/suzanne/frames.csv")) == Data("mine".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: earlier) == ["suzanne"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: linked).sorted() == ["aloe", "graf"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        // An empty folder (hidden files aside) is as good as a new one.
        let empty = Self.directory()
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: "\(empty)/.DS_Store"))
        let into = try CLI.run(["synth", "--out", empty, "--frames", "2", "--width", "160", "--height", "120", "--textures", samples])
        #expect(into.status == 0, "\(into.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(empty)/.rephoto-synth-unfinished"))
    }

    /// A synth killed half-way left frames that made the folder "not empty" to the run again (found by probing).
    /// The run again replaces what an unfinished run wrote, and only that.
    @Test func synthReplacesWhatAnUnfinishedRunLeft() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let killed = Self.directory()
        try FileManager.default.createDirectory(atPath: killed, withIntermediateDirectories: true)
        for name in [".rephoto-synth-unfinished", "reference.jpg", "frame-0000.jpg"] { try Data("torn".utf8).write(to: URL(fileURLWithPath: "\(killed)/\(name)")) }
        let again = try CLI.run(["synth", "--out", killed, "--frames", "2", "--width", "160", "--height", "120", "--textures", samples])
        #expect(again.status == 0 && again.stderr.contains("replacing what a run that did not finish left there"), "\(again.stderr)")
        let sequence = try FrameSequence.load(from: URL(fileURLWithPath: killed))
        #expect(sequence.currentFrames.count == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(killed)/frame-0000.jpg")) != Data("torn".utf8))
        #expect(!FileManager.default.fileExists(atPath: "\(killed)/.rephoto-synth-unfinished"))
        // Anything else there is the user's: refused as before, and kept.
        let mixed = Self.directory()
        try FileManager.default.createDirectory(atPath: mixed, withIntermediateDirectories: true)
        for name in [".rephoto-synth-unfinished", "frame-0000.jpg", "notes.txt"] { try Data("x".utf8).write(to: URL(fileURLWithPath: "\(mixed)/\(name)")) }
        let refused = try CLI.run(["synth", "--out", mixed, "--frames", "2", "--width", "160", "--height", "120", "--textures", samples])
        #expect(refused.status == 2 && refused.stderr.contains("is not empty (notes.txt)"), "\(refused.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(mixed)/notes.txt"))
    }

    /// A write that fails midway (past `ulimit -f`, as on a full disk) is reported in words and leaves the
    /// earlier file whole (probe: the process died of SIGXFSZ with no message, a temporary file left behind; a
    /// calibration was truncated in place with exit 0).
    @Test func aFailedWriteLeavesTheEarlierFileWhole() throws {
        let folder = Self.directory()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let out = "\(folder)/aligned.png"
        try Data("earlier".utf8).write(to: URL(fileURLWithPath: out))
        let run = try CLI.run(["align", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--out", out],
                              fileSizeLimitBlocks: 20)
        #expect(run.status == 2 && run.stderr.filter { $0 == "\n" }.count == 1, "\(run.status) \(run.stderr)")
        #expect(run.stderr.contains("\(out): cannot write image (the write failed"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("earlier".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["aligned.png"])
    }

    /// A Strecha-format folder with impossible cameras is refused before anything is written: two cameras at one
    /// centre became a NaN translation, an all-zero R a made-up 180° turn, a path-like name a sequence the reader
    /// refuses, all with exit 0 (found by probing). The same folder with sound cameras imports.
    @Test func importRefusesImpossibleGroundTruth() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        func folder(centres: [String], rotation: String = "1 0 0 0 1 0 0 0 1") throws -> String {
            let root = Self.directory()
            for sub in ["images", "gt_dense_cameras"] {
                try FileManager.default.createDirectory(atPath: "\(root)/\(sub)", withIntermediateDirectories: true)
            }
            try "700 0 320\n0 700 240\n0 0 1\n".write(toFile: "\(root)/images/K.txt", atomically: true, encoding: .utf8)
            for (i, centre) in centres.enumerated() {
                let image = String(format: "%04d.jpg", i)
                try FileManager.default.copyItem(atPath: "\(samples)/Blender_Suzanne\(i + 1).jpg", toPath: "\(root)/images/\(image)")
                try "700 0 320\n0 700 240\n0 0 1\n0 0 0\n\(rotation)\n\(centre)\n640 480\n"
                    .write(toFile: "\(root)/gt_dense_cameras/\(image).camera", atomically: true, encoding: .utf8)
            }
            return root
        }
        let cases: [(String, [String], String)] = [
            (try folder(centres: ["0 0 0", "0 0 0"]), [], "camera centre equals 0000.jpg's: no baseline"),
            (try folder(centres: ["0 0 0", "1 0 0"], rotation: "0 0 0 0 0 0 0 0 0"), [], "R is not a rotation"),
            (try folder(centres: ["0 0 0", "1 0 0"]), ["--name", "../evil"], "name '../evil' must be 1 to 128 ASCII letters"),
            // An image without its camera was dropped with every pair it is in, exit 0 (probe).
            (try { let root = try folder(centres: ["0 0 0", "1 0 0"])
                   try FileManager.default.copyItem(atPath: "\(samples)/Blender_Suzanne1.jpg", toPath: "\(root)/images/0002.JPG")
                   return root }(), [], "images/0002.JPG: no camera for it"),
        ]
        for (source, extra, message) in cases {
            let out = Self.directory()
            let run = try CLI.run(["import", "strecha", source, "--out", out] + extra)
            #expect(run.status == 2 && run.stderr.contains(message) && run.stderr.filter { $0 == "\n" }.count == 1, "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(message): \(out) was written")
        }
        let out = Self.directory()
        let good = try CLI.run(["import", "strecha", try folder(centres: ["0 0 0", "1 0 0"]), "--out", out])
        #expect(good.status == 0, "\(good.stderr)")
        let sequence = try FrameSequence.load(from: URL(fileURLWithPath: out))
        #expect(sequence.frames.count == 1 && sequence.frames[0].truthTranslation.map { abs(length($0) - 1) < 1e-12 } == true)
    }

    /// Output that cannot be written is a one-line failure, exit 1: JSON output trapped (exit 132 with a
    /// backtrace) and text output reported success (found by probing).
    @Test func anUnwritableStandardOutputIsAFailure() throws {
        for arguments in [["defaults"], ["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--json"]] {
            let process = Process()
            process.executableURL = CLI.executable
            process.arguments = arguments
            let full: FileHandle = try #require(FileHandle(forWritingAtPath: "/dev/full"))
            process.standardOutput = full
            let err = Pipe()
            process.standardError = err
            try process.run()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 1, "\(arguments): \(stderr)")
            #expect(stderr == "rephoto: cannot write the output: No space left on device\n", "\(arguments)")
        }
        // The stdio worker trapped in Foundation's non-throwing write, and on a directory as its input (probe).
        for (input, output, message) in [(Data("{\"op\": \"hasReference\", \"referenceId\": \"\(String(repeating: "a", count: 64))\"}\n".utf8), "/dev/full",
                                          "rephoto: cannot write a response to standard output (No space left on device): the client is gone or the output is full\n"),
                                         (nil, "/dev/null", "rephoto: cannot read requests from standard input (Is a directory)\n")] {
            let process = Process()
            process.executableURL = CLI.executable
            process.arguments = ["serve", "--stdio"]
            process.standardOutput = FileHandle(forWritingAtPath: output)
            let inputPipe = Pipe()
            process.standardInput = input == nil ? try #require(FileHandle(forReadingAtPath: "/tmp")) : inputPipe
            let err = Pipe()
            process.standardError = err
            try process.run()
            if let input {
                try inputPipe.fileHandleForWriting.write(contentsOf: input)
                try inputPipe.fileHandleForWriting.close()
            }
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 1 && stderr == message, "\(stderr)")
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
        #expect(run.json?["fittedViews"] as? [String] == images && run.json?["schemaVersion"] as? Int == 2)
        #expect(try CameraIntrinsics.load(from: out).fx == fx)
    }
}
