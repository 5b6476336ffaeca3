import Foundation

/// Decoded images and their features, keyed by the encoded bytes (compared in full, not by a digest) and
/// the feature settings, which include the analysis scale. `rephoto tune` shares one across trials, so a
/// trial that changes only matching or estimation parameters detects nothing again.
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
    private var detected = 0, reused = 0, held = 0
    /// Bytes the cache may hold (keys, pixels, keypoints and descriptors); past it, new entries are computed
    /// and returned but not kept, so a sweep over more images than fit still runs, only slower.
    public let maxBytes: Int

    public init(maxBytes: Int = 2 << 30) {
        self.maxBytes = maxBytes
    }

    /// Detections run (cache misses) and entries served again (hits).
    public var counts: (detections: Int, reuses: Int) { lock.withLock { (detected, reused) } }

    /// The cached entry for these bytes and settings, or `make`'s, stored. Two threads missing the same key
    /// at once both run `make`; the evaluator never asks for one image twice at the same time.
    public func entry(bytes: Data, config: FeatureConfig, make: () throws -> Entry) throws -> Entry {
        if let hit = lock.withLock({ () -> Entry? in
            let found = stores.first { $0.config == config }?.entries[bytes]
            if found != nil { reused += 1 }
            return found
        }) {
            return hit
        }
        let made = try make()
        let size = bytes.count + made.image.width * made.image.height * made.image.channels
            + made.features.count * (made.features.descriptorBytes + 40)
        lock.withLock {
            detected += 1
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
