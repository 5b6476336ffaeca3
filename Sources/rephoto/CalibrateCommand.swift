import ArgumentParser
import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit
import RephotoSynthesis

struct CalibrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calibrate",
        abstract: "Calibrate a camera from chessboard photos; writes the OpenCV FileStorage file --calibration reads.")

    @Argument(help: "Chessboard images; those of another size than most are skipped with a warning naming them.") var images: [String]
    @Option(parsing: .unconditional, help: "Inner corners of the board, WIDTHxHEIGHT, e.g. 9x6.") var board: String
    @Option(parsing: .unconditional, help: "Side of a square, metres.", transform: decimalOption) var square: Double
    @Option(name: [.short, .long], parsing: .unconditional, help: "Output file (.yml, .xml or .json).") var out: String
    @Option(parsing: .unconditional, help: "Fewest views with the board that calibration accepts (3...40: the camera is fitted to at most 40).") var minimumViews = 5
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        // Every part a number: "9x6x" was taken as 9x6.
        let parts = board.lowercased().split(separator: "x", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard parts.count == 2, board.lowercased().split(separator: "x", omittingEmptySubsequences: false).count == 2 else { throw RephotoError.badInput("--board '\(board)' must be WIDTHxHEIGHT inner corners, e.g. 9x6") }
        guard ["yml", "yaml", "xml", "json"].contains((out as NSString).pathExtension.lowercased()) else {
            throw RephotoError.badInput("--out \(out) must end in .yml, .yaml, .xml or .json (OpenCV FileStorage)")
        }
        try OutputPaths.checkFile(out, apartFrom: images)
        // Checked before any photo is searched: a bad setting is reported at once, not after minutes of search.
        var views = ChessboardCalibration.Views(board: try .init(width: parts[0], height: parts[1], squareSize: square, minimumViews: minimumViews))
        // One camera has one image size: photos of another size than most (a glob such as left*.jpg that also
        // matches left.jpg) are skipped and named, rather than the whole calibration refused.
        let images = try Self.ofCommonSize(images, maxBytes: PipelineConfig().maxBytes)
        // Fewer photos than views cannot calibrate whatever the search finds: said before seconds of search per photo.
        guard images.count >= minimumViews else {
            throw RephotoError.badInput("\(images.count) photo\(images.count == 1 ? "" : "s") given; calibration needs at least \(minimumViews) views with the board (--minimum-views)")
        }
        // The same photo twice is one view counted twice: it calibrated 812 px where the camera has 538.
        var seen: [Int: [String]] = [:]  // hash of the bytes: one file's bytes in memory at a time
        let limit = PipelineConfig().maxBytes
        let progress = Progress(label: "calibrate")
        for (done, path) in images.enumerated() {
            progress.update(done, of: images.count)
            let bytes = try Image.readFile(path, maxBytes: limit)
            var hasher = Hasher()
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            let key = hasher.finalize()
            for first in seen[key] ?? [] where try Image.readFile(first, maxBytes: limit) == bytes {
                throw RephotoError.badInput("\(path) and \(first) are the same photo: one view, counted twice")
            }
            seen[key, default: []].append(path)
            // One photo decoded at a time, from the bytes already read; only its corners are kept.
            do {
                try views.add(try Image(data: bytes))
            } catch let error as RephotoError {
                throw error.prefixed(path)
            }
        }
        progress.update(images.count, of: images.count)
        let found = views.corners.compactMap { $0 }.count
        let result = try progress.during("fitting the camera to \(min(found, ChessboardCalibration.maxFittedViews)) of \(found) views") {
            try views.calibrate()
        }
        try result.write(to: out)
        let k = result.intrinsics
        if json {
            struct Summary: Encodable {
                var fx, fy, cx, cy, rms, meanReprojectionErrorPixels: Double
                var distortion: [Double]
                var views: [String: Double?]
                /// The photos whose views the camera was fitted to (all with the board, up to the cap).
                var fittedViews: [String]
                /// Photos left out of the choice of the fitted ones, their error over 3x the median.
                var outlyingViews: [String]
                var output: String
            }
            try CLIOutput.printJSON(Summary(fx: k.fx, fy: k.fy, cx: k.cx, cy: k.cy, rms: result.rms, meanReprojectionErrorPixels: result.meanError,
                                            distortion: k.distortion, views: Dictionary(uniqueKeysWithValues: zip(images, result.viewErrors)),
                                            fittedViews: result.fittedViews.map { images[$0] }, outlyingViews: result.outlyingViews.map { images[$0] },
                                            output: out))
        } else {
            let used = result.viewErrors.compactMap { $0 }.count
            let fitted = result.fittedViews.count < used
                ? String(format: " (fitted to a spread %d of them, the rest checked against the fit)", result.fittedViews.count) : ""
            print(String(format: "calibrated from %d of %d views%@: fx %.2f fy %.2f cx %.2f cy %.2f px, mean reprojection error %.3f px -> %@",
                         used, images.count, fitted, k.fx, k.fy, k.cx, k.cy, result.meanError, CLIOutput.visible(out)))
            for (image, error) in zip(images, result.viewErrors) where error == nil { print("  board not found: \(CLIOutput.visible(image))") }
            for i in result.outlyingViews {
                print(String(format: "  not fitted, error %.2f px (over 3x the median): %@", result.viewErrors[i] ?? .nan, CLIOutput.visible(images[i])))
            }
        }
    }

    /// The photos of the most common size (displayed, after EXIF orientation; ties: the first photo's), each other one
    /// named on stderr. Sizes come from a reduced decode (a JPEG at 1/8 through libjpeg), so this costs little.
    static func ofCommonSize(_ images: [String], maxBytes: Int) throws -> [String] {
        let probe = FeatureConfig(detector: .orb, maxDimension: 64)
        let sizes = try images.map { path -> ImageSize in
            do {
                return try Image(data: try Image.readFile(path, maxBytes: maxBytes), grayscale: true, reducedFor: probe).fullSize
            } catch let error as RephotoError {
                throw error.prefixed(path)
            }
        }
        var counts: [ImageSize: Int] = [:]
        for size in sizes { counts[size, default: 0] += 1 }
        guard let common = sizes.max(by: { counts[$0]! < counts[$1]! }), counts.count > 1 else { return images }
        for (path, size) in zip(images, sizes) where size != common {
            CLIOutput.message("\(path): \(size.width)x\(size.height), the other photos are \(common.width)x\(common.height): skipped")
        }
        return zip(images, sizes).filter { $0.1 == common }.map(\.0)
    }
}
