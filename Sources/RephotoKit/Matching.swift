import CShims

/// One correspondence between a reference keypoint and a current keypoint.
public struct Match: Equatable, Sendable {
    public var referenceIndex: Int
    public var currentIndex: Int
    public var distance: Double
}

/// Matched point pairs, in full-resolution pixels of each image.
public struct Correspondences: Sendable {
    public var matches: [Match]
    public var reference: [Point2]
    public var current: [Point2]

    public var count: Int { reference.count }

    /// Flat x,y arrays as the shim wants them.
    var referenceXY: [Double] { reference.flatMap { [$0.x, $0.y] } }
    var currentXY: [Double] { current.flatMap { [$0.x, $0.y] } }
}

/// A FLANN index over a reference's descriptors, built once and searched for every current frame
/// (read-only while searching, so shared across threads).
public final class MatchIndex: @unchecked Sendable {
    let handle: OpaquePointer
    let features: Features

    public init(reference: Features, config: MatchConfig) throws {
        try config.validate()
        var params = config.shimParameters
        var out: OpaquePointer?
        try shimCall { rp_match_index_create(reference.handle, &params, &out, $0) }
        handle = out!
        features = reference
    }

    deinit { rp_match_index_free(handle) }
}

public enum Matcher {
    /// Matches current features against reference features; with `index` (FLANN) the reference side is prebuilt.
    public static func match(reference: Features, current: Features, config: MatchConfig, index: MatchIndex? = nil) throws -> Correspondences {
        try config.validate()
        var params = config.shimParameters
        var raw: UnsafeMutablePointer<rp_match>?
        var count: Int32 = 0
        if let index, config.matcher == .flann, index.features === reference {
            try shimCall { rp_match_index_match(index.handle, current.handle, &params, &raw, &count, $0) }
        } else {
            try shimCall { rp_match_features(reference.handle, current.handle, &params, &raw, &count, $0) }
        }
        defer { rp_buffer_free(raw) }
        let buffer = UnsafeBufferPointer(start: raw, count: Int(count))
        let matches = buffer.map { Match(referenceIndex: Int($0.reference_index), currentIndex: Int($0.current_index), distance: Double($0.distance)) }
        return Correspondences(
            matches: matches,
            reference: matches.map { reference.keypoints[$0.referenceIndex].point },
            current: matches.map { current.keypoints[$0.currentIndex].point })
    }
}
