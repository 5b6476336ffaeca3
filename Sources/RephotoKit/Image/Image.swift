import RephotoShim
import Foundation

/// An 8-bit image (BGR or grey) in OpenCV memory, EXIF orientation already applied.
/// Immutable after creation, so one instance can be read from several threads at once.
public final class Image: @unchecked Sendable {
    /// Images above this many pixels are refused before decoding: the registry's `maxPixels` default.
    public static var defaultMaxPixels: Int { ParameterRegistry.defaultValue(\.maxPixels) }
    /// Files above this many bytes are refused before they are read: the registry's `maxBytes` default.
    public static var defaultMaxBytes: Int { ParameterRegistry.defaultValue(\.maxBytes) }

    package let handle: OpaquePointer
    public let width: Int
    public let height: Int
    public let channels: Int
    /// The full-resolution size this image stands for, in the pixel coordinates every result uses: `size`
    /// itself unless it was decoded reduced for a feature configuration's analysis scale.
    public let fullSize: ImageSize
    /// What the decoder said about damaged data it decoded anyway ("Corrupt JPEG data: ..."); nil when clean.
    public let decodeWarning: String?
    /// The EXIF orientation (1...8) a JPEG's or TIFF's header gave, already applied to the pixels; 1 for other formats.
    public let exifOrientation: Int

    package init(handle: OpaquePointer) {
        self.handle = handle
        width = Int(rp_image_width(handle))
        height = Int(rp_image_height(handle))
        channels = Int(rp_image_channels(handle))
        fullSize = ImageSize(width: Int(rp_image_full_width(handle)), height: Int(rp_image_full_height(handle)))
        let warning = String(cString: rp_image_decode_warning(handle))
        decodeWarning = warning.isEmpty ? nil : warning
        exifOrientation = Int(rp_image_exif_orientation(handle))
    }

    deinit { rp_image_free(handle) }

    /// Decodes JPEG, PNG, HEIC/HEIF, TIFF, WebP, BMP, PNM or JPEG 2000 bytes. `maxPixels` is checked against
    /// the header before any decoding.
    /// `grayscale` decodes straight to one channel (faster; enough for estimation, not for drawing).
    /// Damaged data the decoder could still decode is kept as `decodeWarning`, or refused when `strict`.
    /// With `reducedFor`, the image is decoded no larger than that configuration's analysis scale needs (JPEGs
    /// through libjpeg's DCT scaling, so full-size pixels never exist): memory for detection only, since the
    /// pixels are then smaller than `fullSize`. Features found on it are still in full-resolution pixels.
    public convenience init(data: Data, maxPixels: Int = Image.defaultMaxPixels, grayscale: Bool = false, strict: Bool = false,
                            reducedFor features: FeatureConfig? = nil) throws {
        var out: OpaquePointer?
        let maxDimension = try cInt(features?.maxDimension ?? 0, "features.maxDimension")
        let scale = features?.scale ?? 0
        try data.withUnsafeBytes { raw in
            let base = raw.bindMemory(to: UInt8.self).baseAddress
            try shimCall { rp_image_decode(base, raw.count, Int64(maxPixels), grayscale ? 1 : 0, maxDimension, scale, &out, $0) }
        }
        self.init(handle: out!)
        if strict, let decodeWarning {
            throw RephotoError.badInput("damaged image data (\(decodeWarning)); refused because strictDecoding is set", cause: .damagedImage)
        }
    }

    /// Reads and decodes an image file; errors name the path.
    public convenience init(contentsOfFile path: String, maxPixels: Int = Image.defaultMaxPixels, maxBytes: Int = Image.defaultMaxBytes,
                            grayscale: Bool = false, strict: Bool = false, reducedFor features: FeatureConfig? = nil) throws {
        let data = try Image.readFile(path, maxBytes: maxBytes)
        do {
            try self.init(data: data, maxPixels: maxPixels, grayscale: grayscale, strict: strict, reducedFor: features)
        } catch let error as RephotoError {
            throw error.prefixed(path)
        }
    }

    /// Wraps tightly packed 8-bit pixels (1 channel grey or 3 channels BGR).
    public convenience init(width: Int, height: Int, channels: Int, pixels: [UInt8]) throws {
        let (area, areaOverflow) = width.multipliedReportingOverflow(by: height)
        let (bytes, bytesOverflow) = area.multipliedReportingOverflow(by: channels)
        guard width > 0, height > 0, channels > 0, !areaOverflow, !bytesOverflow, bytes == pixels.count else {
            throw RephotoError.badInput("pixel buffer has \(pixels.count) bytes, expected \(width)x\(height)x\(channels)")
        }
        var out: OpaquePointer?
        try pixels.withUnsafeBufferPointer { buffer in
            let (w, h, c) = (try cInt(width, "width"), try cInt(height, "height"), try cInt(channels, "channels"))
            try shimCall { rp_image_create(w, h, c, buffer.baseAddress, width * channels, buffer.count, &out, $0) }
        }
        self.init(handle: out!)
    }

    /// The checks every input file passes before it is opened: it exists and is a regular file, not a directory
    /// (`noun` says what it should be), and not a device, pipe or socket (/dev/stdin, /proc/self/fd/0), which could
    /// take another reader's input or never end. The system's own reason: a link to itself read "is a directory"
    /// through Foundation.
    package static func checkInputFile(_ path: String, noun: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw RephotoError.badInput(errno == ENOENT || errno == ENOTDIR ? "\(path): no such file"
                                                                            : "\(path): cannot open (\(String(cString: strerror(errno))))")
        }
        guard (info.st_mode & S_IFMT) != S_IFDIR else { throw RephotoError.badInput("\(path): is a directory, not \(noun)") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw RephotoError.badInput("\(path): not a regular file") }
        if info.st_size == 0 { throw RephotoError.badInput("\(path): empty file (0 bytes)") }
    }

    /// Reads an image file after checking, from the file system and the first bytes, that it is a file of an
    /// acceptable size and of a supported format: a multi-gigabyte or non-image file is refused without being read.
    /// `image` false: any small file (a points file), not checked for an image format.
    package static func readFile(_ path: String, maxBytes: Int = Image.defaultMaxBytes, image: Bool = true) throws -> Data {
        try checkInputFile(path, noun: image ? "an image" : "a file")
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw RephotoError.badInput("\(path): cannot read file (permission denied or not a regular file)")
        }
        defer { try? handle.close() }
        let size: UInt64
        do {
            size = try handle.seekToEnd()
            try handle.seek(toOffset: 0)
        } catch {
            throw RephotoError.badInput("\(path): cannot read file (\(fileErrorReason(error)))")
        }
        if size == 0 { throw RephotoError.badInput("\(path): empty file (0 bytes)") }
        if size > UInt64(max(maxBytes, 0)) {
            throw RephotoError(.badInput, "\(path): \(size) bytes, over the limit of \(maxBytes) bytes (maxBytes, --max-bytes)", reason: .tooLarge)
        }
        do {
            // The magic bytes first: a file of no supported format is refused with what it is, unread.
            let head = try handle.read(upToCount: 16) ?? Data()
            if image { do {
                try head.withUnsafeBytes { raw in
                    try shimCall { rp_image_check_signature(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, size, $0) }
                }
            } catch let error as RephotoError {
                throw error.prefixed(path)
            } }
            return head + (try handle.readToEnd() ?? Data())
        } catch let error as RephotoError {
            throw error
        } catch {
            throw RephotoError.badInput("\(path): cannot read file (\(fileErrorReason(error)))")
        }
    }

    /// Refuses bytes whose first bytes are no supported format's signature, without decoding anything: a
    /// service checks an upload this way before spending work on the rest of a request.
    public static func checkSignature(_ data: Data) throws {
        try data.prefix(16).withUnsafeBytes { raw in
            try shimCall { rp_image_check_signature(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, UInt64(data.count), $0) }
        }
    }

    public var size: ImageSize { ImageSize(width: width, height: height) }

    public func grayscale() throws -> Image {
        var out: OpaquePointer?
        try shimCall { rp_image_to_gray(handle, &out, $0) }
        return Image(handle: out!)
    }

    public enum EncodedFormat: Sendable {
        case png
        case jpeg(quality: Int)
    }

    public func encoded(as format: EncodedFormat) throws -> Data {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        let (ext, quality): (String, Int32) = switch format {
        case .png: (".png", 0)
        case .jpeg(let q): (".jpg", Int32(min(max(q, 0), 100)))
        }
        try shimCall { rp_image_encode(handle, ext, quality, &bytes, &length, $0) }
        defer { rp_buffer_free(bytes) }
        return Data(bytes: bytes!, count: length)
    }

    public func write(to path: String, format: EncodedFormat = .png) throws {
        // Foundation says only "NSCocoaErrorDomain error 512" for a folder in the way.
        var directory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &directory), directory.boolValue {
            throw RephotoError.badInput("\(path): cannot write image (a folder is in the way)")
        }
        let data = try encoded(as: format)
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw RephotoError.badInput("\(path): cannot write image (\(fileErrorReason(error)))")
        }
    }

    /// Tightly packed pixel bytes, rows top to bottom, BGR order for colour.
    public func pixels() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * channels)
        let capacity = out.count
        try out.withUnsafeMutableBufferPointer { buffer in
            try shimCall { rp_image_copy_pixels(handle, buffer.baseAddress, capacity, $0) }
        }
        return out
    }

    /// The image warped by a homography (this image's pixels -> output pixels).
    public func warped(by homography: Matrix3, width: Int, height: Int) throws -> Image {
        var out: OpaquePointer?
        let (w, h) = (try cInt(width, "width"), try cInt(height, "height"))
        try homography.elements.withUnsafeBufferPointer { matrix in
            try shimCall { rp_image_warp_perspective(handle, matrix.baseAddress, w, h, &out, $0) }
        }
        return Image(handle: out!)
    }

    public func resized(width: Int, height: Int) throws -> Image {
        var out: OpaquePointer?
        let (w, h) = (try cInt(width, "width"), try cInt(height, "height"))
        try shimCall { rp_image_resize(handle, w, h, &out, $0) }
        return Image(handle: out!)
    }
}
