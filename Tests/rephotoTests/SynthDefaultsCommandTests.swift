import RephotoTestSupport
import Foundation
import RephotoData
import Testing

/// `rephoto synth`'s defaults do not depend on the current folder: run from a folder with no `.cache/`, the textures
/// are found beside the binary, the sequence is named after `--out`, and a failure leaves nothing behind.
@Suite struct SynthDefaultsCommandTests {
    static let small = ["--frames", "2", "--width", "160", "--height", "120"]

    @Test func runsFromAnyFolderAndNamesTheSequenceAfterItsFolder() throws {
        let elsewhere = try Scratch.directory()
        let run = try CLI.run(["synth", "-o", "my-seq"] + Self.small, directory: elsewhere.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "my-seq: reference + 2 frames with ground truth -> my-seq\n", "\(run.stdout)")
        let sequence = try FrameSequence.load(from: elsewhere.appendingPathComponent("my-seq"))
        #expect(sequence.manifest.name == "my-seq")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent("my-seq/.rephoto-synth-unfinished").path))
        // --name still wins.
        let named = try CLI.run(["synth", "--out", "other", "--name", "walk"] + Self.small, directory: elsewhere.path)
        #expect(named.status == 0 && named.stdout.hasPrefix("walk: "), "\(named.stderr)")
    }

    /// An installed binary (scripts/install-cli's layout) finds its textures in ../share/rephoto/textures; one with
    /// none anywhere says where it looked and names --textures, before writing anything.
    @Test func anInstalledBinaryFindsItsTexturesOrNamesTheOption() throws {
        let prefix = try Scratch.directory(), elsewhere = try Scratch.directory()
        let bin = prefix.appendingPathComponent("bin"), textures = prefix.appendingPathComponent("share/rephoto/textures")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try CLI.copyExecutable(to: bin.appendingPathComponent("rephoto"))
        let alone = try CLI.run(["synth", "--out", "s"] + Self.small, directory: elsewhere.path, executable: bin.appendingPathComponent("rephoto"))
        #expect(alone.status == 2 && alone.stderr.hasPrefix("rephoto: no folder of texture images found (looked in \(textures.path), ")
            && alone.stderr.hasSuffix("give --textures DIR, a folder of OpenCV's sample images (scripts/fetch-sample-data)\n"), "\(alone.stderr)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent("s").path))
        try FileManager.default.createDirectory(at: textures.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: textures, withDestinationURL: CLI.packageRoot.appendingPathComponent(".cache/opencv-samples"))
        let installed = try CLI.run(["synth", "--out", "s"] + Self.small, directory: elsewhere.path, executable: bin.appendingPathComponent("rephoto"))
        #expect(installed.status == 0, "\(installed.stderr)")
    }

    @Test func missingOrBrokenTexturesFailCleanly() throws {
        let elsewhere = try Scratch.directory()
        let missing = try CLI.run(["synth", "--out", "s", "--textures", "no-such-folder"] + Self.small, directory: elsewhere.path)
        #expect(missing.status == 2)
        #expect(missing.stderr == "rephoto: --textures no-such-folder: no readable graf1.png there (a folder of OpenCV's sample images, as scripts/fetch-sample-data makes)\n", "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent("s").path))
        // Every file present but one unreadable as an image: rendering fails after the folder and its marker were made.
        let textures = elsewhere.appendingPathComponent("textures")
        try FileManager.default.createDirectory(at: textures, withIntermediateDirectories: true)
        for name in ["building.jpg", "baboon.jpg"] {
            try FileManager.default.createSymbolicLink(atPath: textures.appendingPathComponent(name).path, withDestinationPath: CLI.sample(name))
        }
        try Data("not a png".utf8).write(to: textures.appendingPathComponent("graf1.png"))
        let broken = try CLI.run(["synth", "--out", "s", "--textures", textures.path] + Self.small, directory: elsewhere.path)
        #expect(broken.status == 2, "\(broken.stderr)")
        #expect(broken.stderr.contains("graf1.png"), "\(broken.stderr)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent("s").path), "a failed run left its folder")
        // Into an existing empty folder: the folder stays, empty, without the unfinished-run marker.
        try FileManager.default.createDirectory(at: elsewhere.appendingPathComponent("kept"), withIntermediateDirectories: true)
        _ = try CLI.run(["synth", "--out", "kept", "--textures", textures.path] + Self.small, directory: elsewhere.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.appendingPathComponent("kept").path) == [])
    }

    /// Two sequences of one name: the second is refused naming both folders, and the other sequence is evaluated.
    @Test func duplicateSequenceNamesNameBothFolders() throws {
        let folder = try Scratch.directory()
        for name in ["wide", "drive"] {
            let made = try CLI.run(["synth", "--out", name] + Self.small, directory: folder.path)
            #expect(made.status == 0, "\(made.stderr)")
        }
        try FileManager.default.copyItem(at: folder.appendingPathComponent("wide"), to: folder.appendingPathComponent("wide-copy"))
        let run = try CLI.run(["evaluate", "wide", "drive", "wide-copy", "-o", "ev", "-j", "1"], directory: folder.path)
        #expect(run.status == 2, "\(run.stderr)")
        let wide = folder.appendingPathComponent("wide").path, copy = folder.appendingPathComponent("wide-copy").path
        // Its progress lines (no terminal here) aside, one line: the refusal.
        let said = run.stderr.split(separator: "\n").filter { !$0.hasPrefix("evaluate: ") }.map { $0 + "\n" }.joined()
        #expect(said == "rephoto: not evaluated: \(copy): sequence name 'wide' is also the name of \(wide): give one of them another name in its sequence.json\n",
                "\(said)")
        #expect(run.stdout.contains("\ndrive ") && run.stdout.contains("\nwide "), "\(run.stdout)")
    }
}
