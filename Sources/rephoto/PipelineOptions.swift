import ArgumentParser
import RephotoKit

/// The pipeline settings every estimating command takes: a config file, a few common flags, and `--set`
/// for any parameter of the registry (`rephoto defaults` lists them). Flags override the file.
struct PipelineOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: "Pipeline settings, JSON or YAML (docs/configuration.md); the flags below override it.")
    var config: String?
    @Option(parsing: .unconditional, help: "Feature detector: akaze, orb or sift.")
    var detector: DetectorKind?
    @Option(parsing: .unconditional, help: "Detect on a copy downscaled so its longer side is at most N pixels (default 1600; full size: --set features.maxDimension=null); coordinates stay full resolution.")
    var maxDimension: Int?
    @Option(parsing: .unconditional, help: "Refuse images with more pixels than this, before decoding (default 50000000).")
    var maxPixels: Int?
    @Option(parsing: .unconditional, help: "Refuse image files larger than this many bytes, before reading them (default 268435456).")
    var maxBytes: Int?
    @Option(name: .customLong("set"), parsing: .unconditionalSingleValue, help: ArgumentHelp("Set any parameter, e.g. --set features.akaze.threshold=0.002 (repeatable).", valueName: "path=value"))
    var settings: [String] = []

    /// The config file with the flags applied, validated.
    func resolve() throws -> PipelineConfig {
        var overrides: [(path: String, value: ParameterValue)] = []
        for setting in settings {
            guard let equals = setting.firstIndex(of: "="), equals != setting.startIndex else {
                throw RephotoError.badInput("--set '\(setting)' must be path=value, e.g. features.akaze.threshold=0.002")
            }
            let path = String(setting[..<equals])
            let parameter = try ParameterRegistry.known(path, place: "--set: ")
            overrides.append((path, try parameter.parse(String(setting[setting.index(after: equals)...]))))
        }
        if let detector { overrides.append(("features.detector", .string(detector.rawValue))) }
        if let maxDimension { overrides.append(("features.maxDimension", .int(maxDimension))) }
        if let maxPixels { overrides.append(("maxPixels", .int(maxPixels))) }
        if let maxBytes { overrides.append(("maxBytes", .int(maxBytes))) }
        return try PipelineConfig.resolve(file: config, overrides: overrides)
    }
}
