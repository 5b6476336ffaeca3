import ArgumentParser
import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit
import RephotoSynthesis

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert published data with ground truth into the sequence format (datasets/README.md).",
        subcommands: [Strecha.self, OpenCVSamples.self])

    struct Strecha: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A Strecha-format folder (images/K.txt, images/*.jpg, gt_dense_cameras/*.camera) as a pair list: every pair of images (i < j), neighbours first.")

        @Argument(help: "The Strecha folder, e.g. ../shared/datasets/strecha-herzjesu-p8.")
        var folder: String
        @Option(parsing: .unconditional, help: "Output sequence folder.")
        var out: String
        @Option(parsing: .unconditional, help: "Sequence name (default: the folder's name).")
        var name: String?
        @Flag(help: "Copy the images instead of linking them.")
        var copy = false

        func run() throws {
            try OutputPaths.checkFolder(out, apartFrom: [folder], disjoint: true)
            try OutputPaths.checkEmptyFolder(out)
            let sequence = try SequenceImport.strecha(from: URL(fileURLWithPath: folder), to: URL(fileURLWithPath: out), name: name, copy: copy)
            print("\(CLIOutput.visible(sequence.manifest.name)): \(sequence.frames.count) pairs with ground truth -> \(CLIOutput.visible(out))")
        }
    }

    struct OpenCVSamples: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "opencv-samples",
            abstract: "OpenCV's sample pairs (opencv-doc examples/data) as sequences graf, suzanne, leuven and aloe.")

        @Argument(help: "The samples folder (scripts/fetch-sample-data puts it in .cache/opencv-samples).")
        var folder: String
        @Option(parsing: .unconditional, help: "Output folder; one sequence folder is made per pair.")
        var out: String

        func run() throws {
            try OutputPaths.checkFolder(out, apartFrom: [folder], disjoint: true)
            // Each sequence goes into a new or empty folder of its own, as every sequence writer's does: written
            // over an earlier one it replaced that one's frames.csv and kept its other files as strays.
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory), !isDirectory.boolValue {
                throw RephotoError.badInput("--out \(out) is a file: name a folder")
            }
            for name in SequenceImport.openCVSampleSequences {
                let folder = (out as NSString).appendingPathComponent(name)
                // A link there would take the sequence out of --out (probe: into the folder it named).
                if (try? FileManager.default.destinationOfSymbolicLink(atPath: folder)) != nil {
                    throw RephotoError.badInput("--out \(out): its sequence folder \(folder) is a symbolic link: remove it or name another folder")
                }
                try OutputPaths.checkEmptyFolder(folder, option: "--out \(out): its sequence folder")
            }
            let made = try SequenceImport.openCVSamples(from: URL(fileURLWithPath: folder), to: URL(fileURLWithPath: out))
            print("\(made.map(\.manifest.name).joined(separator: ", ")) -> \(CLIOutput.visible(out))")
        }
    }
}
