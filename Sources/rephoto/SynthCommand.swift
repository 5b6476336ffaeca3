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
        discussion: "Three textured planes (OpenCV sample photographs) seen from a trajectory that starts off the reference pose and converges to it with hand tremor. Deterministic for a seed. Writes the sequence format of datasets/README.md.")

    @Option(parsing: .unconditional, help: "Output sequence folder.") var out: String
    @Option(parsing: .unconditional, help: "Folder of OpenCV's sample images (textures).") var textures = ".cache/opencv-samples"
    @OptionGroup var options: SyntheticSequenceOptions

    func run() throws {
        try OutputPaths.checkFolder(out, apartFrom: [textures])
        try OutputPaths.checkEmptyFolder(out)
        // Checked before rendering: every reader refuses a sequence with a name such as ../evil or a,b.
        try FrameSequence.checkName(options.name, place: "--name")
        let progress = Progress(label: "synth")
        let sequence = try SyntheticSequence.generate(options, textureDirectory: textures, to: URL(fileURLWithPath: out)) { progress.update($0, of: $1) }
        print("\(CLIOutput.visible(sequence.manifest.name)): reference + \(sequence.currentFrames.count) frames with ground truth -> \(CLIOutput.visible(out))")
    }
}
