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

    /// Detects and describes features. `mask` (8-bit single-channel, image size) keeps features where non-zero.
    public init(image: Image, config: FeatureConfig, mask: Image? = nil) throws {
        try config.validate()
        var params = try config.shimParameters()
        if let mask, mask.width != image.width || mask.height != image.height || mask.channels != 1 {
            throw RephotoError.badInput("mask is \(mask.width)x\(mask.height) with \(mask.channels) channels, expected \(image.width)x\(image.height) with 1 channel")
        }
        var out: OpaquePointer?
        try shimCall { rp_features_detect(image.handle, &params, mask?.handle, &out, $0) }
        let detected = out!
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
        imageSize = image.fullSize
        self.config = config
        analysisScale = rp_features_analysis_scale(detected)
        isBinary = rp_features_is_binary(detected) != 0
        descriptorBytes = Int(rp_features_descriptor_bytes(detected))
    }

    deinit { rp_features_free(handle) }

    public var count: Int { keypoints.count }
}
