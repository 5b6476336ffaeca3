import RephotoShim

/// Descriptor matching between a reference and a current frame.
public enum Matcher {
    /// Matches current features against reference features; with `index` (built for `reference` with the same
    /// settings) the reference side of a FLANN search is prebuilt. `kernel` picks the Hamming kernel of brute
    /// force (all give the same matches; for tests and benchmarks).
    public static func match(reference: Features, current: Features, config: MatchConfig, index: MatchIndex? = nil,
                             kernel: HammingKernel = .auto) throws -> Correspondences {
        try config.validate()
        var params = try config.shimParameters(kernel: kernel)
        var raw: UnsafeMutablePointer<rp_match>?
        var count: Int32 = 0
        if let index, index.features === reference, index.config == config {
            try shimCall { rp_match_index_match(index.handle, current.handle, &params, &raw, &count, $0) }
        } else {
            try shimCall { rp_match_features(reference.handle, current.handle, &params, &raw, &count, $0) }
        }
        defer { rp_buffer_free(raw) }
        return Correspondences(UnsafeBufferPointer(start: raw, count: Int(count)), reference: reference, current: current)
    }
}
