import Crypto
import Foundation
import RephotoKit

/// What made an output: the program, the command line, the settings and the start time. The one type every
/// result document (summary.json, run.json, session.json, tuning.json) and every HTML report carries, so two
/// outputs (AKAZE beside ORB) can be told apart and a result traced to its run. Documented in docs/json-output.md.
public struct Provenance: Codable, Equatable, Sendable {
    /// `rephoto --version`'s text.
    public var version: String
    /// The arguments as the process received them, the program first.
    public var commandLine: [String]
    /// When the run started: ISO 8601, UTC, to the second.
    public var started: String
    /// Every setting that differs from its default, as `--set` takes it (`features.detector=orb`), in the
    /// registry's order.
    public var settingsChanged: [String]
    /// SHA-256 (hex) of every setting as `rephoto defaults` prints them (JSON, registry order, two-space indent,
    /// no final newline): equal hashes, equal settings.
    public var settingsHash: String
    /// The data: each sequence's name with the digest of its sequence.json and frames.csv
    /// (`EvaluationRunState.digest`); absent where no sequences were read.
    public var sequences: [String: String]?

    public init(settings: PipelineConfig, sequences: [String: String]? = nil, commandLine: [String] = CommandLine.arguments,
                started: Date = Date()) {
        version = RephotoVersion.description
        self.commandLine = commandLine
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        self.started = formatter.string(from: started)
        settingsChanged = Self.changes(settings)
        settingsHash = Self.hash(settings)
        self.sequences = sequences
    }

    /// The settings that differ from the defaults, `path=value`.
    public static func changes(_ settings: PipelineConfig) -> [String] {
        let defaults = PipelineConfig()
        return ParameterRegistry.parameters.compactMap { parameter in
            let value = parameter.value(in: settings)
            guard value != parameter.value(in: defaults) else { return nil }
            if case .string(let text) = value { return "\(parameter.path)=\(text)" }  // whole: description shortens long text
            return "\(parameter.path)=\(value)"
        }
    }

    /// SHA-256 of the settings' canonical text, `rephoto defaults`' JSON of them.
    public static func hash(_ settings: PipelineConfig) -> String {
        SHA256.hash(data: Data(ParameterRegistry.json(of: settings).utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The sequences' digests by name, for `sequences`: (name, folder) pairs.
    public static func digests(of sequences: [(String, String)]) -> [String: String] {
        Dictionary(sequences.map { ($0.0, EvaluationRunState.digest(ofSequenceAt: $0.1)) }, uniquingKeysWith: { a, _ in a })
    }

    /// The command line as a shell would take it back: words with spaces or quotes single-quoted.
    public var commandText: String {
        commandLine.map { word in
            let plain = !word.isEmpty && word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:,@+%".contains($0) }
            return plain ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }

    /// The settings' detector, named first in every header: what tells two reports apart at a glance.
    public var detector: String {
        settingsChanged.first { $0.hasPrefix("features.detector=") }.map { String($0.dropFirst("features.detector=".count)) }
            ?? "\(ParameterRegistry.parameter("features.detector")?.defaultValue ?? .null)"
    }

    /// The block at the top of every HTML report.
    public var html: String {
        func e(_ s: String) -> String { EvaluationReport.escape(s) }
        let changed = settingsChanged.isEmpty ? "none (all defaults)" : settingsChanged.map { "<code>\(e($0))</code>" }.joined(separator: ", ")
        return """
            <dl class=provenance>
            <dt>made by</dt><dd>\(e(version))</dd>
            <dt>command</dt><dd><code>\(e(commandText))</code></dd>
            <dt>started</dt><dd>\(e(started))</dd>
            <dt>detector</dt><dd>\(e(detector))</dd>
            <dt>settings changed</dt><dd>\(changed)</dd>
            <dt>settings hash</dt><dd><code>\(e(String(settingsHash.prefix(16))))</code> (SHA-256 of every setting, first 16 digits)</dd>
            </dl>

            """
    }

    /// The header block's style, shared by every report.
    public static let css = ".provenance{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:13px;background:#f4f6f8;border:1px solid #d8dde3;padding:8px 12px;margin:0 0 12px}.provenance dt{color:#555}.provenance dd{margin:0;overflow-wrap:anywhere}"
}
