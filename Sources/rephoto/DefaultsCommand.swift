import ArgumentParser
import Foundation
import RephotoKit

struct DefaultsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "defaults",
        abstract: "Print every pipeline setting with its default value: a starting point for --config (docs/configuration.md).")

    @Flag(help: "YAML instead of JSON.")
    var yaml = false
    @Flag(help: "The parameter table of docs/configuration.md (Markdown): path, type, default, allowed values, scale, meaning.")
    var markdown = false

    func run() throws {
        // One of them would be ignored without a word.
        if yaml && markdown { throw RephotoError.badInput("--yaml and --markdown are two formats: give one") }
        if markdown {
            print(ParameterRegistry.markdownTable(), terminator: "")
        } else if yaml {
            print(try ParameterRegistry.yaml(of: PipelineConfig()), terminator: "")
        } else {
            print(ParameterRegistry.json(of: PipelineConfig()))
        }
    }
}
