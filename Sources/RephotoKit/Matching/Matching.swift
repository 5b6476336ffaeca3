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

extension Matcher {
    /// Matches guided by a first model: each current keypoint against the reference keypoints within `radius`
    /// reference pixels of where `homography` (reference to current) puts it, Lowe's `ratio` taken among those only.
    public static func guided(reference: Features, current: Features, homography: Matrix3, radius: Double, ratio: Double) throws -> Correspondences {
        var params = rp_guided_params(radius_pixels: radius, ratio: ratio)
        var raw: UnsafeMutablePointer<rp_match>?
        var count: Int32 = 0
        let h = homography.elements
        try shimCall { rp_match_guided(reference.handle, current.handle, h, &params, &raw, &count, $0) }
        defer { rp_buffer_free(raw) }
        return Correspondences(UnsafeBufferPointer(start: raw, count: Int(count)), reference: reference, current: current)
    }
}
