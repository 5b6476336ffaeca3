import ArgumentParser
import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit
import RephotoSynthesis

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert published data with ground truth, or a phone video with its motion log, into the sequence format (datasets/README.md).",
        subcommands: [Strecha.self, OpenCVSamples.self, Video.self])

    struct Video: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A phone video (MP4/MOV, H.264 or HEVC) and the motion log recorded beside it as a sequence: the frames as JPEGs with their timestamps, and the log's attitudes resampled to them (SLERP).",
            discussion: "Motion logs: plain CSV timestamp,qw,qx,qy,qz (seconds on the video's clock); Sensor Logger's Orientation.csv (time,seconds_elapsed,qz,qy,qx,qw; its clock seconds_elapsed); SensorLog's CoreMotion CSV (motionTimestamp_sinceReboot(s), motionQuaternionW(R)...Z(R)); Android rotation-vector events timestamp_ns,x,y,z[,w]. Frames are written as displayed (the video's rotation applied), and --intrinsics must be of those. Written into a temporary folder and renamed into place: a failure, SIGINT or SIGTERM leaves nothing half-written.")

        @Argument(help: "The video file.") var clip: String
        @Option(parsing: .unconditional, help: "The motion log (CSV) recorded beside the video, in one of the formats above.") var motion: String
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output sequence folder (new or empty).") var out: String
        @Option(parsing: .unconditional, help: "Keep every N-th frame (default 1: all).") var every: Int?
        @Option(parsing: .unconditional, help: "Keep frames this many per second of the video's clock instead.", transform: decimalOption) var fps: Double?
        @Option(parsing: .unconditional, help: "Seconds added to the log's timestamps to put them on the video's clock (default 0).", transform: decimalOption)
        var clockOffset: Double = 0
        @Option(parsing: .unconditional, help: "A still photo as the reference.") var reference: String?
        @Option(parsing: .unconditional, help: "Or the frame (0-based, among those kept) that is the reference.") var referenceFrame: Int?
        @Option(parsing: .unconditional, help: "Sequence name (default: the video's file name without its extension).") var name: String?
        @Option(parsing: .unconditional, help: "How the phone was held: portrait, portraitUpsideDown, landscapeLeft, landscapeRight (default portrait).")
        var orientation: ScreenOrientation = .portrait
        @Option(parsing: .unconditional, help: "The frames' intrinsics fx,fy,cx,cy in pixels of the video's frames.") var intrinsics: String?
        @OptionGroup var pipeline: PipelineOptions

        func run() throws {
            if every != nil && fps != nil { throw RephotoError.badInput("give --every or --fps, not both") }
            // FFmpeg's own messages ("moov atom not found") would come beside rephoto's one line: quiet, unless asked for.
            setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0)
            try OutputPaths.checkFolder(out, apartFrom: [clip, motion] + [reference].compactMap { $0 }, disjoint: true)
            try OutputPaths.checkEmptyFolder(out)
            var options = VideoImport.Options()
            options.every = every ?? 1
            options.fps = fps
            options.clockOffset = clockOffset
            options.referencePhoto = reference
            options.referenceFrame = referenceFrame
            options.name = name
            options.orientation = orientation
            options.maxPixels = try pipeline.resolve().maxPixels
            if let intrinsics {
                let values = intrinsics.split(separator: ",").compactMap { decimalNumber(String($0).trimmingCharacters(in: .whitespaces)) }
                guard values.count == 4, values.allSatisfy({ $0.isFinite }), values[0] > 0, values[1] > 0 else {
                    throw RephotoError.badInput("--intrinsics '\(intrinsics.prefix(80))' must be fx,fy,cx,cy (four numbers, positive focal lengths)")
                }
                options.intrinsics = SequenceIntrinsics(fx: values[0], fy: values[1], cx: values[2], cy: values[3])
            }
            let staging = VideoImport.stagingFolder(URL(fileURLWithPath: out))
            ImmediateInterruption.install {
                // Renamed first: the import goes on writing frames by the staging path until the process exits, and a
                // frame written into the folder while it was being removed left it behind. Nothing can be created in
                // the renamed folder, so removing it is final.
                let trash = staging.deletingLastPathComponent().appendingPathComponent(".rephoto-removing-\(getpid())")
                let gone = rename(staging.path, trash.path) == 0 ? trash : staging
                try? FileManager.default.removeItem(at: gone)
            }
            let progress = Progress(label: "import")
            let sequence = try VideoImport.run(clip: clip, motion: motion, to: URL(fileURLWithPath: out), options: options) { done, total in
                progress.update(done, of: total ?? done)
            }
            print("\(CLIOutput.visible(sequence.manifest.name)): \(sequence.currentFrames.count) frames with attitudes -> \(CLIOutput.visible(out))")
        }
    }

    struct Strecha: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A Strecha-format folder (images/K.txt, images/*.jpg, gt_dense_cameras/*.camera) as a pair list: every pair of images (i < j), neighbours first.")

        @Argument(help: "The Strecha folder, e.g. ../shared/datasets/strecha-herzjesu-p8.")
        var folder: String
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output sequence folder.")
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
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output folder; one sequence folder is made per pair.")
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
