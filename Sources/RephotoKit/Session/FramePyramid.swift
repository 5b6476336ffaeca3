import RephotoShim

/// A frame's Lucas-Kanade pyramid, built once and tracked from by the next frame (`GuidanceSession`).
public final class FramePyramid: @unchecked Sendable {
    let handle: OpaquePointer
    /// The full-resolution size of the frame it was built from.
    public let size: ImageSize

    public init(_ image: Image, config: TrackingConfig) throws {
        var params = config.shimParameters
        var out: OpaquePointer?
        try shimCall { rp_pyramid_build(image.handle, &params, &out, $0) }
        handle = out!
        size = image.fullSize
    }

    deinit { rp_pyramid_free(handle) }

    /// Where `points` (full-resolution pixels of this pyramid's frame) are in `next`'s frame; nil for points lost or
    /// failing the forward-backward check.
    public func track(_ points: [Point2], to next: FramePyramid, config: TrackingConfig) throws -> [Point2?] {
        guard !points.isEmpty else { return [] }
        var params = config.shimParameters
        let n = try cInt(points.count, "tracked point count")
        let from = Correspondences.flat(points, order: nil)
        var to = [Double](repeating: 0, count: 2 * points.count)
        var tracked = [UInt8](repeating: 0, count: points.count)
        try shimCall { rp_track_points(handle, next.handle, from, n, &params, &to, to.count, &tracked, tracked.count, nil, 0, $0) }
        return points.indices.map { tracked[$0] != 0 ? Point2(x: to[2 * $0], y: to[2 * $0 + 1]) : nil }
    }
}

/// Lucas-Kanade settings of a session (`session.track*` in the registry).
public struct TrackingConfig: Equatable, Sendable {
    /// The search window reaches this many pixels either side of a point.
    public var halfWindow: Int = ParameterRegistry.defaultValue(\.session.tracking.halfWindow)
    public var levels: Int = ParameterRegistry.defaultValue(\.session.tracking.levels)
    public var maxForwardBackward: Double = ParameterRegistry.defaultValue(\.session.tracking.maxForwardBackward)

    public init() {}

    var shimParameters: rp_track_params {
        rp_track_params(window: Int32(2 * halfWindow + 1), levels: Int32(levels), max_iterations: 30, epsilon: 0.01, max_forward_backward: maxForwardBackward)
    }
}
