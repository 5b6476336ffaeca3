import ArgumentParser
import Foundation
import RephotoKit

struct AlignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "align",
        abstract: "Warp the current photo into the reference's frame: alone, blended over it, or split (then and now).",
        discussion: "The homography is estimated as `rephoto pose` does. Exit codes: 0 written, 2 bad input, 3 could not estimate.")

    @Option(parsing: .unconditional, help: "The reference (old) photo.") var reference: String
    @Option(parsing: .unconditional, help: "The current (new) photo.") var current: String
    @Option(parsing: .unconditional, help: "warped, blend or split.") var mode: Alignment.Mode = .warped
    @Option(parsing: .unconditional, help: "Opacity of the current photo in a blend (the other modes have none), 0...1.", transform: decimalOption)
    var opacity = 0.5
    @Option(name: [.short, .long], parsing: .unconditional, help: "Output file (.jpg/.jpeg or .png).") var out: String
    @OptionGroup var pipeline: PipelineOptions

    func run() throws {
        // Checked before the estimate it would otherwise follow.
        guard opacity >= 0, opacity <= 1 else { throw RephotoError.badInput("--opacity \(opacity) must be 0...1") }
        try OutputPaths.checkFile(out, apartFrom: [reference, current])
        let settings = try pipeline.resolve()
        let lower = out.lowercased()
        guard lower.hasSuffix(".png") || lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") else {
            throw RephotoError.badInput("--out \(out) must end in .jpg, .jpeg or .png")
        }
        let estimator = try PoseEstimator(config: settings)
        let prepared = try estimator.prepareReference(try estimator.load(contentsOfFile: reference), camera: nil)
        let result = try estimator.estimate(reference: prepared, current: try estimator.load(contentsOfFile: current), camera: nil)
        let aligned = try Alignment.compose(reference: try Image(contentsOfFile: reference, maxPixels: settings.maxPixels, maxBytes: settings.maxBytes),
                                            retake: try Image(contentsOfFile: current, maxPixels: settings.maxPixels, maxBytes: settings.maxBytes),
                                            homography: result.homography, mode: mode, opacity: opacity)
        try aligned.write(to: out, format: lower.hasSuffix(".png") ? .png : .jpeg(quality: 92))
        for warning in result.alignmentWarnings { CLIOutput.message("warning: \(warning)") }
        print("aligned \(CLIOutput.visible(current)) onto \(CLIOutput.visible(reference)) (\(mode.rawValue), \(result.counts.inliersHomography) inliers) -> \(CLIOutput.visible(out))")
    }
}

extension Alignment.Mode: ExpressibleByArgument {}
