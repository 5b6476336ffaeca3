import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
@testable import RephotoEvaluation

/// Provenance, the comparison's refusals and thresholds, and the report's captions.
@Suite struct ProvenanceTests {
    @Test func provenanceNamesTheChangedSettingsAndHashesThemAll() throws {
        let defaults = Provenance(settings: PipelineConfig(), commandLine: ["rephoto", "evaluate", "my data"], started: Date(timeIntervalSince1970: 0))
        #expect(defaults.settingsChanged.isEmpty)
        #expect(defaults.started == "1970-01-01T00:00:00Z")
        #expect(defaults.version == RephotoVersion.description)
        #expect(defaults.commandText == "rephoto evaluate 'my data'")
        // The hash is sha256sum of the settings as `rephoto defaults` prints them, without the final newline.
        #expect(defaults.settingsHash == (try sha256sum(ParameterRegistry.json(of: PipelineConfig()))))
        var orb = PipelineConfig()
        try ParameterRegistry.parameter("features.detector")!.set(.string("orb"), in: &orb)
        try ParameterRegistry.parameter("matching.ratio")!.set(.double(0.7), in: &orb)
        let changed = Provenance(settings: orb)
        #expect(changed.settingsChanged == ["features.detector=orb", "matching.ratio=0.7"])
        #expect(changed.detector == "orb" && defaults.detector == "akaze")
        #expect(changed.settingsHash != defaults.settingsHash && changed.settingsHash == Provenance.hash(orb))
        #expect(changed.html.contains("features.detector=orb") && changed.html.contains("<dd>orb</dd>"))
    }

    static func summary(_ sequences: [String: Int], maa10: Double, digests: [String: String]? = nil, settings: PipelineConfig? = nil) -> EvaluationSummary {
        var stats = EvaluationStatistics.compute([])
        stats.maa10 = maa10
        var summary = EvaluationSummary.compute(rows: [], broken: [])
        summary.overall = stats
        summary.sequences = sequences.mapValues { frames in var s = stats; s.frames = frames; return s }
        summary.provenance = settings.map { Provenance(settings: $0, sequences: digests) }
        return summary
    }

    @Test func compareRefusesOtherDataAndCallsOnlyDifferencesOverTheThresholdBetter() throws {
        let a = Self.summary(["walk": 6, "wide": 4], maa10: 0.500, digests: ["walk": "1", "wide": "2"], settings: PipelineConfig())
        // Other sequences, another frame count, another truth under the same name: each named.
        for (b, words) in [(Self.summary(["walk": 6], maa10: 0.5), "only A has wide"),
                           (Self.summary(["walk": 6, "wide": 5], maa10: 0.5), "wide has 4 frames in A, 5 in B"),
                           (Self.summary(["walk": 6, "wide": 4], maa10: 0.5, digests: ["walk": "1", "wide": "3"], settings: PipelineConfig()),
                            "wide's sequence.json or frames.csv differ")] {
            #expect {
                try EvaluationComparison.check(a, b, folderA: "runs/a", folderB: "runs/b")
            } throws: { error in
                let message = (error as? RephotoError)?.message ?? ""
                return (error as? RephotoError)?.exitCode == 2 && message.contains(words) && message.contains("A (runs/a)") && message.contains("B (runs/b)")
            }
        }
        var orb = PipelineConfig()
        try ParameterRegistry.parameter("features.detector")!.set(.string("orb"), in: &orb)
        let near = Self.summary(["walk": 6, "wide": 4], maa10: 0.509, digests: ["walk": "1", "wide": "2"], settings: orb)
        try EvaluationComparison.check(a, near, folderA: "a", folderB: "b")
        let comparison = EvaluationComparison.compare(a, near, folderA: "a", folderB: "b")
        let line = try #require(comparison.lines.first { $0.scope == "overall" && $0.metric == "maa10" })
        // 0.009 is under mAA's threshold of 0.01: the same, not better.
        #expect(line.better == "same" && line.threshold == 0.01 && abs(line.difference! - 0.009) < 1e-12)
        #expect(comparison.settingsDifferences == [EvaluationComparison.SettingDifference(path: "features.detector", a: "default", b: "orb")])
        let far = Self.summary(["walk": 6, "wide": 4], maa10: 0.52, settings: PipelineConfig())
        #expect(EvaluationComparison.compare(a, far).lines.first { $0.scope == "overall" && $0.metric == "maa10" }?.better == "b")
        #expect(EvaluationComparison.compare(far, a).lines.first { $0.scope == "overall" && $0.metric == "maa10" }?.better == "a")
    }

    @Test func aPairErrorOf180SaysItIsAnUndeterminedTranslation() throws {
        var row = EvaluationRow()
        row.sequence = "s"
        row.file = "frame-0030.jpg"
        row.pairErrorDegrees = 180
        row.rotationErrorDegrees = 0.08
        row.translationUndetermined = "rotation_only"
        let html = EvaluationReport.html(summary: EvaluationSummary.compute(rows: [row], broken: []), rows: [row],
                                         thumbnails: ["s": ["worst": Data([0xFF, 0xD8])]])
        #expect(html.contains("worst: frame-0030.jpg, pair error 180° (translation undetermined: rotation_only), rotation 0.08°"))
        #expect(html.contains("it counts as 180°, the largest error there is"))
        #expect(!html.contains("pair error 180.00°"))
    }
}
