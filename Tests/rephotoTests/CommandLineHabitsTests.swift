import RephotoTestSupport
import Foundation
import Testing

/// What users of git and swift-argument-parser tools expect: a "did you mean" for a mistyped subcommand or
/// parameter, short flags for the common options, and data given to `tune` as `evaluate` takes it.
@Suite struct CommandLineHabitsTests {
    @Test func mistypedNamesGetTheClosestOne() throws {
        let cases: [([String], String)] = [
            (["evalute", "datasets"], "rephoto: unknown subcommand 'evalute' of 'rephoto' (did you mean 'evaluate'?); one of: pose, align, serve, evaluate, tune, synth, import, calibrate, defaults\n"),
            (["import", "vidoe", "x.mp4"], "rephoto: unknown subcommand 'vidoe' of 'rephoto import' (did you mean 'video'?); one of: strecha, opencv-samples, video\n"),
            (["pose", "--reference", "a.jpg", "--current", "b.jpg", "--set", "matching.ratoi=0.8"],
             "rephoto: --set: unknown parameter 'matching.ratoi' (did you mean 'matching.ratio'?) (rephoto defaults lists them all)\n"),
            // Nothing near: no guess.
            (["pose", "--reference", "a.jpg", "--current", "b.jpg", "--set", "zzzz=1"], "rephoto: --set: unknown parameter 'zzzz' (rephoto defaults lists them all)\n"),
        ]
        for (arguments, message) in cases {
            let run = try CLI.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr == message, "\(arguments): \(run.stderr)")
        }
        // A config file's misspelt key too.
        let config = try CLI.temporaryFile("settings.yml", Data("matching:\n  ratoi: 0.8\n".utf8))
        let file = try CLI.run(["pose", "--reference", "a.jpg", "--current", "b.jpg", "--config", config])
        #expect(file.status == 2 && file.stderr.contains("unknown key 'ratoi' (did you mean 'ratio'?)"), "\(file.stderr)")
    }

    @Test func shortFlagsAndTuneDataArguments() throws {
        for (command, flags) in [(["evaluate", "run"], ["-j, --jobs <jobs>", "-o, --out <out>"]), (["tune", "run"], ["-j, --jobs <jobs>", "-o, --out <out>"]),
                                 (["synth"], ["-o, --out <out>"]), (["calibrate"], ["-o, --out <out>"]), (["align"], ["-o, --out <out>"]),
                                 (["import", "video"], ["-o, --out <out>"]), (["serve"], ["-j, --concurrency <concurrency>", "-p, --port <port>"])] {
            let help = try CLI.run(command + ["--help"])
            for flag in flags { #expect(help.stdout.contains(flag), "\(command): \(flag)") }
        }
        // The data after the space, as evaluate takes it (--data still works).
        let space = try TuneCommandTests.spaceFile()
        let missing = try CLI.run(["tune", space, "/nonexistent-data", "-o", SequenceCommandTests.directory()])
        #expect(missing.status == 2 && missing.stderr == "rephoto: /nonexistent-data: no such folder\n", "\(missing.stderr)")
        let old = try CLI.run(["tune", space, "--data", "/nonexistent-data", "-o", SequenceCommandTests.directory()])
        #expect(old.status == 2 && old.stderr == "rephoto: /nonexistent-data: no such folder\n", "\(old.stderr)")
        let none = try CLI.run(["tune", space, "-o", SequenceCommandTests.directory()])
        #expect(none.status == 2 && none.stderr == "rephoto: no data: name sequence folders after the space (rephoto tune SPACE DATA...)\n", "\(none.stderr)")
    }
}
