import Foundation
import RephotoKit

/// `rephoto import video`: a phone video and the motion log recorded beside it, as a sequence (datasets/README.md): the
/// chosen frames as JPEGs with their timestamps and attitudes (the log resampled to each frame by SLERP), and a
/// reference (a still photo, or one of the frames). Written into a temporary folder beside the output and renamed
/// into place at the end: a failure or a kill leaves no half-written sequence.
public enum VideoImport {
    public struct Options: Sendable {
        /// Every n-th frame (1: all), or frames `fps` apart on the video's clock; at most one of them.
        public var every = 1
        public var fps: Double?
        /// Seconds added to the log's timestamps to put them on the video's clock.
        public var clockOffset = 0.0
        /// A still photo as the reference, or the index (among the frames written) of the frame that is.
        public var referencePhoto: String?
        public var referenceFrame: Int?
        public var name: String?
        public var orientation = ScreenOrientation.portrait
        public var intrinsics: SequenceIntrinsics?
        public var maxPixels = 50_000_000
        public var jpegQuality = 95

        public init() {}
    }

    /// `progress(frames read, frames in the container or nil)`.
    public static func run(clip: String, motion: String?, to out: URL, options: Options,
                           progress: ((Int, Int?) -> Void)? = nil) throws -> FrameSequence {
        guard options.every >= 1 else { throw RephotoError.badInput("--every \(options.every) must be at least 1") }
        if let fps = options.fps, !(fps > 0 && fps.isFinite) { throw RephotoError.badInput("--fps \(fps) must be a positive number") }
        guard abs(options.clockOffset) <= MotionLog.maxTime else {
            throw RephotoError.badInput(String(format: "--clock-offset %.4g must be a number of seconds within ±%.0e", options.clockOffset, MotionLog.maxTime))
        }
        guard (options.referencePhoto == nil) != (options.referenceFrame == nil) else {
            throw RephotoError.badInput("give the reference as --reference PHOTO or --reference-frame N, one of them")
        }
        // The name is checked before any work: a clip's file name ("café.mp4") may be none the sequence format allows,
        // and is then made into one.
        let name = options.name ?? plainName(((clip as NSString).lastPathComponent as NSString).deletingPathExtension)
        try FrameSequence.checkName(name, place: options.name == nil ? "the clip's file name" : "--name")
        let log = try motion.map(MotionLog.load)
        let video = try VideoClip(path: clip, maxPixels: options.maxPixels)
        let fm = FileManager.default
        let parent = out.deletingLastPathComponent()
        let prefix = stagingPrefix(out)
        // Staging folders of imports that were killed (their process is gone) are removed.
        for stale in (try? fm.contentsOfDirectory(atPath: parent.path)) ?? [] where stale.hasPrefix(prefix) {
            if let pid = Int32(stale.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
                try? fm.removeItem(at: parent.appendingPathComponent(stale))
            }
        }
        let staging = stagingFolder(out)
        try? fm.removeItem(at: staging)
        // --out's missing parents are made for the staging folder, and removed again when the import fails.
        var made: [URL] = []
        var missing = parent.standardizedFileURL
        while !fm.fileExists(atPath: missing.path), missing.path != "/" {
            made.append(missing)
            missing = missing.deletingLastPathComponent()
        }
        var done = false
        defer {
            if !done {
                try? fm.removeItem(at: staging)
                for folder in made { rmdir(folder.path) }  // deepest first; one that is not empty stays
            }
        }
        try fm.createDirectory(at: staging, withIntermediateDirectories: true)

        var frames: [SequenceFrame] = []
        var read = 0, next = 0.0, lastTime = -Double.infinity
        while let (image, reported) = try video.next() {
            defer { read += 1; progress?(read, video.frameCount) }
            // FFmpeg reports no time for the frames it flushes at the end of a stream (OpenCV then says 0): those follow
            // the frame before at the container's nominal rate.
            var time = reported
            // A still image read as a stream reports nonsense times (-3.7e17 s for a JPEG): a video starts at or after 0.
            if read == 0, !(time >= 0 && time < 1e7) {
                throw RephotoError.badInput("\(clip): not a video (its first frame is at \(time) s)")
            }
            if time <= lastTime {
                guard video.fps > 0 else {
                    throw RephotoError.badInput("\(clip): frame \(read) is at \(time) s, not after the frame before it (\(lastTime) s), and the video names no frame rate")
                }
                time = lastTime + 1 / video.fps
            }
            lastTime = time
            if let fps = options.fps {
                guard time >= next - 1e-6 else { continue }
                next = max(next + 1 / fps, time)
            } else if read % options.every != 0 {
                continue
            }
            if frames.isEmpty, let intrinsics = options.intrinsics { try checkIntrinsics(intrinsics, frame: image.size) }
            let file = String(format: "frame-%05d.jpg", frames.count)
            try image.write(to: staging.appendingPathComponent(file).path, format: .jpeg(quality: options.jpegQuality))
            frames.append(SequenceFrame(file: file, timestamp: time, attitude: try log?.attitude(atVideoTime: time, clockOffset: options.clockOffset)))
        }
        if let expected = video.frameCount, read < expected - 1 {
            throw RephotoError.badInput("\(clip): the video ended after \(read) of its \(expected) frames: truncated or damaged")
        }
        guard !frames.isEmpty else { throw RephotoError.badInput("\(clip): no frame could be read") }
        if options.referencePhoto == nil, frames.count < 2 {
            throw RephotoError.badInput("\(clip): \(frames.count) frame kept; with --reference-frame a sequence needs at least 2 (the reference and a frame)")
        }

        let reference: String
        if let photo = options.referencePhoto {
            let bytes = try Image.readFile(photo, maxBytes: 256 << 20)
            try Image.checkSignature(bytes)
            reference = "reference." + ((photo as NSString).pathExtension.isEmpty ? "jpg" : (photo as NSString).pathExtension.lowercased())
            try bytes.write(to: staging.appendingPathComponent(reference))
            frames.insert(SequenceFrame(file: reference), at: 0)
        } else {
            let index = options.referenceFrame!
            guard frames.indices.contains(index) else {
                throw RephotoError.badInput("--reference-frame \(index) is not one of the \(frames.count) frames written (0...\(frames.count - 1))")
            }
            reference = frames[index].file
        }
        let manifest = SequenceManifest(name: name, intrinsics: options.intrinsics, reference: reference,
                                        cameraOrientation: options.orientation, attitudeFrame: log?.attitudeFrame ?? .xArbitraryZVertical,
                                        provenance: "rephoto import video: \((clip as NSString).lastPathComponent)"
                                            + (motion.map { ", motion log \(($0 as NSString).lastPathComponent) (\(log!.format.rawValue))" } ?? "")
                                            + String(format: ", clock offset %g s", options.clockOffset),
                                        license: "")
        let sequence = FrameSequence(manifest: manifest, frames: frames)
        try sequence.write(to: staging)
        // Read back as every reader will before it takes --out's place: a sequence the format refuses is never left.
        _ = try FrameSequence.load(from: staging)
        // An empty folder named by --out (checked empty by the caller) makes way for the finished one.
        if fm.fileExists(atPath: out.path) { try fm.removeItem(at: out) }
        try fm.moveItem(at: staging, to: out)
        done = true
        return try FrameSequence.load(from: out)
    }

    /// The folder an import into `out` by this process is written in before it is renamed into place (removed by
    /// the command's SIGINT and SIGTERM handler; those of dead processes by the next import into `out`).
    public static func stagingFolder(_ out: URL) -> URL {
        out.deletingLastPathComponent().appendingPathComponent(stagingPrefix(out) + String(getpid()))
    }

    static func stagingPrefix(_ out: URL) -> String { ".\(out.lastPathComponent).partial-" }

    /// `--intrinsics` are of the frames as written (the container's rotation applied): a principal point outside
    /// them, or far off their centre (over an eighth of a side: intrinsics of the unrotated frames, or of another
    /// size), is refused, naming the value.
    static func checkIntrinsics(_ intrinsics: SequenceIntrinsics, frame size: ImageSize) throws {
        let (w, h) = (Double(size.width), Double(size.height))
        guard abs(intrinsics.cx - (w - 1) / 2) <= w / 8, abs(intrinsics.cy - (h - 1) / 2) <= h / 8 else {
            throw RephotoError.badInput(String(format: "--intrinsics: principal point (%.6g, %.6g) is far from the centre of the %dx%d frames (more than an eighth of a side off; the frames are written as displayed, the video's rotation applied: give intrinsics of those)",
                                               intrinsics.cx, intrinsics.cy, size.width, size.height))
        }
    }

    /// A file name as a sequence name: characters the format does not allow become '-', and a leading '.' goes.
    static func plainName(_ file: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        var name = String(file.prefix(128).map { allowed.contains($0) ? $0 : "-" })
        while name.hasPrefix(".") { name.removeFirst() }
        return name.isEmpty ? "video" : name
    }
}
