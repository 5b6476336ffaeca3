import RephotoKit
import RephotoData
import Foundation

/// Figures for a group of evaluated frames (a sequence, or all). Contract keys documented in docs/evaluation.md;
/// every key is present, `null` where it does not apply (no truth of that kind, no attitudes).
public struct EvaluationStatistics: Codable, Equatable, Sendable {
    public var frames: Int
    public var failures: Int
    public var successRate: Double
    /// mAA@5 and @10 on the pair error (failures and undetermined translations count as 180°).
    @NullEncoded public var maa5: Double?
    @NullEncoded public var maa10: Double?
    /// The same on the rotation error alone.
    @NullEncoded public var rotationMaa5: Double?
    @NullEncoded public var rotationMaa10: Double?
    /// Medians and 90th percentiles over frames that were estimated and have that truth.
    @NullEncoded public var medianRotationErrorDegrees: Double?
    @NullEncoded public var p90RotationErrorDegrees: Double?
    @NullEncoded public var medianTranslationErrorDegrees: Double?
    @NullEncoded public var p90TranslationErrorDegrees: Double?
    /// The median of the sign-free translation error (Image Matching Challenge), beside the signed one.
    @NullEncoded public var medianTranslationErrorUnsignedDegrees: Double?
    @NullEncoded public var medianCornerErrorPixels: Double?
    @NullEncoded public var medianAfdPixels: Double?
    @NullEncoded public var medianScore: Double?
    @NullEncoded public var medianSensorVisionAngleDegrees: Double?
    @NullEncoded public var medianSensorRotationErrorDegrees: Double?
    /// Median milliseconds per stage (`TimedStage`'s names: detectCurrent, match, homography, essential, total); read
    /// it through `medianMilliseconds`.
    public var medianTimeMs: [String: Double]

    public func medianMilliseconds(_ stage: TimedStage) -> Double? { medianTimeMs[stage.rawValue] }
    /// Frames by the pose gate's cause of refusal (`pose_refusal`), and estimated poses by why their translation
    /// is undetermined (`translation_undetermined`): where the mAA was lost. Absent in older summaries.
    public var poseRefusals: [String: Int]?
    public var undeterminedTranslations: [String: Int]?
    /// Failed frames by `failure_kind`, the reason most of them gave (`failure_reason`; the first in row order on a
    /// tie) and how many gave it, so a run where every frame failed says why. Absent in older summaries.
    public var failureKinds: [String: Int]?
    @NullEncoded public var commonFailureReason: String?
    @NullEncoded public var commonFailureFrames: Int?
    /// References of unknown camera: the median of the estimated focal lengths' absolute errors, %; absent otherwise.
    public var medianReferenceFocalErrorPercent: Double?

    public static func compute(_ rows: [EvaluationRow]) -> EvaluationStatistics {
        let ok = rows.filter { !$0.failed }
        func values(_ path: KeyPath<EvaluationRow, Double?>, _ from: [EvaluationRow]) -> [Double] { from.compactMap { $0[keyPath: path] } }
        let pair = rows.compactMap(\.pairErrorDegrees)
        // Rotation errors for mAA: every row whose sequence has rotation truth; failures at 180°.
        let rotation = rows.compactMap { r -> Double? in r.pairErrorDegrees == nil ? nil : (r.rotationErrorDegrees ?? 180) }
        var times: [String: Double] = [:]
        for stage in TimedStage.allCases {
            if let m = Statistics.median(values(stage.row, ok)) { times[stage.rawValue] = m }
        }
        let common = mostCommon(rows.compactMap { $0.failed ? $0.failureReason : nil })
        return EvaluationStatistics(
            frames: rows.count, failures: rows.count - ok.count,
            successRate: rows.isEmpty ? 0 : Double(ok.count) / Double(rows.count),
            maa5: Statistics.meanAverageAccuracy(pair, upTo: 5), maa10: Statistics.meanAverageAccuracy(pair, upTo: 10),
            rotationMaa5: Statistics.meanAverageAccuracy(rotation, upTo: 5), rotationMaa10: Statistics.meanAverageAccuracy(rotation, upTo: 10),
            medianRotationErrorDegrees: Statistics.median(values(\.rotationErrorDegrees, ok)),
            p90RotationErrorDegrees: Statistics.percentile(values(\.rotationErrorDegrees, ok), 90),
            medianTranslationErrorDegrees: Statistics.median(values(\.translationErrorDegrees, ok)),
            p90TranslationErrorDegrees: Statistics.percentile(values(\.translationErrorDegrees, ok), 90),
            medianTranslationErrorUnsignedDegrees: Statistics.median(values(\.translationErrorUnsignedDegrees, ok)),
            medianCornerErrorPixels: Statistics.median(values(\.cornerErrorPixels, ok)),
            medianAfdPixels: Statistics.median(values(\.afdPixels, ok)), medianScore: Statistics.median(values(\.score, ok)),
            medianSensorVisionAngleDegrees: Statistics.median(values(\.sensorVisionAngleDegrees, ok)),
            medianSensorRotationErrorDegrees: Statistics.median(values(\.sensorRotationErrorDegrees, rows)),
            medianTimeMs: times,
            poseRefusals: rows.reduce(into: [:]) { counts, row in if let cause = row.poseRefusal { counts[cause, default: 0] += 1 } },
            undeterminedTranslations: rows.reduce(into: [:]) { counts, row in
                if !row.failed, let cause = row.translationUndetermined { counts[cause, default: 0] += 1 }
            },
            failureKinds: rows.reduce(into: [:]) { counts, row in if row.failed { counts[row.failureKind ?? "unknown", default: 0] += 1 } },
            commonFailureReason: common?.reason, commonFailureFrames: common?.frames,
            medianReferenceFocalErrorPercent: Statistics.median(rows.compactMap { $0.referenceFocalErrorPercent.map(abs) }))
    }

    private static func mostCommon(_ reasons: [String]) -> (reason: String, frames: Int)? {
        var counts: [String: Int] = [:]
        for reason in reasons { counts[reason, default: 0] += 1 }
        var best: String?
        for reason in reasons where best == nil || counts[reason]! > counts[best!]! { best = reason }
        return best.map { ($0, counts[$0]!) }
    }
}

/// A sequence that could not be evaluated at all (broken manifest, unreadable frames.csv, bad calibration).
public struct BrokenSequence: Codable, Equatable, Sendable {
    public var path: String
    public var error: String
}

/// `summary.json` of an evaluation.
public struct EvaluationSummary: Codable, Equatable, Sendable {
    public var overall: EvaluationStatistics
    public var sequences: [String: EvaluationStatistics]
    public var brokenSequences: [BrokenSequence]
    /// false when the run was interrupted: the figures then cover only the frames in frames.csv, out of
    /// `framesPlanned`. Absent in summaries written before runs were durable.
    public var complete: Bool?
    public var framesPlanned: Int?
    /// What made the summary (version, command line, settings, start, data). Absent in older summaries.
    public var provenance: Provenance?

    public static func compute(rows: [EvaluationRow], broken: [BrokenSequence]) -> EvaluationSummary {
        let groups = Dictionary(grouping: rows, by: \.sequence)
        return EvaluationSummary(overall: .compute(rows), sequences: groups.mapValues(EvaluationStatistics.compute),
                                 brokenSequences: broken.sorted { $0.path < $1.path })
    }
}

public enum Statistics {
    /// Median with the mean of the two middle values for even counts.
    public static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted(), n = s.count
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
    }

    /// Percentile with linear interpolation between closest ranks.
    public static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        let rank = p / 100 * Double(s.count - 1)
        let lo = Int(rank.rounded(.down)), hi = Int(rank.rounded(.up))
        return s[lo] + (s[hi] - s[lo]) * (rank - Double(lo))
    }

    /// Image Matching Challenge mAA: mean over thresholds 1...N degrees of the fraction of errors below each.
    public static func meanAverageAccuracy(_ errors: [Double], upTo n: Int) -> Double? {
        guard !errors.isEmpty else { return nil }
        let fractions = (1...n).map { t in Double(errors.filter { $0 < Double(t) }.count) / Double(errors.count) }
        return fractions.reduce(0, +) / Double(n)
    }
}

/// The stages whose median time a summary reports (`medianTimeMs`), by their JSON names.
public enum TimedStage: String, CaseIterable, Sendable {
    case detectCurrent, match, homography, essential, total

    /// The row's time of this stage.
    var row: KeyPath<EvaluationRow, Double?> {
        switch self {
        case .detectCurrent: \.timeDetectCurrentMs
        case .match: \.timeMatchMs
        case .homography: \.timeHomographyMs
        case .essential: \.timeEssentialMs
        case .total: \.timeTotalMs
        }
    }
}
