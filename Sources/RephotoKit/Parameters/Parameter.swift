import Foundation

/// A value of a tunable parameter, independent of its Swift type: what config files, `rephoto defaults`,
/// the docs and the tuner exchange.
public enum ParameterValue: Sendable, Equatable, CustomStringConvertible {
    case int(Int)
    case double(Double)
    case bool(Bool)
    case string(String)
    case matrix(Matrix3)
    case null

    public var description: String {
        switch self {
        case .int(let v): String(v)
        case .double(let v): formatNumber(v)
        case .bool(let v): v ? "true" : "false"
        // A value echoed in a message stays one readable line (a 900 KB string was printed whole).
        case .string(let v): v.count > 80 ? "\(v.prefix(60))… (\(v.count) characters)" : v
        case .matrix(let m): "[" + m.rows.map { "[" + $0.map(formatNumber).joined(separator: ", ") + "]" }.joined(separator: ", ") + "]"
        case .null: "null"
        }
    }
}

/// How a tuner should sample a parameter.
public enum ParameterScale: String, Sendable, Codable, CaseIterable {
    /// Uniform over the range.
    case linear
    /// Uniform in the logarithm (thresholds spanning decades).
    case log
    /// Whole numbers, uniform over the range.
    case integer
    /// One of a list of choices.
    case categorical
    /// Not a search dimension (resource limits, sensor mounting): set per deployment, never sampled.
    case fixed
}

/// The values a parameter admits.
public enum ParameterDomain: Sendable, Equatable, CustomStringConvertible {
    /// Whole numbers in min...max (either end may be open-ended).
    case integer(min: Int?, max: Int?)
    /// Real numbers between the bounds; each bound is inclusive or exclusive.
    case real(min: Double?, minInclusive: Bool, max: Double?, maxInclusive: Bool)
    case choice([String])
    case flag
    /// A 3x3 rotation matrix (orthonormal, determinant 1).
    case rotation

    public var description: String {
        switch self {
        case .integer(let lo?, let hi?): "\(lo)...\(hi)"
        case .integer(let lo?, nil): ">= \(lo)"
        case .integer(nil, let hi?): "<= \(hi)"
        case .integer(nil, nil): "any integer"
        case .real(let lo?, let li, let hi?, let hiIn): "\(li ? "[" : "(")\(formatNumber(lo)), \(formatNumber(hi))\(hiIn ? "]" : ")")"
        case .real(let lo?, let li, nil, _): "\(li ? ">=" : ">") \(formatNumber(lo))"
        case .real(nil, _, let hi?, let hiIn): "\(hiIn ? "<=" : "<") \(formatNumber(hi))"
        case .real(nil, _, nil, _): "any finite number"
        case .choice(let options): options.joined(separator: ", ")
        case .flag: "true, false"
        case .rotation: "a rotation matrix"
        }
    }

    /// Whether `value` lies in the domain (type already checked).
    func admits(_ value: ParameterValue) -> Bool {
        switch (self, value) {
        case (.integer(let lo, let hi), .int(let v)):
            return lo.map { v >= $0 } ?? true && hi.map { v <= $0 } ?? true
        case (.real(let lo, let li, let hi, let hiIn), .double(let v)):
            guard v.isFinite else { return false }
            let aboveLower = lo.map { li ? v >= $0 : v > $0 } ?? true
            let belowUpper = hi.map { hiIn ? v <= $0 : v < $0 } ?? true
            return aboveLower && belowUpper
        case (.choice(let options), .string(let v)):
            return options.contains(v)
        case (.flag, .bool):
            return true
        case (.rotation, .matrix(let m)):
            return m.isRotation
        default:
            return false
        }
    }
}

/// One tunable parameter: declared once, in `ParameterRegistry`, with everything decoding, validation,
/// `rephoto defaults`, docs/configuration.md and the tuner need.
public struct Parameter: @unchecked Sendable {
    /// Dotted path in the config file, e.g. `features.akaze.threshold`.
    public let path: String
    public let domain: ParameterDomain
    /// Whether `null` (unset) is allowed; the default may then be null.
    public let optional: Bool
    public let defaultValue: ParameterValue
    public let scale: ParameterScale
    /// One line for people: what it does, units.
    public let summary: String

    // Bridges to the typed `PipelineConfig` (key paths are immutable values, hence @unchecked Sendable).
    let keyPath: AnyKeyPath
    let typedDefault: Any
    let read: (PipelineConfig) -> ParameterValue
    let write: (inout PipelineConfig, ParameterValue) -> Void
    /// Converts a config-file value to this parameter's type; nil when the type is wrong.
    let convert: (ParameterValue) -> ParameterValue?

    /// The parameter's value in `config`.
    public func value(in config: PipelineConfig) -> ParameterValue { read(config) }

    /// Sets the parameter in `config`, after checking type and domain (cross-parameter rules are checked by
    /// `PipelineConfig.validate()`).
    public func set(_ value: ParameterValue, in config: inout PipelineConfig) throws {
        guard let converted = convert(value) else {
            // A whole number past what an integer holds is a number out of range, not of the wrong type.
            if case .integer = domain, case .double(let d) = value, d.rounded() == d {
                throw RephotoError.badInput("\(path) = \(value) is out of range (allowed: \(domain))")
            }
            // A string is shown in quotes: `minInliers: "12"` read "= 12 has the wrong type", which looked right.
            let shown = if case .string = value { "\"\(value)\" (a string)" } else { "\(value)" }
            throw RephotoError.badInput("\(path) = \(shown) has the wrong type (expected \(typeName))")
        }
        try check(converted)
        write(&config, converted)
    }

    func check(_ value: ParameterValue) throws {
        if value == .null {
            if optional { return }
            throw RephotoError.badInput("\(path) must be set (allowed: \(domain))")
        }
        guard domain.admits(value) else {
            throw RephotoError.badInput("\(path) = \(value) is out of range (allowed: \(domain))")
        }
    }

    /// The parameter's type for people: integer, number, boolean, choice or matrix.
    public var typeName: String {
        let base = switch domain {
        case .integer: "integer"
        case .real: "number"
        case .choice: "choice"
        case .flag: "boolean"
        case .rotation: "3x3 matrix"
        }
        return optional ? "\(base) or null" : base
    }
}

// MARK: - Declaring parameters

extension Parameter {
    private init<T>(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, T>, _ value: T, domain: ParameterDomain,
                    optional: Bool = false, scale: ParameterScale, _ summary: String,
                    box: @escaping (T) -> ParameterValue, unbox: @escaping (ParameterValue) -> T?,
                    convert: @escaping (ParameterValue) -> ParameterValue?) {
        self.path = path
        self.domain = domain
        self.optional = optional
        self.defaultValue = box(value)
        self.scale = scale
        self.summary = summary
        self.keyPath = keyPath
        self.typedDefault = value
        self.read = { box($0[keyPath: keyPath]) }
        self.write = { config, v in if let typed = unbox(v) { config[keyPath: keyPath] = typed } }
        self.convert = convert
    }

    private static func toInt(_ v: ParameterValue) -> ParameterValue? {
        switch v {
        case .int: return v
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: return .int(Int(d))
        default: return nil
        }
    }

    private static func toDouble(_ v: ParameterValue) -> ParameterValue? {
        switch v {
        case .double: v
        case .int(let i): .double(Double(i))
        default: nil
        }
    }

    static func integer(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, Int>, _ value: Int, min: Int? = nil, max: Int? = nil,
                        scale: ParameterScale = .integer, _ summary: String) -> Parameter {
        Parameter(path, keyPath, value, domain: .integer(min: min, max: max), scale: scale, summary,
                  box: { .int($0) }, unbox: { if case .int(let v) = $0 { v } else { nil } }, convert: toInt)
    }

    static func optionalInteger(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, Int?>, _ value: Int? = nil, min: Int? = nil, max: Int? = nil,
                                scale: ParameterScale = .integer, _ summary: String) -> Parameter {
        Parameter(path, keyPath, value, domain: .integer(min: min, max: max), optional: true, scale: scale, summary,
                  box: { $0.map(ParameterValue.int) ?? .null },
                  unbox: { if case .int(let v) = $0 { v } else { Int?.none } },
                  convert: { $0 == .null ? .null : toInt($0) })
    }

    static func real(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, Double>, _ value: Double,
                     above lower: Double? = nil, atLeast: Double? = nil, below upper: Double? = nil, atMost: Double? = nil,
                     scale: ParameterScale = .linear, _ summary: String) -> Parameter {
        Parameter(path, keyPath, value, domain: .real(min: lower ?? atLeast, minInclusive: atLeast != nil, max: upper ?? atMost, maxInclusive: atMost != nil),
                  scale: scale, summary, box: { .double($0) }, unbox: { if case .double(let v) = $0 { v } else { nil } }, convert: toDouble)
    }

    static func optionalReal(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, Double?>,
                             above lower: Double? = nil, atLeast: Double? = nil, below upper: Double? = nil, atMost: Double? = nil,
                             scale: ParameterScale = .linear, _ summary: String) -> Parameter {
        Parameter(path, keyPath, nil, domain: .real(min: lower ?? atLeast, minInclusive: atLeast != nil, max: upper ?? atMost, maxInclusive: atMost != nil),
                  optional: true, scale: scale, summary, box: { $0.map(ParameterValue.double) ?? .null },
                  unbox: { if case .double(let v) = $0 { v } else { Double?.none } },
                  convert: { $0 == .null ? .null : toDouble($0) })
    }

    static func flag(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, Bool>, _ value: Bool, _ summary: String) -> Parameter {
        Parameter(path, keyPath, value, domain: .flag, scale: .categorical, summary,
                  box: { .bool($0) }, unbox: { if case .bool(let v) = $0 { v } else { nil } },
                  convert: { if case .bool = $0 { $0 } else { nil } })
    }

    /// A choice among an enum's raw values; `allowed` narrows the cases (e.g. the essential matrix has no RHO).
    static func choice<E: RawRepresentable & CaseIterable>(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, E>, _ value: E,
                                                           allowed: [E]? = nil, _ summary: String) -> Parameter where E.RawValue == String {
        Parameter(path, keyPath, value, domain: .choice((allowed ?? Array(E.allCases)).map(\.rawValue)), scale: .categorical, summary,
                  box: { .string($0.rawValue) }, unbox: { if case .string(let v) = $0 { E(rawValue: v) } else { nil } },
                  convert: { if case .string = $0 { $0 } else { nil } })
    }

    static func rotation(_ path: String, _ keyPath: WritableKeyPath<PipelineConfig, Matrix3>, _ value: Matrix3, _ summary: String) -> Parameter {
        Parameter(path, keyPath, value, domain: .rotation, scale: .fixed, summary,
                  box: { .matrix($0) }, unbox: { if case .matrix(let m) = $0 { m } else { nil } },
                  convert: { if case .matrix = $0 { $0 } else { nil } })
    }
}

/// Numbers for people and config files: shortest round-trip form, never exponent notation for ordinary values.
func formatNumber(_ value: Double) -> String {
    if value.rounded() == value && abs(value) < 1e15 { return String(Int(value)) }
    let text = "\(value)"
    // Swift prints 1e-05 for 0.00001: spell small values out. A huge one stays in Swift's form (1e+308, not 309 digits).
    guard text.contains("e"), abs(value) < 1e15 else { return text }
    var fixed = String(format: "%.17f", value)
    while fixed.hasSuffix("0") { fixed.removeLast() }
    return Double(fixed) == value ? fixed : text
}

extension Parameter {
    /// A value written as text (a command-line flag, an environment variable): a number, true/false, a choice,
    /// `null`, or a matrix as nine comma-separated numbers. The type is checked here; the range by `set`.
    public func parse(_ text: String) throws -> ParameterValue {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "null", optional { return .null }
        let value: ParameterValue? = switch domain {
        case .integer: Int(trimmed).map(ParameterValue.int)
        case .real: decimalNumber(trimmed).map(ParameterValue.double)
        case .flag: trimmed == "true" ? .bool(true) : trimmed == "false" ? .bool(false) : nil
        case .choice: .string(trimmed)
        case .rotation: {
            // Every entry must read: one that did not was dropped before, and ten entries with a stray word passed.
            // Also as `rephoto defaults` and the docs print it, row by row in brackets.
            let flat = trimmed.hasPrefix("[") ? trimmed.filter { $0 != "[" && $0 != "]" } : trimmed
            let numbers = flat.split(separator: ",", omittingEmptySubsequences: false).map { decimalNumber($0.trimmingCharacters(in: .whitespaces)) }
            return numbers.count == 9 && !numbers.contains(nil) ? .matrix(Matrix3(numbers.map { $0! })) : nil
        }()
        }
        guard let value else {
            // A well-formed number too large for its type is out of range, not of the wrong type.
            let numeral = switch domain {
            case .integer: trimmed.wholeMatch(of: /[+-]?[0-9]+/) != nil
            case .real: isDecimalNumeral(trimmed)
            default: false
            }
            if numeral { throw RephotoError.badInput("\(path) = '\(text)' is out of range (allowed: \(domain))") }
            throw RephotoError.badInput("\(path) = '\(text)' is not \(typeName.hasPrefix("integer") ? "an" : "a") \(typeName)")
        }
        return value
    }
}
