import Foundation
import RephotoKit
import RephotoData
import RephotoShimTools

/// Draws what a user would see: the target rectangle (green), the navigation quadrilateral (red) and the inlier
/// matches as lines from their reference to their current position (yellow), with a legend saying so. When the
/// pose could not be estimated, the tentative matches instead, and a caption saying why.
public enum NavigationOverlay {
    static let green: [UInt8] = [0, 200, 0], red: [UInt8] = [0, 0, 255], yellow: [UInt8] = [0, 220, 255]

    /// `legend: false` for thumbnails, too small to read one: the report says the colours beside them.
    public static func draw(on image: Image, result: PoseResult, legend withLegend: Bool = true) throws -> Image {
        let target = result.navigation.target.corners.flatMap { [$0.x, $0.y] }
        let quad = result.navigation.quadrilateral.corners.flatMap { [$0.x, $0.y] }
        let inliers = result.inlierPairs
        let drawn = try lines(on: image, target: target, quadrilateral: quad, reference: inliers.reference, current: inliers.current)
        guard withLegend else { return drawn }
        return try legend(on: drawn, [("target: where the reference view belongs", green), ("the reference view in this frame", red),
                                      ("\(inliers.reference.count) inlier matches, line from the reference position", yellow)], caption: nil)
    }

    /// The frame a pose could not be estimated for: `matches` (tentative, none accepted) and `reason` as a caption.
    public static func drawFailure(on image: Image, matches: Correspondences?, reason: String) throws -> Image {
        let drawn = try lines(on: image, target: nil, quadrilateral: nil, reference: matches?.reference ?? [], current: matches?.current ?? [])
        let what = matches.map { "\($0.count) tentative matches (none accepted), line from the reference position" } ?? "no matches (features could not be matched)"
        return try legend(on: drawn, [(what, yellow)], caption: "could not estimate: " + reason)
    }

    static func lines(on image: Image, target: [Double]?, quadrilateral: [Double]?, reference: [Point2], current: [Point2]) throws -> Image {
        let a = reference.flatMap { [$0.x, $0.y] }, b = current.flatMap { [$0.x, $0.y] }
        var out: OpaquePointer?
        let n = try cInt(reference.count, "match count")
        try shimCall { rp_draw_navigation(image.handle, target, quadrilateral, a, b, n, &out, $0) }
        return Image(handle: out!)
    }

    static func legend(on image: Image, _ entries: [(String, [UInt8])], caption: String?) throws -> Image {
        let colors = entries.flatMap(\.1)
        var out: OpaquePointer?
        let count = try cInt(entries.count, "legend entries")
        try withCStrings(entries.map(\.0)) { labels in
            try shimCall { rp_draw_legend(image.handle, labels, colors, count, caption, &out, $0) }
        }
        return Image(handle: out!)
    }

    /// C strings for the duration of `body`.
    private static func withCStrings(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> Void) throws {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        try body(copies.map { UnsafePointer($0) })
    }
}
