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
        msPerFrame = statistics.medianTimeMs["total"]
    }

    enum CodingKeys: String, CodingKey {
        case frames, failures, maa5, maa10, rotationMaa10, medianRotationErrorFailedAt180Degrees, medianScoreFailedAt0, msPerFrame
        /// The names trials.jsonl used for the same values before, read so that earlier runs resume and merge.
        case medianRotationErrorDegrees, medianScore
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        frames = try c.decode(Int.self, forKey: .frames)
        failures = try c.decode(Int.self, forKey: .failures)
        maa5 = try c.decodeIfPresent(Double.self, forKey: .maa5)
        maa10 = try c.decodeIfPresent(Double.self, forKey: .maa10)
        rotationMaa10 = try c.decodeIfPresent(Double.self, forKey: .rotationMaa10)
        medianRotationErrorFailedAt180Degrees = try c.decodeIfPresent(Double.self, forKey: .medianRotationErrorFailedAt180Degrees)
            ?? c.decodeIfPresent(Double.self, forKey: .medianRotationErrorDegrees)
        medianScoreFailedAt0 = try c.decodeIfPresent(Double.self, forKey: .medianScoreFailedAt0) ?? c.decodeIfPresent(Double.self, forKey: .medianScore)
        msPerFrame = try c.decodeIfPresent(Double.self, forKey: .msPerFrame)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(frames, forKey: .frames)
        try c.encode(failures, forKey: .failures)
        try c.encodeIfPresent(maa5, forKey: .maa5)
        try c.encodeIfPresent(maa10, forKey: .maa10)
        try c.encodeIfPresent(rotationMaa10, forKey: .rotationMaa10)
        try c.encodeIfPresent(medianRotationErrorFailedAt180Degrees, forKey: .medianRotationErrorFailedAt180Degrees)
        try c.encodeIfPresent(medianScoreFailedAt0, forKey: .medianScoreFailedAt0)
        try c.encodeIfPresent(msPerFrame, forKey: .msPerFrame)
    }
}
