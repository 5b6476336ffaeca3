import Foundation
import RephotoShim

/// Keypoints and descriptors of one image. Immutable, so one instance can be matched from several
/// threads at once: compute a reference frame's features once and match every current frame against it.
public final class Features: @unchecked Sendable {
    package let handle: OpaquePointer
    public let keypoints: [Keypoint]
    public let imageSize: ImageSize
    public let config: FeatureConfig
    /// Scale of the image detection ran on relative to the original (1 = full resolution).
    public let analysisScale: Double
    public let isBinary: Bool
    public let descriptorBytes: Int
    /// How long detecting these took (0 when read back from a saved form): a run that reuses them (a tuning
    /// sweep's cache) still reports what the configuration costs.
    public let detectMilliseconds: Double

    /// Detects and describes features. `mask` (8-bit single-channel, image size) keeps features where non-zero.
    public convenience init(image: Image, config: FeatureConfig, mask: Image? = nil) throws {
        try config.validate()
        var params = try config.shimParameters()
        if let mask, mask.width != image.width || mask.height != image.height || mask.channels != 1 {
            throw RephotoError.badInput("mask is \(mask.width)x\(mask.height) with \(mask.channels) channels, expected \(image.width)x\(image.height) with 1 channel")
        }
        var out: OpaquePointer?
        let start = ContinuousClock.now
        try shimCall { rp_features_detect(image.handle, &params, mask?.handle, &out, $0) }
        try self.init(handle: out!, config: config, detectMilliseconds: milliseconds(since: start))
    }

    /// Takes ownership of `detected` (freed here if reading it fails).
    private init(handle detected: OpaquePointer, config: FeatureConfig, detectMilliseconds: Double = 0) throws {
        let count = Int(rp_features_count(detected))
        var raw = [rp_keypoint](repeating: rp_keypoint(), count: count)
        do {
            try raw.withUnsafeMutableBufferPointer { buffer in
                try shimCall { rp_features_keypoints(detected, buffer.baseAddress, Int32(truncatingIfNeeded: count), $0) }
            }
        } catch {
            rp_features_free(detected)
            throw error
        }
        handle = detected
        keypoints = raw.map {
            Keypoint(x: Double($0.x), y: Double($0.y), size: Double($0.size), angle: Double($0.angle),
                     response: Double($0.response), octave: Int($0.octave))
        }
        imageSize = ImageSize(width: Int(rp_features_image_width(detected)), height: Int(rp_features_image_height(detected)))
        self.config = config
        analysisScale = rp_features_analysis_scale(detected)
        isBinary = rp_features_is_binary(detected) != 0
        descriptorBytes = Int(rp_features_descriptor_bytes(detected))
        self.detectMilliseconds = detectMilliseconds
    }

    deinit { rp_features_free(handle) }

    // MARK: saving (a reference store)

    private static let magic = Data("RPFEAT01".utf8)

    /// A compact binary form: header, keypoints, descriptor rows. Read back with `init(serialized:config:)`
    /// under the same feature settings.
    public func serialized() throws -> Data {
        var out = Self.magic
        func append<T>(_ value: T) { withUnsafeBytes(of: value) { out.append(contentsOf: $0) } }
        append(Int32(imageSize.width)); append(Int32(imageSize.height)); append(analysisScale)
        append(Int32(rp_features_norm(handle))); append(Int32(isBinary ? 1 : 0))
        append(Int32(count)); append(Int32(descriptorBytes))
        for k in keypoints {
            append(Float(k.x)); append(Float(k.y)); append(Float(k.size)); append(Float(k.angle)); append(Float(k.response)); append(Int32(k.octave))
        }
        var descriptors = [UInt8](repeating: 0, count: count * descriptorBytes)
        let capacity = descriptors.count
        try descriptors.withUnsafeMutableBufferPointer { buffer in
            try shimCall { rp_features_copy_descriptors(handle, buffer.baseAddress, capacity, $0) }
        }
        out.append(contentsOf: descriptors)
        return out
    }

    /// Features saved by `serialized()`; anything damaged or inconsistent is refused as bad input.
    /// `detectMilliseconds`: what detecting them took when they were made, when known.
    public convenience init(serialized data: Data, config: FeatureConfig, detectMilliseconds: Double = 0) throws {
        let bytes = [UInt8](data)
        var at = Self.magic.count
        guard bytes.count >= at + 32, Data(bytes.prefix(at)) == Self.magic else { throw RephotoError.badInput("not saved features") }
        func read<T: FixedWidthInteger>(_: T.Type) throws -> T {
            guard at + MemoryLayout<T>.size <= bytes.count else { throw RephotoError.badInput("saved features are cut short") }
            defer { at += MemoryLayout<T>.size }
            return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: T.self) }
        }
        func readFloat() throws -> Float { Float(bitPattern: try read(UInt32.self)) }
        let width = try read(Int32.self), height = try read(Int32.self)
        let scale = Double(bitPattern: try read(UInt64.self))
        let norm = try read(Int32.self), binary = try read(Int32.self), count = try read(Int32.self), descriptorBytes = try read(Int32.self)
        guard count >= 0, count <= 10_000_000, descriptorBytes >= 0, descriptorBytes <= 4096,
              bytes.count == at + Int(count) * 24 + Int(count) * Int(descriptorBytes) else {
            throw RephotoError.badInput("saved features have an inconsistent length")
        }
        var keypoints: [rp_keypoint] = []
        keypoints.reserveCapacity(Int(count))
        for _ in 0..<count {
            keypoints.append(rp_keypoint(x: try readFloat(), y: try readFloat(), size: try readFloat(), angle: try readFloat(),
                                         response: try readFloat(), octave: try read(Int32.self)))
        }
        let descriptors = Array(bytes[at...])
        var out: OpaquePointer?
        try keypoints.withUnsafeBufferPointer { k in
            try descriptors.withUnsafeBufferPointer { d in
                try shimCall { rp_features_create(k.baseAddress, count, d.baseAddress, d.count, descriptorBytes, binary, norm, width, height, scale, &out, $0) }
            }
        }
        try self.init(handle: out!, config: config, detectMilliseconds: detectMilliseconds)
    }

    public var count: Int { keypoints.count }
}
