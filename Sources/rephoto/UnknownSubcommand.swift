import ArgumentParser
import RephotoKit

/// swift-argument-parser reports a mistyped subcommand (`rephoto evalute`) as unexpected arguments: this names it
/// as an unknown subcommand, with the closest real one.
enum UnknownSubcommand {
    /// The message for `arguments` (without the program's name) when their first word that is not a subcommand
    /// stands where only a subcommand may (the command has subcommands and no default one); nil otherwise.
    static func message(_ arguments: [String]) -> String? {
        var command: any ParsableCommand.Type = Rephoto.self
        var path = ["rephoto"]
        for word in arguments {
            if word.hasPrefix("-") { return nil }
            let configuration = command.configuration
            let subcommands = configuration.subcommands
            let names = subcommands.map { name(of: $0) }
            if let index = names.firstIndex(of: word) {
                command = subcommands[index]
                path.append(word)
                continue
            }
            guard !subcommands.isEmpty, configuration.defaultSubcommand == nil, word != "help" else { return nil }
            return "unknown subcommand '\(word.visible)' of '\(path.joined(separator: " "))'\(Suggestion.phrase(for: word, among: names)); one of: \(names.joined(separator: ", "))"
        }
        return nil
    }

    private static func name(of command: any ParsableCommand.Type) -> String {
        command.configuration.commandName ?? command._commandName
    }
}
