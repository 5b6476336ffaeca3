import Foundation

/// The camera of an unknown reference over a guidance session. Every robust update estimates the camera on its own,
/// and its answer joins this one; the session works on their combination (`SharedReferenceCamera.combine`, the rule
/// `rephoto evaluate` uses), or on the first answer until `pose.referenceFocal.shareMinFrames` hold. It also says when
/// a structure fixed under an earlier camera no longer rests on this one: the camera moved past its 1 sigma from it.
public struct SessionReferenceCamera: Sendable {
    /// The latest answers (at most `maxAnswers`: a long session's first ones no longer count).
    public private(set) var answers: [SharedReferenceCamera.Answer] = []
    /// The camera the session works on; nil before any answer.
    public private(set) var current: EstimatedReferenceCamera?
    public let config: ReferenceFocalConfig
    public static let maxAnswers = 256

    public init(config: ReferenceFocalConfig) {
        self.config = config
    }

    /// Adds one robust update's own answer and combines again.
    public mutating func join(_ answer: SharedReferenceCamera.Answer) {
        answers.append(answer)
        if answers.count > Self.maxAnswers { answers.removeFirst(answers.count - Self.maxAnswers) }
        if let combined = SharedReferenceCamera.combine(answers, config: config) {
            current = combined
        } else if current == nil {
            current = answer.camera
        }
    }

    /// The current camera's 1 sigma of the focal length, percent (at least `minSigmaPercent`).
    public var sigmaPercent: Double { max(current?.focalSigmaPercent ?? .infinity, config.minSigmaPercent) }

    /// Whether `camera`'s focal length and the current one's lie within their joint 1 sigma (the root of the sum of
    /// their variances): a pose solved on it rests on the session's camera, or a structure fixed under it still does.
    /// False before there is one.
    public func agrees(with camera: EstimatedReferenceCamera) -> Bool {
        guard let current else { return false }
        let own = max(camera.focalSigmaPercent, config.minSigmaPercent)
        return Self.percentApart(current, camera) <= (sigmaPercent * sigmaPercent + own * own).squareRoot()
    }

    /// How far apart two cameras' focal lengths are, percent (in log, symmetric).
    static func percentApart(_ a: EstimatedReferenceCamera, _ b: EstimatedReferenceCamera) -> Double {
        abs(log((a.fx + a.fy) / (b.fx + b.fy))) * 100
    }
}
