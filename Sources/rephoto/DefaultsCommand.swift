import ArgumentParser
import Foundation
import RephotoKit
import Yams

struct DefaultsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "defaults",
        abstract: "Print every pipeline setting with its default value: a starting point for --config (docs/configuration.md).")

    @Flag(help: "YAML instead of JSON.")
    var yaml = false

    func run() throws {
        if yaml {
            print(try YAMLEncoder().encode(PipelineConfig()), terminator: "")
        } else {
            try CLIOutput.printJSON(PipelineConfig())
        }
    }
}
