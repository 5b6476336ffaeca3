import RephotoShim

/// A FLANN index over a reference's descriptors, built once and searched for every current frame
/// (read-only while searching, so shared across threads). The shim's index holds its own reference to the
/// descriptors; `features` is kept so matching can check it is used with the reference it was built from.
public final class MatchIndex: @unchecked Sendable {
    let handle: OpaquePointer
    let features: Features
    let config: MatchConfig

    public init(reference: Features, config: MatchConfig) throws {
        try config.validate()
        var params = try config.shimParameters()
        var out: OpaquePointer?
        try shimCall { rp_match_index_create(reference.handle, &params, &out, $0) }
        handle = out!
        features = reference
        self.config = config
    }

    deinit { rp_match_index_free(handle) }
}
