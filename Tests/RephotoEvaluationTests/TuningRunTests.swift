import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation
import Testing

/// A tuning run's bookkeeping in process: shards, their merge, resume and the refusals, against the same
/// search run whole as the truth (trials are deterministic).
@Suite struct TuningRunTests {
    static let space = Fixtures.tuningSpace

    static func data() throws -> String {
        let root = try Scratch.directory()
        for seed: UInt64 in [1, 2] {
            var o = SyntheticSequenceOptions.defaults
            (o.frames, o.width, o.height, o.seed, o.name) = (3, 240, 180, seed, "seq-\(seed)")
            _ = try SyntheticSequence.generate(o, textureDirectory: Fixtures.textures, to: root.appendingPathComponent(o.name!))
        }
        return root.path
    }

    static func spaceFile(_ text: String = space) throws -> String {
        let path = try Scratch.directory().appendingPathComponent("space.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func trials(_ folder: String) throws -> [Int: TrialRecord] {
        try Tuner.readTrials(URL(fileURLWithPath: folder).appendingPathComponent(Tuner.trialsFile))
    }

    @Test func shardsMergeIntoTheWholeRunAndRefuseWhatDoesNotBelong() throws {
        let data = try Self.data(), space = try Self.spaceFile()
        let whole = try Scratch.directory().path
        let outcome = try TuningRun(space: space, data: [data], out: whole).run()
        #expect(outcome.noWinner == nil)
        #expect(outcome.summary.contains("best"), "\(outcome.summary)")
        let truth = try Self.trials(whole)
        #expect(truth.keys.sorted() == [0, 1, 2, 3])

        var shards: [String] = []
        for index in 0..<2 {
            var run = TuningRun(space: space, data: [data], out: try Scratch.directory().path)
            run.shard = "\(index)/2"
            _ = try run.run()
            #expect(try Self.trials(run.out).keys.sorted() == [index, index + 2])
            let manifest = try TuningRun.manifest(run.out + "/tune.json")
            #expect(manifest.shard == "\(index)/2")
            #expect(manifest.sequences == ["seq-1 (3 frames)", "seq-2 (3 frames)"])
            shards.append(run.out)
        }
        let merged = try Scratch.directory().path
        var warnings: [String] = []
        _ = try TuningRun.merge(shards, out: merged) { warnings.append($0) }
        #expect(warnings.isEmpty, "\(warnings)")
        let combined = try Self.trials(merged)
        #expect(combined.keys.sorted() == [0, 1, 2, 3])
        for (trial, record) in truth {
            #expect(combined[trial]?.parameters == record.parameters)
            #expect(combined[trial]?.metrics.maa10 == record.metrics.maa10, "trial \(trial)")
        }
        // The merge says what data it was tuned on, as the whole run does: the same digests, computed on their own.
        let wholeDigests = try #require(TuningResult.load(URL(fileURLWithPath: whole))?.provenance?.sequences)
        #expect(TuningResult.load(URL(fileURLWithPath: merged))?.provenance?.sequences == wholeDigests)
        #expect(wholeDigests["seq-1"] == EvaluationRunState.digest(ofSequenceAt: data + "/seq-1"), "\(wholeDigests)")

        // Half a merge says the best may be missing; a shard given twice, or a resume under another space, is refused.
        warnings = []
        _ = try TuningRun.merge([shards[0]], out: try Scratch.directory().path) { warnings.append($0) }
        #expect(warnings == ["warning: 2 of 4 trials are missing (a shard not merged or not finished): the best may be among them"])
        #expect { try TuningRun.merge([shards[0], shards[0]], out: try Scratch.directory().path) } throws: { error in
            "\(error)".contains("are both shard 0/2: give each shard once")
        }
        var resumed = TuningRun(space: try Self.spaceFile(Self.space.replacingOccurrences(of: "0.9", with: "0.8")), data: [data], out: whole)
        resumed.resume = true
        #expect { try resumed.run() } throws: { error in "\(error)".contains("--resume: \(whole) was tuned with another space or other settings") }

        // A resume of the same run keeps every finished trial and runs none again: a trial run would add a line.
        let trialsFile = URL(fileURLWithPath: whole).appendingPathComponent(Tuner.trialsFile)
        let before = try Data(contentsOf: trialsFile)
        var again = TuningRun(space: space, data: [data], out: whole)
        again.resume = true
        _ = try again.run()
        #expect(try Data(contentsOf: trialsFile) == before)
    }

    /// A shard past the last trial has nothing to run and says so; bad settings are refused before any work.
    @Test func anEmptyShardWarnsAndBadSettingsAreRefused() throws {
        let data = try Self.data(), space = try Self.spaceFile()
        var run = TuningRun(space: space, data: [data], out: try Scratch.directory().path)
        run.shard = "5/6"
        var warnings: [String] = []
        _ = try run.run(warn: { warnings.append($0) })
        #expect(warnings == ["warning: shard 5/6 has no trials (the space has 4): nothing to run"])
        run.shard = nil
        run.holdout = 1.5
        #expect { try run.run() } throws: { error in "\(error)".contains("--holdout 1.5 must be a fraction between 0 and 1") }
        run.holdout = nil
        run.jobs = 0
        #expect { try run.run() } throws: { error in "\(error)".contains("--jobs 0 must be at least 1") }
    }
}
