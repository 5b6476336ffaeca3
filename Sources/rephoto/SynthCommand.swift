import ArgumentParser
import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit
import RephotoSynthesis

struct SynthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "synth",
        abstract: "Render a synthetic rephotography sequence with exact ground truth and simulated phone attitudes.",
        discussion: "Three textured planes (OpenCV sample photographs) seen from a trajectory that starts off the reference pose and converges to it with hand tremor; or, with --motion forward or approach, a street of photographs 5-50 m deep driven along or walked up to the reference's vantage point. Deterministic for a seed. Writes the sequence format of datasets/README.md.")

    @Option(name: [.short, .long], parsing: .unconditional, help: "Output sequence folder; its name is the sequence's unless --name is given.") var out: String
    @Option(parsing: .unconditional, help: "Folder of OpenCV's sample images (textures; default: share/rephoto/textures beside the installed binary, else .cache/opencv-samples above the binary or in the current folder).")
    var textures: String?
    @OptionGroup var options: SyntheticSequenceOptions

    /// Marks a folder synth is still writing: a run killed half-way left frames that made the folder "not empty" to
    /// the run again. A marked folder's own files are cleared by the next run; nothing else is.
    static let unfinishedMarker = ".rephoto-synth-unfinished"

    func run() throws {
        let textures = try textures ?? SyntheticTextures.defaultDirectory(for: options, executable: Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0]))
        try SyntheticTextures.check(textures, for: options)
        try OutputPaths.checkFolder(out, apartFrom: [textures])
        let folder = URL(fileURLWithPath: out), marker = folder.appendingPathComponent(Self.unfinishedMarker)
        if FileManager.default.fileExists(atPath: marker.path) {
            Self.clear(folder)
            CLIOutput.message("\(out): replacing what a run that did not finish left there")
        }
        try OutputPaths.checkEmptyFolder(out)
        // Checked before rendering: every reader refuses a sequence with a name such as ../evil or a,b.
        try FrameSequence.checkName(SyntheticSequence.name(options, directory: folder), place: options.name == nil ? "--out's folder name (or give --name)" : "--name")
        let existed = FileManager.default.fileExists(atPath: out)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: marker.path, contents: nil) else {
            throw RephotoError.badInput("--out \(out): cannot write there")
        }
        let progress = Progress(label: "synth")
        let sequence: FrameSequence
        do {
            sequence = try SyntheticSequence.generate(options, textureDirectory: textures, to: folder) { progress.update($0, of: $1) }
        } catch {
            // A failure (not a kill) takes back what this run wrote: the marker is for runs that could not.
            Self.clear(folder)
            if !existed { try? FileManager.default.removeItem(at: folder) } else { try? FileManager.default.removeItem(at: marker) }
            throw error
        }
        try FileManager.default.removeItem(at: marker)
        print("\(CLIOutput.visible(sequence.manifest.name)): reference + \(sequence.currentFrames.count) frames with ground truth -> \(CLIOutput.visible(out))")
    }

    /// Removes the files synth writes from `folder`, and nothing else.
    static func clear(_ folder: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where ["reference.jpg", "frames.csv", "sequence.json"].contains(name)
            || (name.hasPrefix("frame-") && name.hasSuffix(".jpg")) {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
    }
}
