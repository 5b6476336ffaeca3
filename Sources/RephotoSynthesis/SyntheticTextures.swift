import Foundation
import RephotoKit

/// The photographs synthetic scenes are textured with (OpenCV's samples, scripts/fetch-sample-data), and where
/// `rephoto synth` finds them when `--textures` is not given: never only relative to the current folder, so that
/// the installed tool works from anywhere.
public enum SyntheticTextures {
    /// The files a sequence with `options` reads, in the order its scene is built.
    public static func files(for options: SyntheticSequenceOptions) -> [String] {
        var names = options.motion == .converge ? ["graf1.png", "building.jpg", "baboon.jpg"] : ["building.jpg"] + SyntheticScene.streetTextures
        if options.replacedRegion { names.append("home.jpg") }
        if options.occluder { names.append("fruits.jpg") }
        return names
    }

    /// Refuses a folder that lacks one of the files, before anything is written.
    public static func check(_ directory: String, for options: SyntheticSequenceOptions) throws {
        for name in files(for: options) where !FileManager.default.isReadableFile(atPath: (directory as NSString).appendingPathComponent(name)) {
            throw RephotoError.badInput("--textures \(directory): no readable \(name) there (a folder of OpenCV's sample images, as scripts/fetch-sample-data makes)")
        }
    }

    /// Where to look without `--textures`, first match wins: `share/rephoto/textures` beside the installed binary
    /// (scripts/install-cli), `.cache/opencv-samples` in a folder above the binary (a build inside the repository),
    /// then `.cache/opencv-samples` in the current folder.
    public static func candidates(executable: URL) -> [String] {
        let binary = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        var places = [binary.deletingLastPathComponent().appendingPathComponent("share/rephoto/textures").path]
        var folder = binary
        for _ in 0..<6 {
            places.append(folder.appendingPathComponent(".cache/opencv-samples").path)
            folder = folder.deletingLastPathComponent()
        }
        places.append(URL(fileURLWithPath: ".cache/opencv-samples").standardizedFileURL.path)
        return places
    }

    /// The first candidate that has every file `options` needs; an error naming `--textures` and where it looked.
    public static func defaultDirectory(for options: SyntheticSequenceOptions, executable: URL) throws -> String {
        let places = candidates(executable: executable)
        if let found = places.first(where: { (try? check($0, for: options)) != nil }) { return found }
        throw RephotoError.badInput("no folder of texture images found (looked in \(places[0]), .cache/opencv-samples above \(executable.deletingLastPathComponent().path) and in the current folder): give --textures DIR, a folder of OpenCV's sample images (scripts/fetch-sample-data)")
    }
}
