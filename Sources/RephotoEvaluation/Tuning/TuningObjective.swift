import RephotoKit

/// What `rephoto tune` ranks by. Computed from the evaluator's rows and its own statistics: failures count
/// as 180° wherever an error is ranked, as in mAA, so a configuration cannot win by failing hard frames.
public enum TuningObjective: String, Sendable, CaseIterable, Codable {
    case maa10, maa5
    case rotationMaa10 = "rotation-maa10"
    case medianRotation = "median-rotation"
    case score

    /// Higher is better for every objective but the median rotation error.
    public var higherIsBetter: Bool { self != .medianRotation }

    /// An axis label with the unit.
    public var axisLabel: String {
        switch self {
        case .maa10: "mAA@10 (0–1)"
        case .maa5: "mAA@5 (0–1)"
        case .rotationMaa10: "rotation mAA@10 (0–1)"
        case .medianRotation: "median rotation error, degrees"
        case .score: "median score (0–100)"
        }
    }

    /// The value for people: four decimals (mAA's resolution on a few hundred frames is coarser); CSV and JSON
    /// keep the exact value.
    public func rounded(_ value: Double?) -> String { value.map { String(format: "%.4f", $0) } ?? "-" }

    public func value(of metrics: TrialMetrics) -> Double? {
        switch self {
        case .maa10: metrics.maa10
        case .maa5: metrics.maa5
        case .rotationMaa10: metrics.rotationMaa10
        case .medianRotation: metrics.medianRotationErrorFailedAt180Degrees
        case .score: metrics.medianScoreFailedAt0
        }
    }
}

/// A trial's metrics, from the evaluator's statistics (EvaluationStatistics) of its rows. frames, failures, the
/// mAAs and msPerFrame are what `evaluate` reports under those names; the two medians count failed frames (at
/// 180°, at 0) so that ranking by them cannot favour a configuration that fails hard frames. `evaluate`'s medians
/// leave failures out, so these carry names of their own.
public struct TrialMetrics: Codable, Equatable, Sendable {
    public var frames: Int
    public var failures: Int
    public var maa5: Double?
    public var maa10: Double?
    public var rotationMaa10: Double?
    /// Median rotation error with failed frames at 180°.
    public var medianRotationErrorFailedAt180Degrees: Double?
    /// Median score, failed frames at 0.
    public var medianScoreFailedAt0: Double?
    /// Median total milliseconds per estimated frame.
    public var msPerFrame: Double?
    /// Frames by the pose gate's cause of refusal, and poses by why their translation is undetermined
    /// (EvaluationStatistics): what a configuration loses its mAA to. nil in trials recorded before.
    public var poseRefusals: [String: Int]?
    public var undeterminedTranslations: [String: Int]?

    public init(rows: [EvaluationRow]) {
        let statistics = EvaluationStatistics.compute(rows)
        frames = statistics.frames
        failures = statistics.failures
        maa5 = statistics.maa5
        maa10 = statistics.maa10
        rotationMaa10 = statistics.rotationMaa10
        medianRotationErrorFailedAt180Degrees = Statistics.median(rows.compactMap { r in
            r.pairErrorDegrees == nil && r.rotationErrorDegrees == nil && !r.failed ? nil : (r.failed ? 180 : r.rotationErrorDegrees ?? 180)
        })
        medianScoreFailedAt0 = Statistics.median(rows.map { $0.failed ? 0 : $0.score ?? 0 })
        msPerFrame = statistics.medianMilliseconds(.total)
        poseRefusals = statistics.poseRefusals
        undeterminedTranslations = statistics.undeterminedTranslations
    }

    /// "cause=count" pairs by cause, ";"-separated (leaderboard.csv); "" for none.
    public static func counts(_ counts: [String: Int]?) -> String {
        (counts ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
    }

    /// The names trials.jsonl used for the two medians before, read so that earlier runs resume and merge.
    private enum EarlierKeys: String, CodingKey {
        case medianRotationErrorDegrees, medianScore
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self), earlier = try decoder.container(keyedBy: EarlierKeys.self)
        frames = try c.decode(Int.self, forKey: .frames)
        failures = try c.decode(Int.self, forKey: .failures)
        maa5 = try c.decodeIfPresent(Double.self, forKey: .maa5)
        maa10 = try c.decodeIfPresent(Double.self, forKey: .maa10)
        rotationMaa10 = try c.decodeIfPresent(Double.self, forKey: .rotationMaa10)
        medianRotationErrorFailedAt180Degrees = try c.decodeIfPresent(Double.self, forKey: .medianRotationErrorFailedAt180Degrees)
            ?? earlier.decodeIfPresent(Double.self, forKey: .medianRotationErrorDegrees)
        medianScoreFailedAt0 = try c.decodeIfPresent(Double.self, forKey: .medianScoreFailedAt0)
            ?? earlier.decodeIfPresent(Double.self, forKey: .medianScore)
        msPerFrame = try c.decodeIfPresent(Double.self, forKey: .msPerFrame)
        poseRefusals = try c.decodeIfPresent([String: Int].self, forKey: .poseRefusals)
        undeterminedTranslations = try c.decodeIfPresent([String: Int].self, forKey: .undeterminedTranslations)
    }
}
