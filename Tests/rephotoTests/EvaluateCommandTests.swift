import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation
import Testing

@Suite struct EvaluateCommandTests {
    static func synth(_ root: String, _ name: String, seed: Int) throws {
        let run = try CLI.run(["synth", "--out", "\(root)/\(name)", "--name", name, "--frames", "3", "--width", "240", "--height", "180",
                               "--seed", "\(seed)", "--textures", CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path])
        #expect(run.status == 0, "\(run.stderr)")
    }

    /// `--session`: both runs, the table, session.csv and session.json; --resume does not apply and is refused.
    @Test func evaluateSessions() throws {
        let root = SequenceCommandTests.directory()
        let made = try CLI.run(["synth", "--out", "\(root)/walk", "--name", "walk", "--frames", "6", "--width", "320", "--height", "240",
                                "--seed", "3", "--textures", CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path])
        #expect(made.status == 0, "\(made.stderr)")
        let out = SequenceCommandTests.directory()
        let run = try CLI.run(["evaluate", "--session", root, "--out", out, "--set", "session.robustEvery=3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("walk") && run.stdout.contains("session") && run.stdout.contains("ms trk p50/p95"), "\(run.stdout)")
        let csv = try String(contentsOfFile: "\(out)/session.csv", encoding: .utf8).split(separator: "\n")
        #expect(csv.count == 13 && csv.first.map(String.init) == SessionRow.columns.joined(separator: ","))
        // Frame 0 of the session waits for its robust update; frame 3's is joined two frames later (--robust-lag): all
        // the others are answered from tracking.
        #expect(csv.filter { $0.hasPrefix("session,") }.map { $0.split(separator: ",")[4] } == ["robust", "tracked", "tracked", "tracked", "tracked", "tracked"])
        let summary = try JSONDecoder().decode(SessionEvaluationSummary.self, from: Data(contentsOf: URL(fileURLWithPath: "\(out)/session.json")))
        #expect(summary.runs["robust"]?["walk"]?.robustFrames == 6 && summary.runs["session"]?["walk"]?.trackedFrames == 5)
        #expect(summary.runs["session"]?["walk"]?.robustFrames == 2)
        let inline = try CLI.run(["evaluate", "--session", root, "--out", SequenceCommandTests.directory(), "--set", "session.robustEvery=3",
                                  "--robust-lag", "0"])
        #expect(inline.status == 0 && inline.stdout.contains("walk"), "\(inline.stderr)")
        let badLag = try CLI.run(["evaluate", "--session", root, "--out", SequenceCommandTests.directory(), "--robust-lag", "-1"])
        #expect(badLag.status == 2 && badLag.stderr.contains("--robust-lag -1"), "\(badLag.stderr)")
        // Without --session it would be ignored: refused instead.
        let lagAlone = try CLI.run(["evaluate", root, "--out", SequenceCommandTests.directory(), "--robust-lag", "1"])
        #expect(lagAlone.status == 2 && lagAlone.stderr == "rephoto: --robust-lag 1 applies to --session runs only\n", "\(lagAlone.stderr)")
        let sessionJSON = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/session.json"))) as? [String: Any]
        #expect(sessionJSON?["schemaVersion"] as? Int == 2)
        // What made it, the table within 100 columns, what the person was told, and the page.
        #expect((sessionJSON?["provenance"] as? [String: Any])?["settingsChanged"] as? [String] == ["session.robustEvery=3"])
        // The table (the line naming the output folder after it is as long as the folder's path).
        #expect(run.stdout.split(separator: "\n").filter { !$0.hasPrefix("results in ") }.allSatisfy { $0.count <= 100 }, "\(run.stdout)")
        let rows = try String(contentsOfFile: "\(out)/session.csv", encoding: .utf8)
        // The last column: after the others' commas (none of them is quoted), unquoted as RFC 4180 says.
        let hints = rows.split(separator: "\n").dropFirst().map { line -> String in
            let field = line.split(separator: ",", maxSplits: SessionRow.columns.count - 1, omittingEmptySubsequences: false).last.map(String.init) ?? ""
            return field.hasPrefix("\"") ? String(field.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"") : field
        }
        #expect(SessionRow.columns.last == "hints" && hints.contains { !$0.isEmpty }, "\(hints)")
        let html = try String(contentsOfFile: "\(out)/session.html", encoding: .utf8)
        for part in ["<dl class=provenance>", "Answer source per frame", "Rotation and step errors per frame", "Time per frame", "Tracked correspondences per frame",
                     "What the person was told, frame by frame", "</b> tracked, "] {
            #expect(html.contains(part), "\(part)")
        }
        // Drawn by a browser: the source strip's and the cards' tracked green (#2ca02c) and robust blue (#1f77b4).
        if let shot = try Chromium.screenshot("\(out)/session.html") {
            #expect(try Chromium.count(shot, 0x2ca02c) > 500 && Chromium.count(shot, 0x1f77b4) > 200)
        }
        let told = try #require(hints.first { !$0.isEmpty })
        #expect(html.contains(EvaluationReport.escape(told)), "\(told)")
        let resumed = try CLI.run(["evaluate", "--session", root, "--out", out, "--resume"])
        #expect(resumed.status == 2 && resumed.stderr.contains("--resume and --shard do not apply"), "\(resumed.stderr)")
    }

    @Test func evaluateShardMergeCompare() throws {
        let root = SequenceCommandTests.directory()
        try Self.synth(root, "alpha", seed: 1)
        try Self.synth(root, "beta", seed: 2)
        // A terminal escape in the folder's name is written escaped in every line about it.
        let whole = SequenceCommandTests.directory() + "-\u{1B}[2J", shown = whole.replacingOccurrences(of: "\u{1B}", with: "\\u{1B}")
        let run = try CLI.run(["evaluate", root, "--out", whole, "--jobs", "2", "--no-thumbnails"])
        #expect(run.status == 0, "\(run.stderr)")
        // No progress bar on a non-terminal: plain progress lines only (the first frame's, every 5 s, the last).
        #expect(run.stderr.hasSuffix("evaluate: 6/6 frames\n")
            && run.stderr.split(separator: "\n").allSatisfy { $0.hasPrefix("evaluate: ") && $0.hasSuffix("/6 frames") }, "\(run.stderr)")
        #expect(run.stdout.contains("alpha") && run.stdout.contains("beta") && run.stdout.contains("mAA@5"))
        #expect(run.stdout.contains("results in \(shown)/ (frames.csv"), "\(run.stdout)")
        // Run again into the same folder without --resume: replaced, and said.
        let again = try CLI.run(["evaluate", "\(root)/alpha", "--out", whole, "--jobs", "2", "--no-thumbnails"])
        #expect(again.status == 0 && again.stderr.contains("replacing the earlier evaluation in \(shown) (6 frames"), "\(again.stderr)")
        let rerun = try CLI.run(["evaluate", root, "--out", whole, "--jobs", "2", "--no-thumbnails"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        for file in ["frames.csv", "summary.json", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: "\(whole)/\(file)"), "\(file)")
        }
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(whole)/summary.json"))) as? [String: Any]
        #expect(summary?["schemaVersion"] as? Int == 2)
        let state = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(whole)/run.json"))) as? [String: Any]
        #expect(state?["schemaVersion"] as? Int == 2)
        let overall = try #require(summary?["overall"] as? [String: Any])
        for key in ["frames", "failures", "successRate", "maa5", "maa10", "medianRotationErrorDegrees", "medianTranslationErrorDegrees",
                    "medianCornerErrorPixels", "medianScore", "medianSensorVisionAngleDegrees"] {
            #expect(overall.keys.contains(key), "\(key)")
        }
        #expect(overall["frames"] as? Int == 6)
        #expect(overall["medianCornerErrorPixels"] is NSNull)
        #expect((summary?["sequences"] as? [String: Any])?.keys.sorted() == ["alpha", "beta"])

        // `rephoto pose` on the same pair gives exactly what `evaluate` recorded (both decode to grey).
        let rows = try EvaluationRow.parse(String(contentsOfFile: "\(whole)/frames.csv", encoding: .utf8), path: "frames.csv")
        let first = try #require(rows.first { $0.sequence == "alpha" })
        // Undetermined translations counted by cause alike in frames.csv, summary.json and the printed table.
        let undetermined = overall["undeterminedTranslations"] as? [String: Int] ?? [:]
        let counted = rows.reduce(into: [String: Int]()) { c, r in if !r.failed, let cause = r.translationUndetermined { c[cause, default: 0] += 1 } }
        #expect(counted == undetermined)
        #expect(rerun.stdout.contains("translations undetermined: ") == !undetermined.isEmpty, "\(rerun.stdout)")
        for (cause, count) in undetermined { #expect(rerun.stdout.contains("\(cause) \(count)"), "\(rerun.stdout)") }
        let manifest = try FrameSequence.load(from: URL(fileURLWithPath: "\(root)/alpha"))
        let k = try #require(manifest.manifest.intrinsics)
        let pose = try CLI.run(["pose", "--reference", "\(root)/alpha/reference.jpg", "--current", "\(root)/alpha/\(first.file)",
                                "--intrinsics", "\(k.fx),\(k.fy),\(k.cx),\(k.cy)", "--json"])
        let poseBlock = try #require(pose.json?["pose"] as? [String: Any])
        // The same computation; the two texts may differ in the last digit (JSONSerialization's parsing).
        let viaPose = try #require(poseBlock["rotationDegrees"] as? Double), viaEvaluate = try #require(first.rotationDegrees)
        #expect(abs(viaPose - viaEvaluate) <= 1e-12 * max(1, abs(viaEvaluate)))

        let shards = (0..<2).map { _ in SequenceCommandTests.directory() }
        for (i, out) in shards.enumerated() {
            let part = try CLI.run(["evaluate", root, "--shard", "\(i)/2", "--out", out, "--no-thumbnails"])
            #expect(part.status == 0, "\(part.stderr)")
        }
        let merged = SequenceCommandTests.directory()
        #expect(try CLI.run(["evaluate", "merge"] + shards + ["--out", merged]).status == 0)
        // The merge's provenance: its own command, the shards' data together, the same as the whole run's.
        func provenance(_ folder: String) throws -> [String: Any] {
            try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(folder)/summary.json"))) as? [String: Any])?["provenance"] as? [String: Any])
        }
        let mergedProvenance = try provenance(merged), wholeProvenance = try provenance(whole)
        #expect((mergedProvenance["commandLine"] as? [String])?.dropFirst().first == "evaluate" && (mergedProvenance["commandLine"] as? [String])?.contains("merge") == true)
        #expect((mergedProvenance["sequences"] as? [String: String])?.keys.sorted() == ["alpha", "beta"])
        #expect(mergedProvenance["sequences"] as? [String: String] == wholeProvenance["sequences"] as? [String: String])
        #expect(mergedProvenance["settingsHash"] as? String == wholeProvenance["settingsHash"] as? String)
        // Shards evaluated with other settings make one summary of neither (merged silently, found by probing).
        let orb = SequenceCommandTests.directory()
        #expect(try CLI.run(["evaluate", root, "--shard", "1/2", "--detector", "orb", "--out", orb, "--no-thumbnails"]).status != 2)
        let unlike = try CLI.run(["evaluate", "merge", shards[0], orb, "--out", SequenceCommandTests.directory()])
        #expect(unlike.status == 2 && unlike.stderr.contains("was evaluated with other settings than"), "\(unlike.stderr)")
        let compare = try CLI.run(["evaluate", "compare", whole, merged, "--json"])
        #expect(compare.status == 0)
        let lines = try #require(try JSONSerialization.jsonObject(with: Data(compare.stdout.utf8)) as? [String: Any])["lines"] as? [[String: Any]]
        let maa = try #require(lines?.first { $0["scope"] as? String == "overall" && $0["metric"] as? String == "maa10" })
        #expect(maa["better"] as? String == "same")
        let human = try CLI.run(["evaluate", "compare", whole, merged])
        #expect(human.stdout.contains("medianRotationErrorDegrees") && human.stdout.contains("same"))

        // A shard's frames.csv with values no evaluation writes is refused before anything is written: a negative
        // error scored mAA 1, infinity broke the summary half-way, a duplicated row counted twice (found by probing).
        let csv = try String(contentsOfFile: "\(shards[0])/frames.csv", encoding: .utf8)
        let rowsText = csv.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let header = rowsText[0].split(separator: ",").map(String.init)
        let column = try #require(header.firstIndex(of: "rotation_error_deg"))
        func edited(_ change: (inout [String]) -> Void) -> String {
            var fields = rowsText[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            change(&fields)
            var copy = rowsText
            copy[1] = fields.joined(separator: ",")
            return copy.joined(separator: "\n")
        }
        for (text, message) in [(edited { $0[column] = "-5" }, "column 'rotation_error_deg': '-5' is not a finite number at least 0"),
                                (edited { $0[column] = "inf" }, "column 'rotation_error_deg': 'inf' is not a finite number"),
                                (edited { $0[header.firstIndex(of: "status")!] = "weird" }, "status 'weird' is neither ok nor failed"),
                                (csv + rowsText[1] + "\n", "appears twice")] {
            let shard = SequenceCommandTests.directory()
            try FileManager.default.copyItem(atPath: shards[0], toPath: shard)
            try text.write(toFile: "\(shard)/frames.csv", atomically: true, encoding: .utf8)
            let out = SequenceCommandTests.directory()
            let run = try CLI.run(["evaluate", "merge", shard, shards[1], "--out", out])
            #expect(run.status == 2 && run.stderr.contains(message), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(out)/frames.csv"))
        }
    }

    /// Intrinsics for another resolution fit no frame of the sequence: evaluate refuses the sequence as bad input (exit 2,
    /// naming the file, the camera and the value), not evaluated into rows that all fail alike (exit 3); tune refuses it.
    /// A session runs every frame through one camera: a frame of another size is bad input (exit 2), naming the
    /// frame and both sizes, not a confident answer from the wrong camera.
    @Test func sessionFramesOfAnotherSizeAreBadInput() throws {
        let root = SequenceCommandTests.directory(), other = SequenceCommandTests.directory()
        try Self.synth(root, "walk", seed: 3)
        let made = try CLI.run(["synth", "--out", "\(other)/big", "--frames", "2", "--width", "320", "--height", "240",
                                "--textures", CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path])
        #expect(made.status == 0, "\(made.stderr)")
        try FileManager.default.removeItem(atPath: "\(root)/walk/frame-0001.jpg")
        try FileManager.default.copyItem(atPath: "\(other)/big/frame-0001.jpg", toPath: "\(root)/walk/frame-0001.jpg")
        let run = try CLI.run(["evaluate", "--session", root, "--out", SequenceCommandTests.directory()])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("walk/frame-0001.jpg: 320x240, but the sequence's camera is for 240x180 frames (frame-0000.jpg): a session has one camera"),
                "\(run.stderr)")
    }

    /// The reference's own row twice in frames.csv: which attitude counts would be chosen silently; refused.
    @Test func aReferenceListedTwiceIsRefused() throws {
        let root = SequenceCommandTests.directory()
        try Self.synth(root, "twice", seed: 3)
        let csv = "\(root)/twice/frames.csv"
        let lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let referenceRow = try #require(lines.first { $0.hasPrefix("reference.jpg,") })
        try (lines.joined(separator: "\n") + String(referenceRow) + "\n").write(toFile: csv, atomically: true, encoding: .utf8)
        let run = try CLI.run(["evaluate", root, "--out", SequenceCommandTests.directory(), "--no-thumbnails"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("twice/frames.csv: the reference reference.jpg is listed twice (lines 2 and 6)"), "\(run.stderr)")
    }

    @Test func intrinsicsForAnotherResolutionAreBadInput() throws {
        let root = SequenceCommandTests.directory()
        try Self.synth(root, "shifted", seed: 4)
        let manifest = URL(fileURLWithPath: "\(root)/shifted/sequence.json")
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifest)) as? [String: Any])
        var intrinsics = try #require(json["intrinsics"] as? [String: Any])
        intrinsics["cx"] = 900.5
        json["intrinsics"] = intrinsics
        try JSONSerialization.data(withJSONObject: json).write(to: manifest)
        let run = try CLI.run(["evaluate", root, "--out", SequenceCommandTests.directory(), "--no-thumbnails"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("not evaluated:") && run.stderr.contains("reference.jpg: the reference's camera")
            && run.stderr.contains("principal point (900"), "\(run.stderr)")
        let tune = try CLI.run(["tune", try TuneCommandTests.spaceFile(), "--data", root, "--out", SequenceCommandTests.directory()])
        #expect(tune.status == 2 && tune.stderr.contains("the reference's camera") && tune.stderr.contains("principal point (900"), "\(tune.stderr)")
    }

    @Test func exitCodesSayWhatFailed() throws {
        let root = SequenceCommandTests.directory()
        try Self.synth(root, "good", seed: 3)
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: "\(root)/good/frame-0002.jpg"))
        let failed = try CLI.run(["evaluate", root, "--out", SequenceCommandTests.directory(), "--no-thumbnails"])
        #expect(failed.status == 3, "\(failed.stderr)")
        // The terminal names the frame that failed; without a terminal (a pipe here) plain progress lines show the run is alive.
        #expect(failed.stdout.contains("\nfailed frames: good #3 (frame-0002.jpg)\n"), "\(failed.stdout)")
        #expect(failed.stderr.contains("evaluate: 3/3 frames\n") && failed.stderr.contains("evaluate: 1/3 frames\n"), "\(failed.stderr)")
        try FileManager.default.createDirectory(atPath: "\(root)/broken", withIntermediateDirectories: true)
        try Data("{".utf8).write(to: URL(fileURLWithPath: "\(root)/broken/sequence.json"))
        let broken = try CLI.run(["evaluate", root, "--out", SequenceCommandTests.directory(), "--no-thumbnails"])
        #expect(broken.status == 2)
        #expect(broken.stderr.contains("rephoto: not evaluated:") && broken.stderr.contains("broken/sequence.json"))
        for (arguments, message) in [(["--shard", "2/2"], "--shard '2/2' must be i/n"), (["--jobs", "0"], "--jobs 0 must be at least 1")] {
            let run = try CLI.run(["evaluate", root, "--out", SequenceCommandTests.directory()] + arguments)
            #expect(run.status == 2 && run.stderr.contains(message), "\(run.stderr)")
        }
        let none = try CLI.run(["evaluate", "/nonexistent-folder"])
        #expect(none.status == 2 && none.stderr.contains("/nonexistent-folder: no such folder"))
        let loop = SequenceCommandTests.directory()
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
        let looped = try CLI.run(["evaluate", loop])
        #expect(looped.status == 2 && looped.stderr.contains("\(loop): cannot open (Too many levels of symbolic links)"), "\(looped.stderr)")
        let notFolder = try CLI.run(["evaluate", try CLI.temporaryFile("frames.csv", Data("x".utf8))])
        #expect(notFolder.status == 2 && notFolder.stderr.contains("frames.csv: not a folder"), "\(notFolder.stderr)")
        // An unusable --out is refused before any frame is evaluated, with the reason.
        let file = try CLI.temporaryFile("not-a-folder", Data("x".utf8))
        for (out, message) in [("", "--out is empty"), ("\(file)/results", "\(file) is a file, not a folder")] {
            let start = ContinuousClock.now
            let run = try CLI.run(["evaluate", root, "--out", out])
            #expect(run.status == 2 && run.stderr.contains(message), "\(run.stderr)")
            #expect(ContinuousClock.now - start < .seconds(5), "refused only after the work")
        }
    }

    /// frames.csv writes counts as whole numbers, and a sequence with no frame besides its reference is listed
    /// as broken instead of vanishing from the summary.
    @Test func countsAreWholeNumbersAndEmptySequencesAreListed() throws {
        let root = SequenceCommandTests.directory()
        try Self.synth(root, "good", seed: 5)
        try FileManager.default.createDirectory(atPath: "\(root)/empty", withIntermediateDirectories: true)
        try Data(#"{"name": "empty", "reference": "reference.jpg", "intrinsics": {"fx": 100, "fy": 100, "cx": 50, "cy": 40}}"#.utf8)
            .write(to: URL(fileURLWithPath: "\(root)/empty/sequence.json"))
        try Data("file\nreference.jpg\n".utf8).write(to: URL(fileURLWithPath: "\(root)/empty/frames.csv"))
        let out = SequenceCommandTests.directory()
        let run = try CLI.run(["evaluate", root, "--out", out, "--no-thumbnails"])
        #expect(run.status == 2 && run.stderr.contains("frames.csv lists no frame to evaluate"), "\(run.stderr)")
        let csv = try String(contentsOfFile: "\(out)/frames.csv", encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let matches = try #require(csv[0].firstIndex(of: "matches"))
        #expect(csv.count > 1 && csv.dropFirst().allSatisfy { Int($0[matches]) != nil }, "\(csv.dropFirst().map { $0[matches] })")
    }
}
