import ArgumentParser
import Foundation
import RephotoData
import RephotoEvaluation
import RephotoKit

struct TuneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tune",
        abstract: "Search parameter configurations over sequences with ground truth (docs/tuning.md).",
        discussion: "Outputs in --out: space.yaml and tune.json (what the run is), trials.jsonl (one line per finished trial), leaderboard.csv, tuning.json (provenance, best trial, ties, edges, importance), tuning.html, pareto.svg, sensitivity.svg, best.yaml (accepted by pose, evaluate and serve with --config) and summary.txt. --resume continues a killed run without repeating a finished trial; --shard i/n runs every n-th trial, `rephoto tune merge` combines the folders.",
        subcommands: [Run.self, Merge.self],
        defaultSubcommand: Run.self)

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run", abstract: "Run a search (the default subcommand).")

        @Argument(help: "The search space, YAML or JSON (docs/examples/akaze-space.yaml).") var space: String
        @Argument(help: "Sequence folders, or folders to search for sequences (any folder with a sequence.json), as evaluate takes them.") var paths: [String] = []
        @Option(name: .customLong("data"), parsing: .upToNextOption, help: "The same as the paths after the space (kept for scripts that name them so).") var data: [String] = []
        @Option(parsing: .unconditional, help: "Ranking: maa10, maa5, rotation-maa10, median-rotation or score.") var objective = "maa10"
        @Option(parsing: .unconditional, help: "Trials slower than this median milliseconds per frame rank after all others.", transform: decimalOption) var maxMsPerFrame: Double?
        @Option(name: [.short, .long], parsing: .unconditional, help: "Frames evaluated in parallel (default: the number of cores).") var jobs = ProcessInfo.processInfo.activeProcessorCount
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output folder.") var out = "tuning"
        @Option(parsing: .unconditional, help: "Run only trials i, i+n, i+2n... (0-based i/n), for job arrays; combine with `rephoto tune merge`.") var shard: String?
        @Flag(help: "Continue the run in --out: finished trials are kept, not run again (same space and settings required).") var resume = false
        @Option(parsing: .unconditional, help: "Base pipeline settings (JSON or YAML) under the space's values.") var config: String?
        @Option(parsing: .unconditional, help: "Hold this fraction of the sequences out of the search (chosen by name, deterministically) and report the best configuration on both sets.")
        var holdout: Double?
        @Option(parsing: .unconditional, help: "Also keep features in this folder, so later runs (and other shards) do not detect them again.") var cache: String?
        @Option(parsing: .unconditional, help: "Trials to run: random and halving draw N configurations (the space's `trials` otherwise); a grid runs its first N. With --resume, a larger N continues the search.")
        var trials: Int?
        @Option(parsing: .unconditional, help: "Start no trial after this long, e.g. 90s, 10m, 2h or 1h30m (the trial running finishes; --resume continues).")
        var timeout: String?

        func run() throws {
            guard let objective = TuningObjective(rawValue: objective) else {
                throw RephotoError.badInput("--objective '\(objective)' is not one of \(TuningObjective.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard !(paths + data).isEmpty else { throw RephotoError.badInput("no data: name sequence folders after the space (rephoto tune SPACE DATA...)") }
            var run = TuningRun(space: space, data: paths + data, objective: objective, jobs: jobs, out: out)
            (run.maxMsPerFrame, run.shard, run.resume, run.config, run.holdout, run.cache) = (maxMsPerFrame, shard, resume, config, holdout, cache)
            run.budget = TuningBudget(trials: trials, timeout: try timeout.map(TuningBudget.seconds))
            let progress = Progress(label: "tune")
            let outcome = try run.run(progress: { done, total, best in
                let note = best.map { "best \(objective.rawValue) \($0.objective.map { String(format: "%.4f", $0) } ?? "-") (trial \($0.trial)) " } ?? ""
                progress.update(done, of: total, note: note)
            }, warn: CLIOutput.message)
            print(outcome.summary + (outcome.heldOut ?? ""), terminator: "")
            if let trials = outcome.noWinner {
                throw RephotoError.estimationFailed("every frame failed in all \(trials) trials (rephoto evaluate --config \(out)/best.yaml shows why)")
            }
            print(outcome.caches)
        }
    }

    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Combine the folders of shards (same space and settings) into one leaderboard.")

        @Argument(help: "Folders of the shards.") var folders: [String]
        @Option(name: [.short, .long], parsing: .unconditional, help: "Output folder.") var out = "tuning"

        func run() throws {
            print(try TuningRun.merge(folders, out: out, warn: CLIOutput.message), terminator: "")
        }
    }
}
