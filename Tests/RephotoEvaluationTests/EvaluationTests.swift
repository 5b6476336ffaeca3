import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct EvaluationTests {
    static func row(_ pair: Double?, rotation: Double? = nil, failed: Bool = false) -> EvaluationRow {
        var r = EvaluationRow()
        r.sequence = "s"
        r.pairErrorDegrees = pair
        r.rotationErrorDegrees = rotation
        r.failed = failed
        return r
    }

    @Test func meanAverageAccuracyOfPerfectAndWrongEstimators() throws {
        let perfect = EvaluationStatistics.compute((0..<10).map { _ in Self.row(0, rotation: 0) })
        #expect(perfect.maa5 == 1 && perfect.maa10 == 1 && perfect.rotationMaa10 == 1)
        let wrong = EvaluationStatistics.compute((0..<10).map { _ in Self.row(90, rotation: 90) })
        #expect(wrong.maa5 == 0 && wrong.maa10 == 0)
        let failed = EvaluationStatistics.compute([Self.row(180, failed: true), Self.row(0.5, rotation: 0.5)])
        #expect(failed.maa5 == 0.5 && failed.successRate == 0.5 && failed.failures == 1)
        // Errors 0.5, 1.5, 2.5, 3.5: fractions below 1..5 are 1/4, 2/4, 3/4, 1, 1 -> mean 0.7.
        let spread = EvaluationStatistics.compute([0.5, 1.5, 2.5, 3.5].map { Self.row($0, rotation: $0) })
        #expect(abs(try #require(spread.maa5) - 0.7) < 1e-12)
        #expect(Statistics.median([3, 1, 2]) == 2 && Statistics.median([4, 1, 2, 3]) == 2.5)
        #expect(Statistics.percentile([0, 10], 90) == 9)
        #expect(EvaluationStatistics.compute([Self.row(nil)]).maa5 == nil)
    }

    /// Failed frames are counted by kind, and the reason most of them gave is the summary's; ties go to the earliest.
    @Test func failuresAreCountedByKindWithTheirCommonestReason() throws {
        func failure(_ kind: String, _ reason: String) -> EvaluationRow {
            var r = Self.row(180, failed: true)
            r.failureKind = kind
            r.failureReason = reason
            return r
        }
        let rows = [failure("estimation_failed", "too few matches (3)"), failure("bad_input", "reference.tif: needs the plugin"),
                    Self.row(0.5, rotation: 0.5), failure("bad_input", "reference.tif: needs the plugin")]
        let statistics = EvaluationStatistics.compute(rows)
        #expect(statistics.failureKinds == ["bad_input": 2, "estimation_failed": 1])
        #expect(statistics.commonFailureReason == "reference.tif: needs the plugin" && statistics.commonFailureFrames == 2)
        #expect(EvaluationStatistics.compute(Array(rows.prefix(2))).commonFailureReason == "too few matches (3)")
        let fine = EvaluationStatistics.compute([Self.row(0.5, rotation: 0.5)])
        #expect(fine.failureKinds == [:] && fine.commonFailureReason == nil && fine.commonFailureFrames == nil)
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(fine)) as? [String: Any]
        #expect(json?["commonFailureReason"] is NSNull && json?["commonFailureFrames"] is NSNull, "the keys are present and null when nothing failed")
    }

    static func synthetic(frames: Int = 6, seed: UInt64 = 21) throws -> URL {
        var o = SyntheticSequenceOptions.defaults
        o.frames = frames
        o.width = 320
        o.height = 240
        o.seed = seed
        o.name = "synth-\(seed)"
        o.startTranslationMetres = 0.8
        o.convergence = 1
        let dir = try Scratch.directory().appendingPathComponent(o.name!)
        _ = try SyntheticSequence.generate(o, textureDirectory: Fixtures.textures, to: dir)
        return dir
    }

    /// The summary equals a recomputation from frames.csv with separate code, and each frame's rotation
    /// error equals the angle between the estimated and the sequence's true rotation.
    /// An old photo's focal length error is signed (too long or too short): its rows read back as written, so a
    /// resumed or merged run keeps them, while a negative angle error is still refused. A resumed old-photo run was
    /// refused on its own frames.csv ("'-0.139' is not a finite number at least 0").
    @Test func aSignedFocalErrorReadsBackAndANegativeAngleErrorDoesNot() throws {
        var row = Self.row(2, rotation: 1)
        row.file = "a.jpg"
        row.referenceFocalErrorPercent = -2.5
        let read = try EvaluationRow.parse(try EvaluationRow.csv([row]), path: "frames.csv")
        #expect(read.count == 1 && read[0].referenceFocalErrorPercent == -2.5)
        row.rotationErrorDegrees = -1
        #expect(throws: RephotoError.self) { try EvaluationRow.parse(try EvaluationRow.csv([row]), path: "frames.csv") }
    }

    @Test func summaryEqualsRecomputationFromFramesCSV() throws {
        let sequence = try Self.synthetic()
        let out = try Scratch.directory()
        let outcome = try Evaluator(config: PipelineConfig(), jobs: 2).run([sequence])
        let summary = try EvaluationOutput.write(outcome, to: out)
        let rows = try EvaluationRow.parse(String(contentsOf: out.appendingPathComponent("frames.csv"), encoding: .utf8), path: "frames.csv")
        #expect(rows == outcome.rows.sorted { $0.index < $1.index })
        #expect(rows.count == 6 && rows.allSatisfy { !$0.failed })

        let rotation = rows.compactMap(\.rotationErrorDegrees).sorted()
        let median = rotation.count % 2 == 1 ? rotation[rotation.count / 2] : (rotation[rotation.count / 2 - 1] + rotation[rotation.count / 2]) / 2
        #expect(summary.overall.medianRotationErrorDegrees == median)
        let pairs = rows.compactMap(\.pairErrorDegrees)
        var maa = 0.0
        for t in 1...10 { maa += Double(pairs.filter { $0 < Double(t) }.count) / Double(pairs.count) / 10 }
        #expect(abs(try #require(summary.overall.maa10) - maa) < 1e-12)
        #expect(summary.sequences["synth-21"] == summary.overall)

        let frames = try FrameSequence.load(from: sequence)
        let estimator = try PoseEstimator()
        let reference = try estimator.prepareReference(Image(contentsOfFile: frames.path(of: "reference.jpg"), grayscale: true), camera: frames.camera())
        for row in rows.prefix(2) {
            let frame = frames.frames[row.index]
            let result = try estimator.estimate(reference: reference, current: Image(contentsOfFile: frames.path(of: frame.file), grayscale: true),
                                                camera: frames.camera())
            let truth = try #require(frame.truthRotation).rotationMatrix
            let error = acos(max(-1, min(1, ((result.pose!.rotation.transposed * truth).elements[0] + (result.pose!.rotation.transposed * truth).elements[4]
                + (result.pose!.rotation.transposed * truth).elements[8] - 1) / 2))) * 180 / .pi
            #expect(abs(try #require(row.rotationErrorDegrees) - error) < 1e-6)
            #expect(error < 1)  // 320x240 frames
        }
    }

    @Test func shardsMergeIntoTheUnshardedResult() throws {
        let a = try Self.synthetic(frames: 3, seed: 31), b = try Self.synthetic(frames: 3, seed: 32), c = try Self.synthetic(frames: 3, seed: 33)
        let all = SequenceDiscovery.shard([a, b, c].sorted { $0.path < $1.path }, index: 0, count: 1)
        let evaluator = try Evaluator(config: PipelineConfig(), jobs: 2)
        let whole = try EvaluationOutput.write(evaluator.run(all), to: Scratch.directory())
        var shardFolders: [URL] = []
        for i in 0..<2 {
            let part = SequenceDiscovery.shard(all, index: i, count: 2)
            #expect(part.count == (i == 0 ? 2 : 1))
            let folder = try Scratch.directory()
            _ = try EvaluationOutput.write(evaluator.run(part), to: folder)
            shardFolders.append(folder)
        }
        let merged = try EvaluationOutput.merge(shardFolders).outcome
        let mergedFolder = try Scratch.directory()
        let mergedSummary = try EvaluationOutput.write(merged, to: mergedFolder)
        func withoutTimes(_ s: EvaluationSummary) -> EvaluationSummary {
            var s = s
            s.overall.medianTimeMs = [:]
            for k in s.sequences.keys { s.sequences[k]?.medianTimeMs = [:] }
            return s
        }
        #expect(withoutTimes(mergedSummary) == withoutTimes(whole))
        let wholeRows = try EvaluationRow.csv(evaluator.run(all).rows.sorted { ($0.sequence, $0.index) < ($1.sequence, $1.index) }, dropping: EvaluationRow.timingColumns)
        #expect(try EvaluationRow.csv(merged.rows.sorted { ($0.sequence, $0.index) < ($1.sequence, $1.index) }, dropping: EvaluationRow.timingColumns) == wholeRows)
        #expect(Set(merged.thumbnails.keys) == ["synth-31", "synth-32", "synth-33"])
        #expect(throws: RephotoError.self) { try EvaluationOutput.merge([shardFolders[0], shardFolders[0]]) }
    }

    /// A broken manifest and an unreadable frame are reported; everything else is still evaluated.
    /// The report shows what the CLI table shows (rotation mAA beside strict mAA), says which frame each overlay
    /// is and its error, lists failed frames open, and labels frame axes with whole frames only.
    @Test func reportShowsRotationMAACaptionsFailuresAndWholeFrameTicks() throws {
        var rows = (0..<3).map { i -> EvaluationRow in
            var r = EvaluationRow()
            r.sequence = "s"
            r.index = i
            r.file = "f\(i).jpg"
            r.rotationErrorDegrees = Double(i) * 0.5
            r.pairErrorDegrees = Double(i) * 0.5
            r.score = 90
            return r
        }
        var failed = EvaluationRow()
        failed.sequence = "s"
        failed.index = 3
        failed.file = "f3.jpg"
        failed.failed = true
        failed.failureReason = "too few matches: 3 (need 10)"
        failed.pairErrorDegrees = 180
        rows.append(failed)
        let summary = EvaluationSummary.compute(rows: rows, broken: [])
        let html = EvaluationReport.html(summary: summary, rows: rows, thumbnails: ["s": ["worst": Data([1]), "median": Data([2]), "best": Data([3])]])
        #expect(html.contains("<th>rotation mAA@5</th><th>rotation mAA@10</th>"))
        #expect(html.contains("worst: f2.jpg, pair error 1.00°, rotation 1.00°, score 90.0"))
        #expect(html.contains("best: f0.jpg, pair error 0.00°"))
        #expect(html.contains("<details open><summary>1 failed frames</summary><ul><li><code>f3.jpg</code>: too few matches: 3 (need 10)</li>"))
        let perFrame = try #require(html.components(separatedBy: "<svg").dropFirst().first)
        let ticks = perFrame.components(separatedBy: "text-anchor='middle'>").dropFirst().map { String($0.prefix { $0 != "<" }) }
        #expect(Array(ticks.prefix(3)) == ["0", "1", "2"], "\(ticks)")
    }

    /// An earlier run's thumbnails in --out are removed, so they cannot pass for this run's.
    @Test func staleThumbnailsAreRemoved() throws {
        let out = try Scratch.directory()
        let stale = out.appendingPathComponent("thumbnails/old-sequence")
        try FileManager.default.createDirectory(at: stale, withIntermediateDirectories: true)
        try Data([0xFF, 0xD8]).write(to: stale.appendingPathComponent("worst.jpg"))
        _ = try EvaluationOutput.write(EvaluationOutcome(), to: out)
        #expect(!FileManager.default.fileExists(atPath: stale.path))
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("summary.json").path))
    }

    @Test func brokenInputsAreDataNotCrashes() throws {
        let root = try Scratch.directory()
        let good = try Self.synthetic(frames: 3, seed: 41)
        try FileManager.default.copyItem(at: good, to: root.appendingPathComponent("good"))
        try Data("hello, not an image".utf8).write(to: root.appendingPathComponent("good/frame-0001.jpg"))
        let broken = root.appendingPathComponent("broken")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data(#"{"name": "broken", "reference": 3}"#.utf8).write(to: broken.appendingPathComponent("sequence.json"))
        // A calibration nested deep enough to overflow OpenCV's parser killed the whole run (SIGSEGV).
        let deep = root.appendingPathComponent("deep-calibration")
        try FileManager.default.copyItem(at: good, to: deep)
        let manifestURL = deep.appendingPathComponent("sequence.json")
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        manifest["intrinsics"] = nil
        manifest["calibration"] = "deep.yml"
        manifest["name"] = "deep-calibration"
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
        try Data(("%YAML:1.0\n---\na: " + String(repeating: "[", count: 50_000) + String(repeating: "]", count: 50_000)).utf8)
            .write(to: deep.appendingPathComponent("deep.yml"))
        let outcome = try Evaluator(config: PipelineConfig(), jobs: 2).run(try SequenceDiscovery.find([root.path]))
        #expect(outcome.broken.count == 2 && outcome.broken[0].path.hasSuffix("broken"))
        #expect(outcome.broken[1].path.hasSuffix("deep-calibration") && outcome.broken[1].error.contains("not a calibration file"))
        // A second sequence of the same name is listed as broken, not merged into the first.
        let twin = root.appendingPathComponent("twin")
        try FileManager.default.copyItem(at: good, to: twin)
        let again = try Evaluator(config: PipelineConfig(), jobs: 2).run(try SequenceDiscovery.find([root.path]))
        #expect(again.rows.count == 3)
        #expect(again.broken.contains { $0.path.hasSuffix("twin") && $0.error.contains("is also the name of") })
        #expect(outcome.rows.count == 3)
        let bad = try #require(outcome.rows.first { $0.file == "frame-0001.jpg" })
        #expect(bad.failed && bad.failureKind == "bad_input" && bad.failureReason?.contains("not a JPEG, PNG") == true)
        #expect(bad.pairErrorDegrees == 180)
        #expect(outcome.rows.filter { !$0.failed }.count == 2)
    }

    /// report.html rendered by headless Chromium: the page draws its plots (their line colours appear).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "chromium is not installed (scripts/setup installs it)"))
    func reportRendersInChromium() throws {
        let out = try Scratch.directory()
        let outcome = try Evaluator(config: PipelineConfig(), jobs: 2).run([try Self.synthetic(frames: 4, seed: 51)])
        _ = try EvaluationOutput.write(outcome, to: out)
        let html = try String(contentsOf: out.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"))
        let png = out.appendingPathComponent("report.png").path
        let chromium = Process()
        chromium.executableURL = URL(fileURLWithPath: "/usr/bin/chromium")
        chromium.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,900",
                              "--screenshot=\(png)", out.appendingPathComponent("report.html").absoluteString]
        chromium.standardOutput = FileHandle.nullDevice
        chromium.standardError = FileHandle.nullDevice
        try chromium.run()
        chromium.waitUntilExit()
        let shot = try Image(contentsOfFile: png)
        #expect((shot.width, shot.height) == (1200, 900))
        let pixels = try shot.pixels()
        func count(_ b: Int, _ g: Int, _ r: Int) -> Int {
            stride(from: 0, to: pixels.count, by: 3).filter {
                abs(Int(pixels[$0]) - b) < 30 && abs(Int(pixels[$0 + 1]) - g) < 30 && abs(Int(pixels[$0 + 2]) - r) < 30
            }.count
        }
        #expect(count(0xb4, 0x77, 0x1f) > 200)  // vision rotation lines (#1f77b4)
        #expect(count(0x2c, 0xa0, 0x2c) > 200)  // sensor rotation lines (#2ca02c)
    }
}
