import Foundation
import RephotoKit
import Yams

/// A search space for `rephoto tune` (docs/tuning.md): for parameters of the registry, a list of values or a
/// range (linear with a step, or logarithmic with a count); other parameters pinned. Every value is checked
/// against the registry when the file is read, before any work.
public struct TuningSpace: Sendable, Equatable {
    public enum Strategy: String, Sendable, CaseIterable {
        /// Every combination, in the file's parameter order (the last parameter varies fastest).
        case grid
        /// `trials` configurations drawn with `seed`, each parameter uniformly from its values.
        case random
        /// Successive halving: `trials` random configurations on `minFrames` frames per sequence; the best
        /// 1/`eta` go on with `eta` times the frames, until every frame is used.
        case halving
    }

    public struct Dimension: Sendable, Equatable {
        public var path: String
        public var values: [ParameterValue]
        /// Given as a log range (`log: true`), or a parameter the registry samples on a log scale: plots draw it on
        /// a log axis.
        public var log = false
    }

    public var strategy: Strategy
    public var seed: UInt64
    public var trials: Int?
    /// Successive halving: survivors per rung (1/eta) and frames per sequence in the first rung.
    public var eta: Int = 3
    public var minFrames: Int = 2
    public var dimensions: [Dimension]
    /// Applied to every trial, before the varied parameters.
    public var fixed: [(path: String, value: ParameterValue)]

    public static func == (a: TuningSpace, b: TuningSpace) -> Bool {
        a.strategy == b.strategy && a.seed == b.seed && a.trials == b.trials && a.eta == b.eta && a.minFrames == b.minFrames
            && a.dimensions == b.dimensions
            && a.fixed.map(\.path) == b.fixed.map(\.path) && a.fixed.map(\.value) == b.fixed.map(\.value)
    }

    public static func load(from path: String) throws -> TuningSpace {
        guard let text = String(data: try readSmallFile(path, limit: 1 << 20), encoding: .utf8) else {
            throw RephotoError.badInput("\(path): the search space is not UTF-8 text")
        }
        do {
            return try parse(text)
        } catch let error as RephotoError {
            throw RephotoError.badInput("\(path): \(error.message)")
        }
    }

    /// YAML (or JSON, which YAML reads): `strategy`, `seed`, `trials`, `fixed` and `parameters`.
    public static func parse(_ text: String) throws -> TuningSpace {
        let root: Node
        do {
            guard let node = try BoundedYAML.compose(text, what: "search space") else { throw RephotoError.badInput("the search space is empty") }
            root = node
        } catch let error as RephotoError {
            throw error
        } catch {
            let first = "\(error)".split(whereSeparator: \.isNewline).first.map(String.init) ?? "\(error)"
            throw RephotoError.badInput("not valid YAML or JSON (\(first.prefix(200)))")
        }
        guard let top = root.mapping else { throw RephotoError.badInput("the search space must be a mapping") }
        let known: Set<String> = ["strategy", "seed", "trials", "eta", "minFrames", "fixed", "parameters"]
        for key in top.keys.compactMap(\.string) where !known.contains(key) {
            throw RephotoError.badInput("unknown key '\(key)' (known: \(known.sorted().joined(separator: ", ")))")
        }
        let strategyText = top["strategy"]?.string ?? "grid"
        guard let strategy = Strategy(rawValue: strategyText) else {
            throw RephotoError.badInput("strategy '\(strategyText)' is not one of \(Strategy.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let seed = try top["seed"].map { node -> UInt64 in
            guard let v = try plain(node, "seed").flatMap(UInt64.init) else { throw RephotoError.badInput("seed must be a whole number at least 0") }
            return v
        } ?? 1
        let trials = try top["trials"].map { node -> Int in
            guard let v = try plain(node, "trials").flatMap(Int.init), v >= 1, v <= 1_000_000 else { throw RephotoError.badInput("trials must be 1...1000000") }
            return v
        }
        if strategy != .grid && trials == nil { throw RephotoError.badInput("strategy \(strategy.rawValue) needs trials") }
        // A key the strategy does not read would be ignored, and the run would differ from the file.
        let unused = strategy == .grid ? ["seed", "trials", "eta", "minFrames"] : strategy == .random ? ["eta", "minFrames"] : []
        if let key = unused.first(where: { top[$0] != nil }) {
            let why = ["seed": " (it draws nothing: every combination runs, in order)", "trials": " (it runs every combination)"][key] ?? " (only halving reads it)"
            throw RephotoError.badInput("\(key) does not apply to strategy \(strategy.rawValue)\(why)")
        }
        func whole(_ key: String, _ range: ClosedRange<Int>, _ fallback: Int) throws -> Int {
            guard let node = top[key] else { return fallback }
            guard let v = try plain(node, key).flatMap(Int.init), range.contains(v) else {
                throw RephotoError.badInput("\(key) must be \(range.lowerBound)...\(range.upperBound)")
            }
            return v
        }
        let eta = try whole("eta", 2...100, 3), minFrames = try whole("minFrames", 1...100_000, 2)

        var fixed: [(String, ParameterValue)] = []
        if let node = top["fixed"], node.mapping == nil, !Self.isNull(node) {
            throw RephotoError.badInput("fixed must map parameters to values (fixed: {features.maxDimension: 640}), got \(Self.describe(node))")
        }
        for (key, value) in top["fixed"]?.mapping ?? [:] {
            let parameter = try parameter(key)
            guard value.scalar != nil || Self.matrixText(parameter, value) != nil else {
                throw RephotoError.badInput("fixed \(parameter.path) must be a single value")
            }
            let parsed = try scalar(parameter, value)
            try check(parameter, parsed)
            fixed.append((parameter.path, parsed))
        }
        if let node = top["parameters"], node.mapping == nil, !Self.isNull(node) {
            throw RephotoError.badInput("parameters must map parameters to their values (parameters: {matching.ratio: [0.7, 0.8]}), got \(Self.describe(node))")
        }
        guard let parameters = top["parameters"]?.mapping, !parameters.isEmpty else {
            throw RephotoError.badInput("parameters must name at least one parameter to vary")
        }
        var dimensions: [Dimension] = []
        for (key, spec) in parameters {
            let parameter = try parameter(key)
            let values = try values(of: parameter, spec)
            for value in values { try check(parameter, value) }
            if fixed.contains(where: { $0.0 == parameter.path }) || dimensions.contains(where: { $0.path == parameter.path }) {
                throw RephotoError.badInput("\(parameter.path) is given twice")
            }
            let logRange = spec.mapping.map { $0["values"] == nil && $0["log"]?.bool == true } ?? false
            let positive = values.allSatisfy { if case .double(let v) = $0 { v > 0 } else if case .int(let v) = $0 { v > 0 } else { false } }
            dimensions.append(Dimension(path: parameter.path, values: values, log: logRange || (parameter.scale == .log && positive)))
        }
        let space = TuningSpace(strategy: strategy, seed: seed, trials: trials, eta: eta, minFrames: minFrames, dimensions: dimensions, fixed: fixed)
        _ = try space.configurationCount()
        return space
    }

    /// The space with `--trials`' budget: random and halving draw `trials` configurations; a grid runs its first
    /// `trials` combinations in order.
    public func budgeted(trials budget: Int?) -> TuningSpace {
        var copy = self
        if let budget { copy.trials = budget }
        return copy
    }

    /// How many configurations the space stands for, refused over 1,000,000 before any is built.
    public func configurationCount() throws -> Int {
        if strategy != .grid { return trials ?? 1 }
        var count = 1
        for dimension in dimensions {
            let (product, overflow) = count.multipliedReportingOverflow(by: dimension.values.count)
            guard !overflow, product <= 1_000_000 else {
                throw RephotoError.badInput("the grid has more than 1000000 configurations (\(dimensions.map { "\($0.values.count)" }.joined(separator: " x ")))")
            }
            count = product
        }
        return min(count, trials ?? count)
    }

    private static func parameter(_ key: Node) throws -> Parameter {
        guard let path = key.string, let parameter = ParameterRegistry.parameter(path) else {
            let name = key.string ?? "?"
            throw RephotoError.badInput("unknown parameter '\(name)'\(Suggestion.phrase(for: name, among: ParameterRegistry.parameters.map(\.path))) (rephoto defaults lists them)")
        }
        return parameter
    }

    /// The value must be one the registry admits, in a configuration that validates.
    private static func check(_ parameter: Parameter, _ value: ParameterValue) throws {
        var config = PipelineConfig()
        do {
            try parameter.set(value, in: &config)
        } catch let error as RephotoError {
            throw RephotoError.badInput("\(parameter.path): \(error.message)")
        }
    }

    /// An empty YAML value (`fixed:` with nothing after it).
    private static func isNull(_ node: Node) -> Bool {
        node.scalar.map { ["", "~", "null", "Null", "NULL"].contains($0.string) } ?? false
    }

    /// A wrong node's shape for a one-line error.
    private static func describe(_ node: Node) -> String {
        if node.sequence != nil { return "a list" }
        if let text = node.scalar?.string { return "the single value '\(text.prefix(40))'" }
        return "a mapping"
    }

    /// `[v, ...]` or `{values: [...]}`; `{min, max, step}`; `{min, max, count, log: true}`.
    private static func values(of parameter: Parameter, _ spec: Node) throws -> [ParameterValue] {
        if let list = spec.sequence {
            guard !list.isEmpty else { throw RephotoError.badInput("\(parameter.path): the list of values is empty") }
            return try list.map { try scalar(parameter, $0) }
        }
        guard let map = spec.mapping else { return [try scalar(parameter, spec)] }
        // A key that belongs to another form (a step in a log range, a count beside a step) or a misspelt one
        // would otherwise be ignored, and the grid would silently differ from the file.
        if let node = map["log"], try plain(node, "\(parameter.path): log") == nil || node.bool == nil {
            // Read as false, `log: maybe` (or `log: 1`) made a linear range of a file that asked for a log one.
            throw RephotoError.badInput("\(parameter.path): log must be true or false, got \(Self.describe(node))")
        }
        let log = map["values"] == nil && map["log"]?.bool == true
        let allowed: Set<String> = map["values"] != nil ? ["values"] : log ? ["min", "max", "count", "log"] : ["min", "max", "step", "log"]
        if let stray = map.keys.map({ $0.string ?? "\($0)" }).first(where: { !allowed.contains($0) }) {
            let form = map["values"] != nil ? "a list of values" : log ? "a log range (min, max, count, log: true)" : "a linear range (min, max, step)"
            let hint = stray == "count" && !log ? "; a log range needs log: true" : ""
            throw RephotoError.badInput("\(parameter.path): '\(stray)' does not belong in \(form)\(hint)")
        }
        if let list = map["values"]?.sequence {
            guard !list.isEmpty else { throw RephotoError.badInput("\(parameter.path): values is empty") }
            return try list.map { try scalar(parameter, $0) }
        }
        func number(_ key: String) throws -> Double? {
            guard let node = map[key] else { return nil }
            guard let v = try plain(node, "\(parameter.path): \(key)").flatMap(Double.init), v.isFinite else { throw RephotoError.badInput("\(parameter.path): \(key) must be a number") }
            return v
        }
        guard let low = try number("min"), let high = try number("max"), low <= high else {
            throw RephotoError.badInput("\(parameter.path): give values, or min <= max with step (or count and log: true)")
        }
        var numbers: [Double]
        if log {
            guard low > 0, let count = try number("count"), count >= 2, count <= 1000, count == count.rounded() else {
                throw RephotoError.badInput("\(parameter.path): a log range needs min > 0 and count 2...1000")
            }
            numbers = (0..<Int(count)).map { low * pow(high / low, Double($0) / (count - 1)) }
        } else {
            guard let step = try number("step"), step > 0, (high - low) / step <= 10_000 else {
                throw RephotoError.badInput("\(parameter.path): a linear range needs step > 0 (at most 10000 values)")
            }
            if case .integer = parameter.domain, [low, high, step].contains(where: { $0 != $0.rounded() }) {
                // Rounded, a fractional step would repeat values and leave the grid smaller than the file says.
                throw RephotoError.badInput("\(parameter.path) is an integer: its range needs whole min, max and step")
            }
            numbers = stride(from: low, through: high + step * 1e-9, by: step).map { ($0 * 1e12).rounded() / 1e12 }
        }
        if case .integer = parameter.domain {
            // Checked before the conversion: a bound past what an Int holds (1e19) trapped in Int(_:).
            for number in numbers { try check(parameter, .double(number.rounded())) }
            var seen = Set<Int>()
            let whole = numbers.map { Int($0.rounded()) }.filter { seen.insert($0).inserted }
            if whole.count < numbers.count {
                // Rounded, the range would repeat values and the grid would be smaller than the file says.
                throw RephotoError.badInput("\(parameter.path) is an integer: its log range rounds to only \(whole.count) distinct values of \(numbers.count) (\(whole.map(String.init).joined(separator: ", ")))")
            }
            return whole.map(ParameterValue.int)
        }
        return numbers.map(ParameterValue.double)
    }

    /// A rotation written as `rephoto defaults --yaml` prints it, [[1, 0, 0], [0, -1, 0], [0, 0, -1]], as the
    /// one-line text its parser reads; nil for anything else (a space refused the printed form).
    private static func matrixText(_ parameter: Parameter, _ node: Node) -> String? {
        guard case .rotation = parameter.domain, let rows = node.sequence, rows.count == 3 else { return nil }
        let cells = rows.map { $0.sequence?.compactMap { $0.scalar?.string } ?? [] }
        guard cells.allSatisfy({ $0.count == 3 }) && rows.allSatisfy({ $0.sequence?.count == 3 }) else { return nil }
        return cells.joined().joined(separator: ",")
    }

    private static func scalar(_ parameter: Parameter, _ node: Node) throws -> ParameterValue {
        if let text = matrixText(parameter, node) { return try parameter.parse(text) }
        guard let text = node.scalar?.string else { throw RephotoError.badInput("\(parameter.path): each value must be a single value") }
        switch parameter.domain {
        case .integer, .real, .flag: _ = try plain(node, parameter.path)
        default: break  // a choice is a word, quoted or not; a rotation is written as one string
        }
        return try parameter.parse(text)
    }

    /// A scalar's text; a number or a flag written in quotes is refused, since quotes make it a string (in YAML
    /// and in JSON) and a configuration file refuses it as one: a space reads its values as `--config` does.
    /// nil for a node that is no scalar.
    private static func plain(_ node: Node, _ what: String) throws -> String? {
        guard let scalar = node.scalar else { return nil }
        if scalar.style == .singleQuoted || scalar.style == .doubleQuoted {
            throw RephotoError.badInput("\(what) = \"\(scalar.string.prefix(40))\" is quoted, which makes it a string: write it without quotes")
        }
        return scalar.string
    }

    /// The configurations this space stands for, in trial order: each with the values it sets.
    public func configurations() throws -> Configurations {
        Configurations(space: self, count: try configurationCount())
    }

    /// A space's configurations, each built from its index when asked for: a million-configuration grid listed
    /// whole took a gigabyte, even for a shard that runs one of them.
    public struct Configurations: RandomAccessCollection, Sendable {
        let space: TuningSpace
        public let count: Int
        public var startIndex: Int { 0 }
        public var endIndex: Int { count }

        public subscript(trial: Int) -> [(path: String, value: ParameterValue)] {
            precondition((0..<count).contains(trial), "trial \(trial) is outside the space's \(count)")
            let dimensions = space.dimensions
            switch space.strategy {
            case .grid:
                // Mixed radix, the last parameter fastest.
                var rest = trial
                var out = [(path: String, value: ParameterValue)]()
                for dimension in dimensions.reversed() {
                    out.append((dimension.path, dimension.values[rest % dimension.values.count]))
                    rest /= dimension.values.count
                }
                return out.reversed()
            case .random, .halving:
                // One draw per dimension, trial after trial: trial i starts after i x dimensions draws.
                var random = SeededRandom(seed: space.seed, skipping: UInt64(trial) &* UInt64(dimensions.count))
                return dimensions.map { ($0.path, $0.values[Int(random.next() % UInt64($0.values.count))]) }
            }
        }
    }

    /// A configuration: the defaults, the fixed values, then the trial's own.
    public func config(for values: [(path: String, value: ParameterValue)], base: PipelineConfig = PipelineConfig()) throws -> PipelineConfig {
        var config = base
        for (path, value) in fixed + values {
            guard let parameter = ParameterRegistry.parameter(path) else { throw RephotoError.badInput("unknown parameter \(path)") }
            try parameter.set(value, in: &config)
        }
        try config.validate()
        return config
    }
}
