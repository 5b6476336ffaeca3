import Foundation
import RephotoKit
import RephotoShimTools

/// A video file read one frame at a time (OpenCV's videoio, FFmpeg backend): MP4 or MOV, H.264 or HEVC.
public final class VideoClip {
    private let handle: OpaquePointer
    public let path: String
    public let size: ImageSize
    /// The container's nominal frame rate (0 when unknown) and frame count (nil when unknown).
    public let fps: Double
    public let frameCount: Int?

    /// Throws `.badInput` for a file that is no readable video or whose frames exceed `maxPixels`.
    public init(path: String, maxPixels: Int) throws {
        try Image.checkInputFile(path, noun: "a video")
        var info = rp_video_info()
        var out: OpaquePointer?
        do {
            try shimCall { rp_video_open(path, Int64(maxPixels), &out, &info, $0) }
        } catch let error as RephotoError {
            throw error.prefixed(path)
        }
        handle = out!
        self.path = path
        size = ImageSize(width: Int(info.width), height: Int(info.height))
        fps = info.fps
        frameCount = info.frame_count >= 1 ? Int(info.frame_count) : nil
    }

    deinit { rp_video_free(handle) }

    /// The next frame and its presentation time, seconds on the video's clock; nil at the end of the stream.
    public func next() throws -> (image: Image, timestamp: Double)? {
        var out: OpaquePointer?
        var timestamp = 0.0
        do {
            try shimCall { rp_video_read(handle, &out, &timestamp, $0) }
        } catch let error as RephotoError {
            throw error.prefixed(path)
        }
        guard let out else { return nil }
        return (Image(handle: out), timestamp)
    }
}
