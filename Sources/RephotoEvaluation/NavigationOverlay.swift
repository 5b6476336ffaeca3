import RephotoKit
import RephotoData
import RephotoShimTools

/// Draws what a user would see: the target rectangle (green), the navigation quadrilateral (red)
/// and the inlier matches as lines from their reference to their current position (yellow).
public enum NavigationOverlay {
    public static func draw(on image: Image, result: PoseResult) throws -> Image {
        let target = result.navigation.target.corners.flatMap { [$0.x, $0.y] }
        let quad = result.navigation.quadrilateral.corners.flatMap { [$0.x, $0.y] }
        let inliers = result.inlierPairs
        let a = inliers.reference.flatMap { [$0.x, $0.y] }, b = inliers.current.flatMap { [$0.x, $0.y] }
        var out: OpaquePointer?
        let n = try cInt(inliers.reference.count, "inlier count")
        try shimCall { rp_draw_navigation(image.handle, target, quad, a, b, n, &out, $0) }
        return Image(handle: out!)
    }
}
