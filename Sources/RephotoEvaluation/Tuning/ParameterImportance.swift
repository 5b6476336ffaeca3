import Foundation

/// Each varied parameter's importance in a tuning run: its main-effect variance share (η², a one-way analysis of
/// variance). Trials are grouped by the parameter's value (a numeric parameter with more than `bins` distinct values
/// in `bins` groups of equal count); the share is the between-group variance of the objective over its total
/// variance. On a full grid this is fANOVA's first-order share; on random draws it is an estimate, shares of
/// parameters drawn together can overlap, and interactions are attributed to no parameter.
public struct ParameterImportance: Codable, Equatable, Sendable {
    public var path: String
    /// 0...1; nil when the objective does not vary across the trials (nothing to explain).
    public var share: Double?

    public static let bins = 5
    public static let method = "main-effect variance share (η², one-way ANOVA over each parameter's values; numeric values with more than 5 levels in 5 equal-count bins); on a full grid, fANOVA's first-order share"

    /// One entry per dimension, in the space's order, over the trials with a defined objective.
    public static func compute(_ records: [TrialRecord], paths: [String]) -> [ParameterImportance] {
        let scored = records.compactMap { r in r.objective.map { (r, $0) } }
        let mean = scored.map(\.1).reduce(0, +) / Double(max(1, scored.count))
        let total = scored.map { ($0.1 - mean) * ($0.1 - mean) }.reduce(0, +)
        return paths.map { path in
            guard total > 0 else { return ParameterImportance(path: path, share: nil) }
            let keyed = scored.map { (value: $0.0.parameters.first { $0.first == path }?.last ?? "", y: $0.1) }
            var groups: [String: [Double]] = [:]
            let distinct = Set(keyed.map(\.value))
            if distinct.count > bins, keyed.allSatisfy({ Double($0.value) != nil }) {
                // Equal-count bins by value: each bin a level of the factor.
                let sorted = keyed.sorted { Double($0.value)! < Double($1.value)! }
                for (k, item) in sorted.enumerated() { groups[String(k * bins / sorted.count), default: []].append(item.y) }
            } else {
                for item in keyed { groups[item.value, default: []].append(item.y) }
            }
            let between = groups.values.map { g in Double(g.count) * pow(g.reduce(0, +) / Double(g.count) - mean, 2) }.reduce(0, +)
            return ParameterImportance(path: path, share: min(1, between / total))
        }
    }
}
