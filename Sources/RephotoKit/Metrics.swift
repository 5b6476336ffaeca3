import Foundation

/// Alignment metrics of a frame pair, computed on the homography inliers.
public struct Metrics: Codable, Equatable, Sendable {
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

    /// Width of the rendition the Shi score is defined on.
    public static let scoreWidth = 480.0

    /// Reference points are first scaled to the current frame's size, so frames of different
    /// resolutions compare (identical framing gives zero displacement).
    public static func compute(pairs: Correspondences, homography: HomographyEstimate, referenceSize: ImageSize,
                               currentSize: ImageSize, sampsonRmsPixels: Double?) -> Metrics {
        let sx = Double(currentSize.width) / Double(referenceSize.width)
        let sy = Double(currentSize.height) / Double(referenceSize.height)
        var afd = 0.0, percent = 0.0, squared = 0.0
        var n = 0
        for i in 0..<pairs.count where homography.inliers[i] {
            let a = pairs.reference[i], b = pairs.current[i]
            let scaled = Point2(x: (a.x + 0.5) * sx - 0.5, y: (a.y + 0.5) * sy - 0.5)
            afd += scaled.distance(to: b)
            let pa = Point2(x: a.x / Double(referenceSize.width) * 100, y: a.y / Double(referenceSize.height) * 100)
            let pb = Point2(x: b.x / Double(currentSize.width) * 100, y: b.y / Double(currentSize.height) * 100)
            percent += pa.distance(to: pb)
            let e = homography.matrix.project(a).distance(to: b)
            squared += e * e
            n += 1
        }
        let count = Double(max(n, 1))
        afd /= count
        let score = min(100, max(0, 100 - afd * scoreWidth / Double(currentSize.width)))
        return Metrics(
            inliersHomography: n, inlierRatio: pairs.count > 0 ? Double(n) / Double(pairs.count) : 0,
            afdPixels: afd, score: score, displacementPercent: percent / count,
            homographyRmsPixels: (squared / count).squareRoot(), sampsonRmsPixels: sampsonRmsPixels)
    }
}

/// Known truth for a pair, in the conventions of background.md.
public struct GroundTruth: Codable, Equatable, Sendable {
    /// X_current = R X_reference + t.
    public var rotation: Matrix3?
    /// Direction only; nil when undetermined (pure rotation).
    public var translation: SIMD3<Double>?
    /// Reference pixels -> current pixels.
    public var homography: Matrix3?

    public init(rotation: Matrix3? = nil, translation: SIMD3<Double>? = nil, homography: Matrix3? = nil) {
        self.rotation = rotation
        self.translation = translation
        self.homography = homography
    }
}

/// Errors against a ground truth; each nil when the truth or the estimate is missing.
public struct GroundTruthErrors: Codable, Equatable, Sendable {
    /// Angle of R_est^T R_gt, degrees.
    public var rotationErrorDegrees: Double?
    /// arccos(|t_est · t_gt|), degrees (sign-agnostic).
    public var translationErrorDegrees: Double?
    /// Mean distance between the reference image corners mapped by H_est and by H_gt, current pixels.
    public var cornerErrorPixels: Double?

    public static func compute(truth: GroundTruth, rotation: Matrix3?, translation: SIMD3<Double>?,
                               homography: Matrix3?, referenceSize: ImageSize) -> GroundTruthErrors {
        var errors = GroundTruthErrors()
        if let gt = truth.rotation, let est = rotation {
            errors.rotationErrorDegrees = rotationError(estimate: est, truth: gt)
        }
        if let gt = truth.translation, let est = translation {
            errors.translationErrorDegrees = translationDirectionError(estimate: est, truth: gt)
        }
        if let gt = truth.homography, let est = homography {
            errors.cornerErrorPixels = cornerError(estimate: est, truth: gt, size: referenceSize)
        }
        return errors
    }

    public static func rotationError(estimate: Matrix3, truth: Matrix3) -> Double {
        Matrix3.angleDegrees(between: estimate, and: truth)
    }

    public static func translationDirectionError(estimate: SIMD3<Double>, truth: SIMD3<Double>) -> Double {
        let c = abs(dot(estimate, truth)) / (length(estimate) * length(truth))
        return acos(min(1, c)) * 180 / .pi
    }

    public static func cornerError(estimate: Matrix3, truth: Matrix3, size: ImageSize) -> Double {
        let w = Double(size.width), h = Double(size.height)
        let corners = [Point2(x: 0, y: 0), Point2(x: w, y: 0), Point2(x: w, y: h), Point2(x: 0, y: h)]
        return corners.map { estimate.project($0).distance(to: truth.project($0)) }.reduce(0, +) / 4
    }
}

