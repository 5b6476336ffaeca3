import Foundation

/// The searches after detection, remembered across runs that differ in their settings (`rephoto tune`): the
/// neighbour search of each pair of features, and the homography and essential-matrix searches of each set of
/// correspondences. Correspondences are named by what made them (the two features and the matching settings),
/// and every key holds each setting its stage reads, so a hit returns exactly what running the stage again
/// would: a trial that changes only the ratio searches no descriptors again, one that changes only the
/// homography threshold runs no essential search again, one that changes only the gate runs no search at all.
/// Each result keeps the time it took, which a hit reports again, so a configuration's time per frame is its
/// own cost however much of it was remembered. A key holds its features, so their identities cannot pass to
/// other features while the cache remembers them.
public final class StageCache: @unchecked Sendable {
    /// The correspondences of one pair of features under one matching configuration.
    public struct PairsKey: Hashable, @unchecked Sendable {
        let reference: Features
        let current: Features
        let matching: MatchConfig
        /// An old photo's epipolar pass (`EpipolarGuidance`): the threshold and least inliers it ran with.
        let epipolar: [Double]

        public init(reference: Features, current: Features, matching: MatchConfig, epipolar: [Double] = []) {
            self.reference = reference
            self.current = current
            self.matching = matching
            self.epipolar = epipolar
        }

        public static func == (a: PairsKey, b: PairsKey) -> Bool {
            a.reference === b.reference && a.current === b.current && a.matching == b.matching && a.epipolar == b.epipolar
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(ObjectIdentifier(reference))
            hasher.combine(ObjectIdentifier(current))
            hasher.combine(matching)
            hasher.combine(epipolar)
        }
    }

    private struct HomographyKey: Hashable {
        let pairs: PairsKey
        let config: RobustConfig
    }

    private struct EssentialKey: Hashable {
        let pairs: PairsKey
        let settings: RelativePose.SearchSettings
        let referenceCamera: CameraIntrinsics
        let currentCamera: CameraIntrinsics
    }

    /// A result and the milliseconds it took to compute.
    public typealias Timed<T> = (value: T, milliseconds: Double)

    private let lock = NSLock()
    private var neighbours: [PairsKey: Timed<Neighbours>] = [:]
    private var homographies: [HomographyKey: Timed<Result<HomographyEstimate, RephotoError>>] = [:]
    private var essentials: [EssentialKey: Timed<RelativePose.SearchOutcome>] = [:]
    /// Features a stored key holds, counted once each: nothing is evicted, so they stay as long as the cache.
    private var retained: Set<ObjectIdentifier> = []
    private var held = 0
    private var computed = 0, reused = 0
    /// Bytes the remembered results and the features their keys hold may take; past it, results are computed
    /// and returned but not kept.
    public let maxBytes: Int

    public init(maxBytes: Int = 1 << 30) {
        self.maxBytes = maxBytes
    }

    /// Searches run (misses) and results served again (hits), over the three stages.
    public var counts: (runs: Int, reuses: Int) { lock.withLock { (computed, reused) } }

    /// The neighbour search between these features under `config` (its ratio aside).
    public func neighbours(reference: Features, current: Features, config: MatchConfig, index: MatchIndex?) throws -> Timed<Neighbours> {
        let key = PairsKey(reference: reference, current: current, matching: config.ignoringRatio)
        if let hit = lookup({ neighbours[key] }) { return hit }
        let start = ContinuousClock.now
        let made = (try Neighbours(reference: reference, current: current, config: config, index: index), milliseconds(since: start))
        store(made.0.bytes, holding: key) { neighbours[key] = made }
        return made
    }

    /// The robust homography of `pairs` (made by `key`) under `config`.
    public func homography(_ pairs: Correspondences, key: PairsKey, config: RobustConfig) throws -> Timed<HomographyEstimate> {
        let slot = HomographyKey(pairs: key, config: config)
        if let hit = lookup({ homographies[slot] }) { return (try hit.value.get(), hit.milliseconds) }
        let start = ContinuousClock.now
        let result: Result<HomographyEstimate, RephotoError>
        do {
            result = .success(try HomographyEstimate.estimate(pairs, config: config))
        } catch {
            result = .failure(RephotoError.wrapping(error))
        }
        let made = (result, milliseconds(since: start))
        store(pairs.count + 128, holding: key) { homographies[slot] = made }
        return (try result.get(), made.1)
    }

    /// The essential-matrix search of `pairs` (made by `key`) with these settings and cameras.
    public func essential(_ pairs: Correspondences, key: PairsKey, referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                          settings: RelativePose.SearchSettings) -> Timed<RelativePose.SearchOutcome> {
        let slot = EssentialKey(pairs: key, settings: settings, referenceCamera: referenceCamera, currentCamera: currentCamera)
        if let hit = lookup({ essentials[slot] }) { return hit }
        let start = ContinuousClock.now
        let made = (RelativePose.search(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera, settings: settings),
                    milliseconds(since: start))
        store(pairs.count + 512, holding: key) { essentials[slot] = made }
        return made
    }

    private func lookup<T>(_ find: () -> T?) -> T? {
        lock.withLock {
            let found = find()
            if found != nil { reused += 1 }
            return found
        }
    }

    /// Keeps a result of `size` bytes whose key holds `key`'s features, when the budget allows both.
    private func store(_ size: Int, holding key: PairsKey, _ keep: () -> Void) {
        lock.withLock {
            computed += 1
            var newcomers: [Features] = []
            for f in [key.reference, key.current] where !retained.contains(ObjectIdentifier(f)) && !newcomers.contains(where: { $0 === f }) {
                newcomers.append(f)
            }
            let features = newcomers.reduce(0) { $0 + $1.count * ($1.descriptorBytes + 40) }
            guard held + size + features <= maxBytes else { return }
            held += size + features
            for f in newcomers { retained.insert(ObjectIdentifier(f)) }
            keep()
        }
    }
}
