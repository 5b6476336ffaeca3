import RephotoShim

/// The candidates matching chooses from, searched once: the two nearest reference descriptors of every current
/// descriptor and, when searched for the mutual check, the nearest current descriptor of every reference one.
/// Filtering them gives exactly `Matcher.match`'s correspondences for any ratio, so a sweep over the ratio (a
/// `StageCache`) searches each pair of images once. Immutable: several threads may filter one at once.
public final class Neighbours: @unchecked Sendable {
    let handle: OpaquePointer
    /// The features they were searched between, kept so filtering reads the right keypoints.
    public let reference: Features
    public let current: Features
    /// With the reverse search: the mutual check can be applied.
    public let mutual: Bool
    /// Memory the candidate lists hold.
    public let bytes: Int

    /// Searches `current` against `reference` with `config`'s matcher (its ratio is not used here).
    public init(reference: Features, current: Features, config: MatchConfig, index: MatchIndex? = nil) throws {
        try config.validate()
        var params = try config.shimParameters()
        var out: OpaquePointer?
        var size = 0
        let usable = index.flatMap { $0.features === reference ? $0 : nil }
        try shimCall { rp_neighbours_compute(reference.handle, current.handle, &params, usable?.handle, &out, &size, $0) }
        handle = out!
        self.reference = reference
        self.current = current
        mutual = config.mutual
        bytes = size
    }

    deinit { rp_neighbours_free(handle) }

    /// The correspondences `Matcher.match` gives with this ratio and mutual check.
    public func filter(ratio: Double, mutual: Bool) throws -> Correspondences {
        var raw: UnsafeMutablePointer<rp_match>?
        var count: Int32 = 0
        try shimCall { rp_neighbours_filter(handle, Float(ratio), mutual ? 1 : 0, &raw, &count, $0) }
        defer { rp_buffer_free(raw) }
        return Correspondences(UnsafeBufferPointer(start: raw, count: Int(count)), reference: reference, current: current)
    }
}
