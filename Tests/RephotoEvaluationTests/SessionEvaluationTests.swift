import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
import RephotoData
import RephotoEvaluation
import RephotoSynthesis

/// `rephoto evaluate --session`: both runs over a rendered walk, their rows and summaries against the sequence's truth.
@Suite struct SessionEvaluationTests {
    @Test func bothRunsAreReportedFrameByFrame() throws {
        let options = try SyntheticSequenceOptions.parse(["--width", "480", "--height", "360", "--motion", "approach", "--step", "0.1",
                                                         "--frames", "12", "--seed", "5", "--name", "walk"])
        let dir = try Scratch.directory()
        _ = try SyntheticSequence.generate(options, textureDirectory: Fixtures.textures, to: dir)
        let sequence = try FrameSequence.load(from: dir)
        var config = PipelineConfig()
        config.session.robustEvery = 4
        let (rows, summary) = try SessionEvaluator(config: config).run([sequence])
        let robust = rows.filter { $0.run == "robust" }, session = rows.filter { $0.run == "session" }
        #expect(robust.count == 12 && session.count == 12)
        #expect(robust.allSatisfy { $0.source == .robust })
        // The first frame (row 1: row 0 is the reference) waits for its robust update; the next ones, due on frames 4 and
        // 8, are joined two frames later (the default --robust-lag), on frames 6 and 10 (rows 7, 11), tracking between.
        #expect(session.filter { $0.source == .robust }.map(\.index) == [1], "\(session.map(\.sourceText))")
        #expect(session.filter { $0.robustMs != nil }.map(\.index) == [1, 7, 11], "\(session.map(\.robustMs))")
        #expect(session.filter { $0.source == .tracked }.allSatisfy { $0.quadrilateralDifferencePixels != nil })
        let all = try #require(summary.runs["session"]?["all"])
        #expect(all.frames == 12 && all.robustFrames == 3 && all.trackedFrames == 11)
        #expect(all.confidentWrong == 0 && (summary.runs["robust"]?["all"]?.confidentWrong ?? -1) == 0)
        // Tracked quadrilaterals against a robust update on the same frame: within 8 px (1.7 % of the width) at the median,
        // the answers joined two frames late included (5.8 px here; 2.8 px inline, whose robust frames count 0).
        #expect(try #require(all.medianQuadrilateralDifferencePixels) < 8)
        #expect(try #require(all.medianStepErrorDegrees) <= 15)
        let folder = try Scratch.directory()
        try SessionEvaluationSummary.write(rows: rows, summary: summary, to: folder)
        let csv = try String(contentsOf: folder.appendingPathComponent("session.csv"), encoding: .utf8)
        #expect(csv.split(separator: "\n").first.map(String.init) == SessionRow.columns.joined(separator: ","))
        #expect(csv.split(separator: "\n").count == 25)
        let decoded = try JSONDecoder().decode(SessionEvaluationSummary.self, from: Data(contentsOf: folder.appendingPathComponent("session.json")))
        #expect(decoded == summary)
    }
}
