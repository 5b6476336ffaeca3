import Foundation

/// Alignment metrics of a frame pair, computed on the homography inliers (or, when the homography is too weak
/// to trust and an accepted pose is, on the essential inliers).
public struct Metrics: Codable, Equatable, Sendable {
    /// Which verified correspondences the displacements (AFD, score, percent) average over.
    public enum Basis: String, Codable, Sendable {
        case homographyInliers, essentialInliers
    }

    public var inliersHomography: Int
    /// Homography inliers / matches.
    public var inlierRatio: Double
    /// Mean displacement of inlier points between the frames (AFD), current-frame pixels.
    public var afdPixels: Double
    /// Shi et al.: 100 − AFD measured at a 480-pixel-wide rendition, clamped to 0...100.
    public var score: Double
    /// Plsek: mean displacement with both frames scaled to 100 x 100, percent.
    public var displacementPercent: Double
    /// RMS of ||H a − b|| over homography inliers, current-frame pixels.
    public var homographyRmsPixels: Double
    /// RMS Sampson error over essential inliers, pixels; nil without a pose.
    public var sampsonRmsPixels: Double?
    public var displacementOf: Basis

    /// Width of the rendition the Shi score is defined on.
    public static let scoreWidth = 480.0

    /// Reference points are first scaled to the current frame's size, so frames of different
    /// resolutions compare (identical framing gives zero displacement).
    /// `essentialInliers`, when given, replaces the homography's inliers for the displacements: a homography
    /// with too few inliers may rest on mismatches, the accepted pose's inliers passed its gate.
    /// `referenceOrigin`: where the part of the reference that `referenceSize` measures begins (a scanned print's
    /// photo inside its border); its points are compared from there.
    public static func compute(pairs: Correspondences, homography: HomographyEstimate, referenceSize: ImageSize,
                               referenceOrigin: Point2 = Point2(x: 0, y: 0), currentSize: ImageSize, sampsonRmsPixels: Double?,
                               essentialInliers: [Bool]? = nil) -> Metrics {
        let selected = essentialInliers ?? homography.inliers
        let sx = Double(currentSize.width) / Double(referenceSize.width)
        let sy = Double(currentSize.height) / Double(referenceSize.height)
        var afd = 0.0, percent = 0.0, squared = 0.0
        var n = 0
        for i in 0..<pairs.count where selected[i] {
            let a = Point2(x: pairs.reference[i].x - referenceOrigin.x, y: pairs.reference[i].y - referenceOrigin.y), b = pairs.current[i]
            let scaled = Point2(x: (a.x + 0.5) * sx - 0.5, y: (a.y + 0.5) * sy - 0.5)
            afd += scaled.distance(to: b)
            let pa = Point2(x: a.x / Double(referenceSize.width) * 100, y: a.y / Double(referenceSize.height) * 100)
            let pb = Point2(x: b.x / Double(currentSize.width) * 100, y: b.y / Double(currentSize.height) * 100)
            percent += pa.distance(to: pb)
            n += 1
        }
        // The transfer error is the homography's own quality: over its inliers, whatever the displacements used.
        var transferred = 0
        for i in 0..<pairs.count where homography.inliers[i] {
            let e = homography.matrix.project(pairs.reference[i]).distance(to: pairs.current[i])
            squared += e * e
            transferred += 1
        }
        let count = Double(max(n, 1))
        afd /= count
        let score = min(100, max(0, 100 - afd * scoreWidth / Double(currentSize.width)))
        let inliers = homography.inliers.filter { $0 }.count
        return Metrics(
            inliersHomography: inliers, inlierRatio: pairs.count > 0 ? Double(inliers) / Double(pairs.count) : 0,
            afdPixels: afd, score: score, displacementPercent: percent / count,
            homographyRmsPixels: (squared / Double(max(transferred, 1))).squareRoot(), sampsonRmsPixels: sampsonRmsPixels,
            displacementOf: essentialInliers == nil ? .homographyInliers : .essentialInliers)
    }
}
