import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoEvaluation

/// Durable `rephoto evaluate` runs (issue 9, item 7), tested by signalling and killing real runs.
@Suite(.serialized) struct DurableRunTests {
    /// An 80-frame synthetic sequence (480x360), rendered once, and its uninterrupted evaluation.
    static let fixture: Result<(sequence: String, rows: [EvaluationRow], results: String), Error> = Result {
        let sequence = try Scratch.directory().appendingPathComponent("durable-80").path
        let made = try CLI.run(["synth", "--frames", "80", "--width", "480", "--height", "360", "--out", sequence, "--name", "durable"])
        guard made.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: made.stderr]) }
        let out = try Scratch.directory().appendingPathComponent("durable-clean").path
        let clean = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails", "--jobs", "1"])
        guard clean.status == 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: clean.stderr]) }
        return (sequence, try rows(out), out)
    }

    static func rows(_ out: String) throws -> [EvaluationRow] {
        try EvaluationRow.parse(String(contentsOfFile: out + "/frames.csv", encoding: .utf8), path: out)
    }

    /// A row without its timings, which differ from run to run.
    static func timeless(_ row: EvaluationRow) -> EvaluationRow {
        var r = row
        r.timeDetectReferenceMs = nil; r.timeDetectCurrentMs = nil; r.timeMatchMs = nil
        r.timeHomographyMs = nil; r.timeEssentialMs = nil; r.timeTotalMs = nil
        return r
    }

    static func state(_ out: String) throws -> EvaluationRunState? { try EvaluationRunState.load(URL(fileURLWithPath: out)) }

    static func lines(_ path: String) -> Int {
        (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").count ?? 0
    }

    /// Starts `rephoto evaluate` on the fixture and waits until `rows` frames are in frames.csv.
    static func start(_ out: String, rows: Int, extra: [String] = []) throws -> Process {
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["evaluate", try fixture.get().sequence, "--out", out, "--no-thumbnails", "--jobs", "1"] + extra
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while lines(out + "/frames.csv") < rows + 1, process.isRunning, Date() < deadline { usleep(20_000) }
        return process
    }

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func signalWritesAPartialSummaryAndResumeCompletesIt(signal: Int32, exitCode: Int32) throws {
        let clean = try Self.fixture.get().rows
        let out = try Scratch.directory().appendingPathComponent("durable-signal-\(signal)").path
        let process = try Self.start(out, rows: 5)
        // Rows are on disk while the run goes on, and the folder says it is in progress.
        #expect(process.isRunning)
        #expect(try Self.state(out)?.state == .inProgress)
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationStatus == exitCode)

        let state = try #require(try Self.state(out))
        let rows = try Self.rows(out)
        #expect(state.state == .interrupted)
        #expect(rows.count >= 5 && rows.count < clean.count, "\(rows.count) rows")
        #expect(state.framesDone == rows.count && state.framesPlanned == clean.count)
        let summary = try EvaluationOutput.loadSummary(URL(fileURLWithPath: out))
        #expect(summary.complete == false && summary.framesPlanned == clean.count && summary.overall.frames == rows.count)
        #expect(try String(contentsOfFile: out + "/report.html", encoding: .utf8).contains("Partial run"))
        // Every finished row is the row an uninterrupted run gives.
        let byIndex = Dictionary(uniqueKeysWithValues: clean.map { ($0.index, Self.timeless($0)) })
        #expect(rows.allSatisfy { byIndex[$0.index] == Self.timeless($0) })

        let resumed = try CLI.run(["evaluate", try Self.fixture.get().sequence, "--out", out, "--no-thumbnails", "--jobs", "1", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("resuming"))
        #expect(try Self.state(out)?.state == .complete)
        #expect(try Self.rows(out).map(Self.timeless) == clean.map(Self.timeless))
        #expect(try EvaluationOutput.loadSummary(URL(fileURLWithPath: out)).complete == true)
    }

    /// Past --grace the frames still running are abandoned and what is finished is written (here at once).
    @Test func graceBoundsTheWaitForFramesInFlight() throws {
        let out = try Scratch.directory().appendingPathComponent("durable-grace").path
        let process = try Self.start(out, rows: 3, extra: ["--grace", "0"])
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 130)
        let state = try #require(try Self.state(out))
        let rows = try Self.rows(out)
        #expect(state.state == .interrupted && state.framesDone == rows.count)
        #expect(try EvaluationOutput.loadSummary(URL(fileURLWithPath: out)).complete == false)
    }

    @Test func killedRunStaysInProgressAndResumesWithoutRedoingFrames() throws {
        let clean = try Self.fixture.get().rows
        let out = try Scratch.directory().appendingPathComponent("durable-kill").path
        let process = try Self.start(out, rows: 8)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let state = try #require(try Self.state(out))
        #expect(state.state == .inProgress)  // never mistaken for a finished run
        #expect(!FileManager.default.fileExists(atPath: out + "/summary.json"))
        let done = try Self.rows(out)
        #expect(done.count >= 8)

        let resumed = try CLI.run(["evaluate", try Self.fixture.get().sequence, "--out", out, "--no-thumbnails", "--jobs", "1", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("\(done.count) of \(clean.count) frames already done"))
        let rows = try Self.rows(out)
        #expect(rows.map(Self.timeless) == clean.map(Self.timeless))
        // The frames finished before the kill kept their own timings: they were not evaluated again.
        for row in done { #expect(rows.first { $0.index == row.index }?.timeTotalMs == row.timeTotalMs) }
    }

    /// A disk that fills as the run ends (here `ulimit -f` of 6 KB on a 5-frame run: frames.csv, run.json and the
    /// summary fit, report.html does not) leaves the folder saying what it holds: run.json in progress and no
    /// summary claiming a finished run (the summary was written first and said complete); --resume finishes it.
    @Test func aRunThatCannotWriteItsReportIsNotMarkedComplete() throws {
        let sequence = try Scratch.directory().appendingPathComponent("durable-5").path
        let made = try CLI.run(["synth", "--frames", "5", "--width", "480", "--height", "360", "--out", sequence, "--name", "five"])
        try #require(made.status == 0, "\(made.stderr)")
        let out = try Scratch.directory().appendingPathComponent("durable-full").path
        let run = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails", "--jobs", "1"], fileSizeLimitBlocks: 12)
        #expect(run.status != 0 && run.stderr.contains("report.html")
            && run.stderr.split(separator: "\n").filter { !$0.hasPrefix("evaluate: ") }.count == 1, "\(run.status) \(run.stderr)")
        #expect(try Self.state(out)?.state == .inProgress)
        #expect(!FileManager.default.fileExists(atPath: out + "/summary.json"))

        let resumed = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails", "--jobs", "1", "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try Self.state(out)?.state == .complete)
        #expect(try EvaluationOutput.loadSummary(URL(fileURLWithPath: out)).complete == true)
        #expect(try Self.rows(out).count == 5)
        let report = try FileManager.default.attributesOfItem(atPath: out + "/report.html")[.size] as? Int ?? 0
        #expect(report > 12 * 512, "the limit must stop the report: \(report) bytes")
    }

    @Test func earlierResultsAreRemovedBeforeANewRunStarts() throws {
        // An earlier run's folder (a folder of other files is refused: SequenceCommandTests).
        let out = try Scratch.directory().appendingPathComponent("durable-old").path
        try FileManager.default.copyItem(atPath: try Self.fixture.get().results, toPath: out)
        try FileManager.default.createDirectory(atPath: out + "/thumbnails/old", withIntermediateDirectories: true)
        for name in ["frames.csv", "report.html", "thumbnails/old/best.jpg"] {
            try Data("from an earlier run".utf8).write(to: URL(fileURLWithPath: out + "/" + name))
        }
        let process = try Self.start(out, rows: 1)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try Self.state(out)?.state == .inProgress)
        for name in ["summary.json", "report.html", "thumbnails"] { #expect(!FileManager.default.fileExists(atPath: out + "/" + name), "\(name)") }
        #expect(try !String(contentsOfFile: out + "/frames.csv", encoding: .utf8).contains("earlier"))
    }

    @Test func resumeRefusesWhatItCannotContinue() throws {
        let sequence = try Self.fixture.get().sequence
        let empty = try Scratch.directory().appendingPathComponent("durable-none").path
        let none = try CLI.run(["evaluate", sequence, "--out", empty, "--resume"])
        #expect(none.status == 2 && none.stderr.contains("no run to resume"), "\(none.stderr)")

        let out = try Scratch.directory().appendingPathComponent("durable-other").path
        let process = try Self.start(out, rows: 1)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let other = try CLI.run(["evaluate", sequence, "--out", out, "--resume", "--detector", "orb"])
        #expect(other.status == 2 && other.stderr.contains("used other settings"), "\(other.stderr)")
        // Merging an unfinished run is refused rather than passed off as complete.
        let merged = try CLI.run(["evaluate", "merge", out, "--out", try Scratch.directory().appendingPathComponent("durable-merge").path])
        #expect(merged.status == 2 && merged.stderr.contains("in-progress"), "\(merged.stderr)")
    }

    /// Rows kept by --resume were scored against the truth and images of their time: a sequence whose
    /// frames.csv changed since is refused (resuming kept rows 0.13° off where a fresh run found 179.87°, found
    /// by probing), and so is one whose images were replaced.
    @Test func resumeRefusesASequenceThatChanged() throws {
        let samples = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let sequence = try Scratch.directory().appendingPathComponent("durable-changed-sequence").path
        let made = try CLI.run(["synth", "--out", sequence, "--frames", "2", "--width", "160", "--height", "120", "--textures", samples])
        #expect(made.status == 0, "\(made.stderr)")
        let out = try Scratch.directory().appendingPathComponent("durable-changed").path
        _ = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails"])
        let same = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails", "--resume"])
        #expect(same.status != 2, "\(same.stderr)")
        // An image replaced under the same name: its row had been scored on the old one.
        let image = sequence + "/frame-0001.jpg"
        try FileManager.default.removeItem(atPath: image)
        try FileManager.default.copyItem(atPath: sequence + "/frame-0000.jpg", toPath: image)
        let replaced = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails", "--resume"])
        #expect(replaced.status == 2 && replaced.stderr.contains("changed since the run in \(out) began (a file added"), "\(replaced.stderr)")
        _ = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails"])
        let frames = URL(fileURLWithPath: sequence + "/frames.csv")
        try (try Data(contentsOf: frames) + Data("\n".utf8)).write(to: frames)
        let changed = try CLI.run(["evaluate", sequence, "--out", out, "--no-thumbnails", "--resume"])
        #expect(changed.status == 2 && changed.stderr.contains("changed since the run in \(out) began (sequence.json"), "\(changed.stderr)")
        // A result folder inside the sequence is the run's own writing, not a change to the sequence.
        _ = try CLI.run(["evaluate", sequence, "--out", sequence + "/results", "--no-thumbnails"])
        let inside = try CLI.run(["evaluate", sequence, "--out", sequence + "/results", "--no-thumbnails", "--resume"])
        #expect(inside.status != 2, "\(inside.stderr)")
    }

    @Test func unwritableOutputIsRefusedBeforeAnyWork() throws {
        let file = try Fixtures.temporaryFile("not-a-folder", Data("x".utf8))
        let start = Date()
        let run = try CLI.run(["evaluate", try Self.fixture.get().sequence, "--out", file + "/results"])
        #expect(run.status == 2 && run.stderr.contains("cannot write results there"), "\(run.stderr)")
        #expect(Date().timeIntervalSince(start) < 5)
    }
}
