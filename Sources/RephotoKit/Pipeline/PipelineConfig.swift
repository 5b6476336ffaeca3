import Foundation
import Yams

/// Every tunable of the pose pipeline in one value. Each parameter is declared once, in `ParameterRegistry`,
/// which gives the defaults, the ranges, the decoding (JSON or YAML: missing keys keep their defaults,
/// unknown keys and out-of-range values are errors naming the parameter) and the encoding.
public struct PipelineConfig: Codable, Equatable, Sendable {
    public var features = FeatureConfig()
    public var matching = MatchConfig()
    public var homography: RobustConfig = RobustConfig(defaultsOf: \.homography)
    public var pose = PoseConfig()
    public var navigation = NavigationConfig()
    public var sensor = SensorConfig()
    public var session = SessionConfig()
    /// Fewer matches or homography inliers than this is "could not estimate".
    public var minimumInliers: Int = ParameterRegistry.defaultValue(\.minimumInliers)
    /// Images above this many pixels are refused before decoding.
    public var maxPixels: Int = ParameterRegistry.defaultValue(\.maxPixels)
    /// Refuse images with damaged data (a decoder warning) instead of reporting a warning.
    public var strictDecoding: Bool = ParameterRegistry.defaultValue(\.strictDecoding)
    /// Image files above this many bytes are refused before they are read.
    public var maxBytes: Int = ParameterRegistry.defaultValue(\.maxBytes)

    public init() {}

    public init(from decoder: Decoder) throws {
        self.init()
        try ConfigTree(from: decoder).apply(to: &self)
    }

    public func encode(to encoder: Encoder) throws { try EncodedTree(ParameterRegistry.tree(of: self)).encode(to: encoder) }

    /// Checks every parameter's range and the rules between parameters; the error names the parameter.
    public func validate() throws { try ParameterRegistry.validate(self) }

    /// These settings for a reference of `kind`: a print's features and its frames' are detected as
    /// `FeatureConfig.forUnknownReference` says (an old print is one whatever is known of its camera).
    public func forReference(kind: ReferenceKind) -> PipelineConfig {
        guard kind == .print else { return self }
        var adjusted = self
        adjusted.features = features.forUnknownReference()
        return adjusted
    }

    /// Reads a JSON or YAML config file (by extension; otherwise JSON, then YAML) and validates it.
    public static func load(from path: String) throws -> PipelineConfig {
        let data = try readSmallFile(path, limit: 1 << 20)
        do {
            return try decode(data, yaml: ["yml", "yaml"].contains((path as NSString).pathExtension.lowercased()))
        } catch let error as RephotoError {
            throw error.prefixed(path)
        }
    }

    /// Decodes and validates config text (JSON, or YAML when `yaml`; JSON falls back to YAML).
    public static func decode(_ data: Data, yaml: Bool = false) throws -> PipelineConfig {
        // The text is parsed to a plain tree first and applied outside the decoder: Yams reports any error
        // thrown inside decoding as "not valid YAML", which would hide the parameter's own message.
        let tree: ConfigTree
        func fromYAML() throws -> ConfigTree {
            // The resolver YAMLDecoder uses: merge keys only, scalars typed by what decodes them.
            let node = try BoundedYAML.compose(String(decoding: data, as: UTF8.self), what: "settings file", resolver: Resolver.basic.appending(.merge))
            return try YAMLDecoder().decode(ConfigTree.self, from: node ?? "")
        }
        do {
            if yaml {
                tree = try fromYAML()
            } else if let json = try? JSONDecoder().decode(ConfigTree.self, from: data) {
                try ConfigFile.refuseRepeatedKeys(data, what: "settings file")  // the YAML path checks while composing
                tree = json
            } else {
                tree = try fromYAML()
            }
        } catch let error as RephotoError {
            throw error
        } catch {
            throw RephotoError.badInput("neither JSON nor YAML settings (\(ConfigFile.describe(error)))")
        }
        var config = PipelineConfig()
        try tree.apply(to: &config)
        try config.validate()
        return config
    }

    /// These settings with a partial settings tree (JSON, as in a config file) applied on top, validated:
    /// a request's overrides of a service's settings.
    public func overriding(with json: Data) throws -> PipelineConfig {
        let tree: ConfigTree
        do {
            tree = try JSONDecoder().decode(ConfigTree.self, from: json)
        } catch {
            throw RephotoError.badInput("settings overrides are not JSON (\(ConfigFile.describe(error)))")
        }
        try ConfigFile.refuseRepeatedKeys(json, what: "settings overrides")
        var config = self
        try tree.apply(to: &config)
        try config.validate()
        return config
    }

    /// A config file (nil: the defaults) with overrides applied in order, each `path` a registry parameter,
    /// then validated: how every entry point (CLI flags, request metadata, the tuner) sets parameters.
    public static func resolve(file: String?, overrides: [(path: String, value: ParameterValue)] = []) throws -> PipelineConfig {
        var config = try file.map(load(from:)) ?? PipelineConfig()
        for (path, value) in overrides {
            try ParameterRegistry.known(path).set(value, in: &config)
        }
        try config.validate()
        return config
    }
}

/// Encodes the registry's tree of a config (objects in declaration order).
private struct EncodedTree: Encodable {
    let node: Any
    init(_ node: Any) { self.node = node }

    func encode(to encoder: Encoder) throws {
        if let object = node as? [(String, Any)] {
            var c = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, value) in object { try c.encode(EncodedTree(value), forKey: AnyCodingKey(stringValue: key)) }
            return
        }
        var c = encoder.singleValueContainer()
        switch node as! ParameterValue {
        case .int(let v): try c.encode(v)
        case .double(let v): try c.encode(v)
        case .bool(let v): try c.encode(v)
        case .string(let v): try c.encode(v)
        case .matrix(let m): try c.encode(m)
        case .null: try c.encodeNil()
        }
    }
}
