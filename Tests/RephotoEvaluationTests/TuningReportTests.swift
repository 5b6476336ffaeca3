import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
@testable import RephotoEvaluation

/// The tuning run's budget, importance, ties and edges, and its plots' axes.
@Suite struct TuningReportTests {
    @Test(arguments: [("90s", 90.0), ("10m", 600), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400), ("1d", 86_400), ("0.001s", 0.001)])
    func durationsAsPeopleWriteThem(_ text: String, _ seconds: Double) throws {
        #expect(try TuningBudget.seconds(text) == seconds)
    }

    @Test(arguments: ["", "10", "10x", "-5m", "0s", "1e3s", "h", "31d", "5m3"])
    func badDurationsAreRefused(_ text: String) {
        #expect { try TuningBudget.seconds(text) } throws: { error in
            (error as? RephotoError)?.exitCode == 2 && (error as? RephotoError)?.message.contains("--timeout '\(text)' must be a duration") == true
        }
    }

    static func record(_ trial: Int, _ a: String, _ b: String, _ objective: Double?) -> TrialRecord {
        TrialRecord(trial: trial, parameters: [["matching.ratio", a], ["pose.essential.threshold", b]], metrics: TrialMetrics(rows: []),
                    objective: objective, tooSlow: false)
    }

    static let space = try! TuningSpace.parse("""
        strategy: grid
        parameters:
          matching.ratio: [0.7, 0.8, 0.9]
          pose.essential.threshold: {min: 0.5, max: 2, count: 3, log: true}
        """)

    /// On a full grid, η² is each factor's share of the variance: an objective that depends on one parameter alone
    /// gives it 1 and the other 0; an additive one with equal effects splits the variance in halves.
    @Test func importanceIsTheMainEffectVarianceShare() throws {
        let values = ["0.7", "0.8", "0.9"], thresholds = ["0.5", "1", "2"]
        var records: [TrialRecord] = [], additive: [TrialRecord] = []
        for (i, a) in values.enumerated() {
            for (j, b) in thresholds.enumerated() {
                records.append(Self.record(records.count, a, b, Double(i)))
                additive.append(Self.record(additive.count, a, b, Double(i + j)))
            }
        }
        let paths = Self.space.dimensions.map(\.path)
        let alone = ParameterImportance.compute(records, paths: paths)
        #expect(alone.map(\.share) == [1, 0])
        let both = ParameterImportance.compute(additive, paths: paths).compactMap(\.share)
        #expect(both.count == 2 && both.allSatisfy { abs($0 - 0.5) < 1e-12 }, "\(both)")
        // Nothing varies: nothing to explain.
        #expect(ParameterImportance.compute(records.map { var r = $0; r.objective = 0.3; return r }, paths: paths).map(\.share) == [nil, nil])
    }

    @Test func tiesAreListedAndABestAtTheEdgeIsFlagged() throws {
        let records = [Self.record(0, "0.7", "0.5", 0.2), Self.record(1, "0.9", "1", 0.4), Self.record(2, "0.8", "2", 0.4), Self.record(3, "0.9", "2", 0.4)]
        let result = TuningResult.compute(records, space: Self.space, objective: .maa10, provenance: nil)
        // Equal objectives: the lower trial id wins, the others are named.
        #expect(result.best?.trial == 1 && result.tiedWith == [2, 3])
        #expect(result.atEdge == [TuningResult.Edge(path: "matching.ratio", value: "0.9", side: "max")])
        #expect(result.notes.contains { $0.hasPrefix("tied with trials 2, 3 (the same maa10); equal objectives rank by trial id") })
        #expect(result.notes.contains("at the edge of the space: matching.ratio = 0.9 is the largest value searched; the best may lie beyond it"))
        #expect(TuningObjective.maa10.rounded(0.35857142857142854) == "0.3586")
    }

    @Test func axesHaveTicksAndLogRangesLogAxes() throws {
        #expect(Self.space.dimensions.map(\.log) == [false, true])
        let log = TuningPlots.Axis([0.5, 1, 2], log: true)
        // Under a decade: the linear axis's ticks, placed logarithmically; over two, one tick a decade.
        #expect(log.ticks.map(\.1) == ["0.5", "1", "1.5", "2"])
        #expect(TuningPlots.Axis([0.001, 1], log: true).ticks.map(\.1) == ["0.001", "0.01", "0.1", "1"])
        // Equal ratios sit at equal distances on a log axis.
        #expect(abs((log.fraction(1) - log.fraction(0.5)) - (log.fraction(2) - log.fraction(1))) < 1e-12)
        let linear = TuningPlots.Axis([0, 1], log: false)
        #expect(linear.ticks.map(\.1) == ["0", "0.2", "0.4", "0.6", "0.8", "1"])
        let records = [Self.record(0, "0.7", "0.5", 0.2), Self.record(1, "0.9", "2", 0.4)].map { r in
            var copy = r
            copy.metrics.msPerFrame = Double(10 + r.trial)
            return copy
        }
        let sensitivity = TuningPlots.sensitivity(records, dimensions: Self.space.dimensions, objective: .maa10)
        #expect(sensitivity.contains("pose.essential.threshold (log scale)") && sensitivity.contains(">#0<") && sensitivity.contains(">#1<"))
        let pareto = TuningPlots.pareto(records, objective: .maa10)
        #expect(pareto.contains("median time per frame, ms") && pareto.contains("mAA@10 (0–1)") && pareto.contains(">#1<"))
    }
}
