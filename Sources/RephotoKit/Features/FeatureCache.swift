import Foundation

/// Decoded images and their features, keyed by the encoded bytes (compared in full, not by a digest) and
/// the feature settings, which include the analysis scale. `rephoto tune` shares one across trials, so a
/// trial that changes only matching or estimation parameters detects nothing again. With a `disk` layer,
/// features also outlive the process (`rephoto tune --cache DIR`): a later run decodes the image but does not
/// detect again.
public final class FeatureCache: @unchecked Sendable {
    public struct Entry: Sendable {
        public let image: Image
        public let features: Features

        public init(image: Image, features: Features) {
            self.image = image
            self.features = features
        }
    }

    private let lock = NSLock()
    private var stores: [(config: FeatureConfig, entries: [Data: Entry])] = []
    private var detected = 0, reused = 0, loaded = 0, held = 0
    /// Bytes the cache may hold (keys, pixels, keypoints and descriptors); past it, new entries are computed
    /// and returned but not kept, so a sweep over more images than fit still runs, only slower.
    public let maxBytes: Int
    public let disk: FeatureCacheDisk?

    public init(maxBytes: Int = 2 << 30, disk: FeatureCacheDisk? = nil) {
        self.maxBytes = maxBytes
        self.disk = disk
    }

    /// Detections run, entries served again from memory, and features read from the disk layer.
    public var counts: (detections: Int, reuses: Int, loaded: Int) { lock.withLock { (detected, reused, loaded) } }

    /// The cached entry for these bytes and settings, or one made by `decode` and `detect`, stored. Two threads
    /// missing the same key at once both make it; the evaluator never asks for one image twice at the same time.
    public func entry(bytes: Data, config: FeatureConfig, decode: () throws -> Image,
                      detect: (Image) throws -> Features) throws -> Entry {
        if let hit = lock.withLock({ () -> Entry? in
            let found = stores.first { $0.config == config }?.entries[bytes]
            if found != nil { reused += 1 }
            return found
        }) {
            return hit
        }
        let image = try decode()
        let features: Features
        if let saved = disk?.features(bytes: bytes, config: config) {
            features = saved
            lock.withLock { loaded += 1 }
        } else {
            features = try detect(image)
            lock.withLock { detected += 1 }
            disk?.store(features, bytes: bytes, config: config)
        }
        let made = Entry(image: image, features: features)
        let size = bytes.count + image.width * image.height * image.channels + features.count * (features.descriptorBytes + 40)
        lock.withLock {
            guard held + size <= maxBytes else { return }
            held += size
            if let i = stores.firstIndex(where: { $0.config == config }) {
                stores[i].entries[bytes] = made
            } else {
                stores.append((config, [bytes: made]))
            }
        }
        return made
    }
}

/// Where a `FeatureCache` keeps features between runs. Reads that fail for any reason are misses, and
/// writes that fail are skipped: a cache never stops the work it speeds up.
public protocol FeatureCacheDisk: Sendable {
    func features(bytes: Data, config: FeatureConfig) -> Features?
    func store(_ features: Features, bytes: Data, config: FeatureConfig)
}
