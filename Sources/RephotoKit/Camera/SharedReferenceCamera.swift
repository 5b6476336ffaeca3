import Foundation

/// One camera for an old reference that several frames were estimated against (`pose.referenceFocal.shareMinFrames`).
/// The reference's camera is a single unknown; each frame's matches estimate it on their own, and a frame's focal
/// length is decided by which of its matches count as inliers (a few per cent either way). Combining the frames whose
/// pose was answered gives the weighted median of their focal lengths (in log) and of their principal points, each
/// frame weighed by its pose's inliers over its focal length's variance, that sigma taken as at least
/// `shareSigmaFloor`: a pair of close views fits the most inliers but fixes the focal length least, and below a few
/// per cent the sigma no longer ranks the answers (it misses the principal point and the choice of inliers). Its sigma is the answers' robust spread over the square root of their number, and
/// no less than the median of their own sigmas over that root, or `minSigmaPercent`.
public enum SharedReferenceCamera {
    /// One frame's answer: the camera estimated for it and the inliers of its pose.
    public struct Answer: Sendable {
        public var camera: EstimatedReferenceCamera
        public var inliers: Int

        public init(camera: EstimatedReferenceCamera, inliers: Int) {
            self.camera = camera
            self.inliers = inliers
        }

        /// A frame's result when its pose was answered on a camera estimated for it alone; nil otherwise.
        public init?(_ result: PoseResult) {
            guard result.pose != nil, let camera = result.referenceCamera, camera.frames == nil,
                  let inliers = result.counts.inliersEssential, inliers > 0 else { return nil }
            self.init(camera: camera, inliers: inliers)
        }
    }

    /// Per reference file, the camera its frames' answers combine into (`combine(_:config:)`); a frame listed twice
    /// answers once (the last answer given for it counts).
    public static func combine(byReference answers: [(reference: String, frame: String, answer: Answer)],
                               config: ReferenceFocalConfig) -> [String: EstimatedReferenceCamera] {
        var grouped: [String: [String: Answer]] = [:]
        for (reference, frame, answer) in answers { grouped[reference, default: [:]][frame] = answer }
        // In frame order, so that ties among the answers fall the same way in every run.
        return grouped.compactMapValues { combine($0.sorted { $0.key < $1.key }.map(\.value), config: config) }
    }

    /// The combined camera; nil with fewer than `config.shareMinFrames` answers (or none, or that at 0): a camera from one
    /// frame's answer would carry that frame's errors to frames that could not check it.
    public static func combine(_ answers: [Answer], config: ReferenceFocalConfig) -> EstimatedReferenceCamera? {
        let usable = answers.filter { $0.camera.fx > 0 && $0.camera.fx.isFinite && $0.camera.focalSigmaPercent.isFinite && $0.inliers > 0 }
        guard config.shareMinFrames > 0, usable.count >= config.shareMinFrames,
              let heaviest = usable.max(by: { $0.inliers < $1.inliers }) else { return nil }
        let weights = usable.map { answer -> Double in
            let sigma = max(answer.camera.focalSigmaPercent, config.shareSigmaFloor, 1e-3)
            return Double(answer.inliers) / (sigma * sigma)
        }
        let logFocal = usable.map { log(($0.camera.fx + $0.camera.fy) / 2) }
        let focal = exp(weightedMedian(logFocal, weights))
        let n = Double(usable.count)
        let spread = 1.4826 * 100 * weightedMedian(logFocal.map { abs($0 - log(focal)) }, weights)
        let own = median(usable.map(\.camera.focalSigmaPercent))
        var shared = heaviest.camera
        shared.fx = focal
        shared.fy = focal
        shared.cx = weightedMedian(usable.map(\.camera.cx), weights)
        shared.cy = weightedMedian(usable.map(\.camera.cy), weights)
        shared.focalSigmaPercent = max(config.minSigmaPercent, spread / n.squareRoot(), own / n.squareRoot())
        shared.inliers = usable.map(\.inliers).reduce(0, +)
        // A frame's zoom is proportional to the focal length it was given.
        shared.zoom = median(usable.map { $0.camera.zoom * focal / (($0.camera.fx + $0.camera.fy) / 2) })
        shared.frames = usable.count
        return shared
    }

    /// The smallest value whose cumulative weight (values ascending) reaches half the total.
    static func weightedMedian(_ values: [Double], _ weights: [Double]) -> Double {
        let order = values.indices.sorted { (values[$0], $0) < (values[$1], $1) }
        let half = weights.reduce(0, +) / 2
        var sum = 0.0
        for (k, i) in order.enumerated() {
            sum += weights[i]
            // Exactly half: the middle lies between this value and the next (an even count of equal weights).
            if sum == half, k + 1 < order.count { return (values[i] + values[order[k + 1]]) / 2 }
            if sum >= half { return values[i] }
        }
        return values[order.last!]
    }

    /// The plain median: every value weighed alike.
    private static func median(_ values: [Double]) -> Double { weightedMedian(values, values.map { _ in 1 }) }
}
