import Foundation
import RephotoKit

/// `tuning.json`, leaderboard.csv's companion: what made the run, the best trial with its exact objective, the
/// trials tied with it and the rule that chose among them, best values at the edge of the space, and each
/// parameter's importance. Documented in docs/tuning.md and docs/json-output.md.
public struct TuningResult: Codable, Equatable, Sendable {
    /// A best value at the smallest or largest value searched: the optimum may lie beyond it.
    public struct Edge: Codable, Equatable, Sendable {
        public var path: String
        public var value: String
        /// "min" or "max".
        public var side: String
    }

    public var provenance: Provenance?
    public var objective: TuningObjective
    public var higherIsBetter: Bool
    /// Trials in the leaderboard.
    public var trials: Int
    public var best: TrialRecord?
    /// Other trials whose objective equals the best's exactly (same rung, same side of the time limit).
    public var tiedWith: [Int]
    public var tieRule: String
    public var atEdge: [Edge]
    public var importance: [ParameterImportance]
    public var importanceMethod: String
    /// true when `--timeout` stopped the run before its budget was spent.
    public var stoppedAtTimeout: Bool

    public static let fileName = "tuning.json"

    /// A run folder's tuning.json, or nil where there is none or it cannot be read (bounded: any file may sit there).
    public static func load(_ folder: URL) -> TuningResult? {
        let path = folder.appendingPathComponent(fileName).path
        guard let data = try? readSmallFile(path, limit: 64 << 20) else { return nil }
        return try? JSONDecoder().decode(TuningResult.self, from: data)
    }

    public static func compute(_ records: [TrialRecord], space: TuningSpace, objective: TuningObjective, provenance: Provenance?,
                               stoppedAtTimeout: Bool = false) -> TuningResult {
        let ranked = Tuner.ranked(records, objective)
        let best = ranked.first
        let tied = best.map { b in
            ranked.dropFirst().filter { $0.objective != nil && $0.objective == b.objective && $0.rung == b.rung && $0.tooSlow == b.tooSlow }.map(\.trial)
        } ?? []
        var edges: [Edge] = []
        if let best {
            for dimension in space.dimensions {
                let numbers = dimension.values.compactMap(Self.number)
                guard numbers.count == dimension.values.count, Set(numbers).count >= 2,
                      let text = best.parameters.first(where: { $0.first == dimension.path })?.last, let value = Double(text) else { continue }
                if value <= numbers.min()! { edges.append(Edge(path: dimension.path, value: text, side: "min")) }
                if value >= numbers.max()! { edges.append(Edge(path: dimension.path, value: text, side: "max")) }
            }
        }
        return TuningResult(provenance: provenance, objective: objective, higherIsBetter: objective.higherIsBetter, trials: records.count, best: best,
                            tiedWith: tied, tieRule: Tuner.tieRule, atEdge: edges,
                            importance: ParameterImportance.compute(records, paths: space.dimensions.map(\.path)),
                            importanceMethod: ParameterImportance.method, stoppedAtTimeout: stoppedAtTimeout)
    }

    static func number(_ value: ParameterValue) -> Double? {
        switch value {
        case .int(let v): Double(v)
        case .double(let v): v
        default: nil
        }
    }

    /// Lines for summary.txt and the terminal: ties and edges, each said once.
    public var notes: [String] {
        var lines: [String] = []
        if !tiedWith.isEmpty {
            lines.append("tied with trial\(tiedWith.count > 1 ? "s" : "") \(tiedWith.map(String.init).joined(separator: ", ")) (the same \(objective.rawValue)); \(Tuner.tieRule)")
        }
        for edge in atEdge {
            lines.append("at the edge of the space: \(edge.path) = \(edge.value) is the \(edge.side == "min" ? "smallest" : "largest") value searched; the best may lie beyond it")
        }
        if stoppedAtTimeout { lines.append("stopped at --timeout: not every trial of the budget ran (--resume continues)") }
        return lines
    }
}
