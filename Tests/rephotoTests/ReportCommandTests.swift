import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoEvaluation
import Testing

/// What made an output, said in it; comparisons only of like with like; the tuning budget and report; pictures
/// that explain themselves.
@Suite struct ReportCommandTests {
    static func json(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    @Test func evaluateRecordsItsProvenanceAndCompareNamesWhatDiffers() throws {
        let root = SequenceCommandTests.directory()
        try EvaluateCommandTests.synth(root, "alpha", seed: 1)
        let akaze = SequenceCommandTests.directory(), orb = SequenceCommandTests.directory()
        let first = try CLI.run(["evaluate", root, "--out", akaze, "--jobs", "1", "--no-thumbnails"])
        #expect(first.status == 0, "\(first.stderr)")
        let second = try CLI.run(["evaluate", root, "--out", orb, "--jobs", "1", "--no-thumbnails", "--detector", "orb"])
        #expect(second.status == 0 || second.status == 3, "\(second.stderr)")

        // The defaults' hash is sha256sum of what `rephoto defaults` prints, without its final newline.
        let defaults = try CLI.run(["defaults"])
        let hash = try sha256sum(String(defaults.stdout.dropLast()))
        let summary = try Self.json("\(akaze)/summary.json"), provenance = try #require(summary["provenance"] as? [String: Any])
        #expect(provenance["settingsHash"] as? String == hash)
        #expect((provenance["settingsChanged"] as? [String])?.isEmpty == true)
        #expect(provenance["version"] as? String == (try CLI.run(["--version"])).stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect((provenance["commandLine"] as? [String])?.dropFirst().elementsEqual(["evaluate", root, "--out", akaze, "--jobs", "1", "--no-thumbnails"]) == true)
        #expect((provenance["started"] as? String)?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression) != nil)
        #expect((provenance["sequences"] as? [String: String])?["alpha"] == EvaluationRunState.digest(ofSequenceAt: "\(root)/alpha"))
        let orbProvenance = try #require((try Self.json("\(orb)/summary.json"))["provenance"] as? [String: Any])
        #expect(orbProvenance["settingsChanged"] as? [String] == ["features.detector=orb"])
        #expect(orbProvenance["settingsHash"] as? String != hash)
        #expect(((try Self.json("\(orb)/run.json"))["provenance"] as? [String: Any])?["settingsChanged"] as? [String] == ["features.detector=orb"])
        // The two reports tell themselves apart at the top.
        let report = try String(contentsOfFile: "\(orb)/report.html", encoding: .utf8)
        let header = try #require(report.range(of: "<dl class=provenance>"))
        #expect(report[header.lowerBound...].prefix(1200).contains("<dt>detector</dt><dd>orb</dd>"))
        #expect(report.contains("<code>features.detector=orb</code>") && report.contains(RephotoVersion.number))

        // Compare: A and B named by folder, the settings that differ, columns in line, the threshold rule.
        let compare = try CLI.run(["evaluate", "compare", akaze, orb])
        #expect(compare.status == 0, "\(compare.stderr)")
        let lines = compare.stdout.split(separator: "\n").map(String.init)
        #expect(lines[0].hasPrefix("A: \(akaze) (akaze, started ") && lines[1].hasPrefix("B: \(orb) (orb, started "))
        #expect(lines.contains("  features.detector: A default, B orb"))
        let head = try #require(lines.firstIndex { $0.hasPrefix("scope") })
        let metricColumn = try #require(lines[head].range(of: "metric")).lowerBound.utf16Offset(in: lines[head])
        for line in lines[(head + 1)...] where !line.hasPrefix("better:") {
            // Every scope fits its column: the metric starts where the header's does.
            #expect(Array(line.utf16)[metricColumn - 1] == UInt16(UInt8(ascii: " ")) && Array(line.utf16)[metricColumn] != UInt16(UInt8(ascii: " ")), "\(line)")
        }
        #expect(lines.last?.hasPrefix("better: the side whose value is better by at least the threshold (mAA and success rate 0.01") == true)

        // Another data set: refused, naming what differs.
        try EvaluateCommandTests.synth(root, "beta", seed: 2)
        let both = SequenceCommandTests.directory()
        #expect(try CLI.run(["evaluate", root, "--out", both, "--jobs", "1", "--no-thumbnails"]).status == 0)
        let refused = try CLI.run(["evaluate", "compare", akaze, both])
        #expect(refused.status == 2 && refused.stderr.contains("evaluated different data: only B has beta"), "\(refused.stderr)")
    }

    @Test func tuneTakesABudgetAndWritesItsReport() throws {
        let data = try TuneCommandTests.data(), space = try TuneCommandTests.spaceFile()
        let out = SequenceCommandTests.directory()
        let run = try CLI.run(["tune", space, "--data", data, "--out", out, "--jobs", "2", "--trials", "3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try TuneCommandTests.trials(out).map(\.trial) == [0, 1, 2])
        let result = try Self.json("\(out)/tuning.json")
        let leaderboard = try String(contentsOfFile: "\(out)/leaderboard.csv", encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let best = try #require(result["best"] as? [String: Any])
        // tuning.json's best is the leaderboard's first row, its objective exact; people see it rounded.
        #expect(best["trial"] as? Int == Int(leaderboard[1][1]))
        let exact = try #require(Double(String(leaderboard[1][2])))
        #expect((best["objective"] as? Double).map { abs($0 - exact) < 1e-15 } == true)
        #expect(run.stdout.contains("best by maa10: trial \(leaderboard[1][1]), \(String(format: "%.4f", exact)) ("), "\(run.stdout)")
        #expect((result["tieRule"] as? String)?.hasPrefix("equal objectives rank by trial id") == true)
        #expect((result["importance"] as? [[String: Any]])?.map { $0["path"] as? String } == ["matching.ratio", "pose.essential.threshold"])
        #expect(result["stoppedAtTimeout"] as? Bool == false && result["trials"] as? Int == 3)
        #expect(((result["provenance"] as? [String: Any])?["settingsChanged"] as? [String])?.isEmpty == true)
        let html = try String(contentsOfFile: "\(out)/tuning.html", encoding: .utf8)
        for part in ["<dl class=provenance>", "Optimisation history", "Parallel coordinates", "Parameter importance", "Pareto front",
                     "pose.essential.threshold (log scale)", "main-effect variance share"] {
            #expect(html.contains(part), "\(part)")
        }
        // Nothing fetched: the SVG namespace is a name, not an address.
        let fetched = html.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "")
        #expect(!html.contains("<script") && !fetched.contains("http://") && !fetched.contains("https://"))
        // Drawn by a browser: the best-so-far line and the Pareto front (#dd2222), the trials' dots (#3366cc), the
        // importance bars and the parallel coordinates' scale from dark blue to yellow (#fde725).
        if let shot = try Chromium.screenshot("\(out)/tuning.html", height: 2200) {
            #expect((shot.width, shot.height) == (1280, 2200))
            #expect(try Chromium.count(shot, 0xdd2222) > 300 && Chromium.count(shot, 0x3366cc) > 1000 && Chromium.count(shot, 0xfde725) > 100)
        }

        // --timeout: the first trial always runs; none starts after the deadline.
        let timed = SequenceCommandTests.directory()
        let stopped = try CLI.run(["tune", space, "--data", data, "--out", timed, "--jobs", "2", "--timeout", "0.001s"])
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(try TuneCommandTests.trials(timed).map(\.trial) == [0])
        #expect(stopped.stdout.contains("stopped at --timeout"), "\(stopped.stdout)")
        #expect((try Self.json("\(timed)/tuning.json"))["stoppedAtTimeout"] as? Bool == true)
        for (arguments, words) in [(["--timeout", "10x"], "--timeout '10x' must be a duration such as 90s"), (["--trials", "0"], "--trials 0 must be 1 to 1000000")] {
            let bad = try CLI.run(["tune", space, "--data", data, "--out", SequenceCommandTests.directory()] + arguments)
            #expect(bad.status == 2 && bad.stderr.contains(words), "\(bad.stderr)")
        }
    }

    @Test func aFailedPoseStillDrawsItsMatchesAndSaysWhy() throws {
        let out = try Scratch.directory().appendingPathComponent("failed.png").path
        let run = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("baboon.jpg"), "--draw", out])
        #expect(run.status == 3, "\(run.stderr)")
        let drawn = try Image(contentsOfFile: out), plain = try Image(contentsOfFile: CLI.sample("baboon.jpg"))
        #expect((drawn.width, drawn.height) == (plain.width, plain.height))
        // The caption's band darkens the bottom rows; the legend the top-left corner.
        func mean(_ image: Image, rows: Range<Int>, columns: Range<Int>) throws -> Double {
            let pixels = try image.pixels(), channels = pixels.count / (image.width * image.height)
            var sum = 0.0
            for y in rows { for x in columns { sum += Double(pixels[(y * image.width + x) * channels]) } }
            return sum / Double(rows.count * columns.count)
        }
        let bottom = (drawn.height - 6)..<drawn.height, corner = 2..<8
        #expect(try mean(drawn, rows: bottom, columns: 0..<drawn.width) < 0.5 * mean(plain, rows: bottom, columns: 0..<plain.width))
        #expect(try mean(drawn, rows: corner, columns: corner) < 0.6 * mean(plain, rows: corner, columns: corner))
    }

    @Test func aSplitAlignmentHasADivider() throws {
        let out = try Scratch.directory().appendingPathComponent("split.png").path
        let run = try CLI.run(["align", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--mode", "split", "--out", out])
        #expect(run.status == 0, "\(run.stderr)")
        let image = try Image(contentsOfFile: out), pixels = try image.pixels()
        let channels = pixels.count / (image.width * image.height)
        // Every row is white at the middle column, black just left of the white line.
        let middle = image.width / 2
        let white = (0..<image.height).allSatisfy { y in (0..<channels).allSatisfy { pixels[(y * image.width + middle) * channels + $0] == 255 } }
        let width = max(1, Int((Double(max(image.width, image.height)) / 500).rounded()))
        let black = (0..<image.height).allSatisfy { y in (0..<channels).allSatisfy { pixels[(y * image.width + middle - width - 1) * channels + $0] == 0 } }
        #expect(white && black)
    }
}

/// A page as headless Chromium draws it, and how many of its pixels are near a colour; nil without Chromium.
enum Chromium {
    static let path = "/usr/bin/chromium"

    static func screenshot(_ page: String, width: Int = 1280, height: Int = 1600) throws -> Image? {
        guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
        let png = try Scratch.directory().appendingPathComponent("page.png").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=\(width),\(height)",
                             "--screenshot=\(png)", URL(fileURLWithPath: page).absoluteString]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return try Image(contentsOfFile: png)
    }

    /// Pixels within 30 of the colour (#rrggbb) in every channel.
    static func count(_ image: Image, _ hex: Int) throws -> Int {
        let pixels = try image.pixels(), (r, g, b) = (hex >> 16, (hex >> 8) & 0xFF, hex & 0xFF)
        return stride(from: 0, to: pixels.count, by: 3).filter {
            abs(Int(pixels[$0]) - b) < 30 && abs(Int(pixels[$0 + 1]) - g) < 30 && abs(Int(pixels[$0 + 2]) - r) < 30
        }.count
    }
}
