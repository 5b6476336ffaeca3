import Foundation
import RephotoKit

/// The optional `metadata` part (JSON) of an upload: per photo a calibration by name (from the server's
/// calibration folder) or inline intrinsics, and an attitude; settings overrides; alignment options.
/// Schema: openapi.yaml (`Metadata`).
struct RequestMetadata: Decodable, Sendable {
    struct Photo: Decodable, Sendable {
        struct Intrinsics: Decodable, Sendable {
            var fx = 0.0, fy = 0.0, cx = 0.0, cy = 0.0
            var distortion: [Double]?
            var imageWidth: Int?
            var imageHeight: Int?
            /// `"intrinsics": "unknown"`: a reference nobody calibrated (an old photo), estimated for each retake.
            var unknown = false

            enum CodingKeys: String, CodingKey { case fx, fy, cx, cy, distortion, imageWidth, imageHeight }

            init(from decoder: Decoder) throws {
                if let text = try? decoder.singleValueContainer().decode(String.self) {
                    guard CameraIntrinsics.namesUnknown(text) else {
                        throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                                debugDescription: "'\(text.prefix(40))' is neither intrinsics {fx, fy, cx, cy} nor \"unknown\""))
                    }
                    unknown = true
                    return
                }
                let c = try decoder.container(keyedBy: CodingKeys.self)
                fx = try c.decode(Double.self, forKey: .fx)
                fy = try c.decode(Double.self, forKey: .fy)
                cx = try c.decode(Double.self, forKey: .cx)
                cy = try c.decode(Double.self, forKey: .cy)
                distortion = try c.decodeIfPresent([Double].self, forKey: .distortion)
                imageWidth = try c.decodeIfPresent(Int.self, forKey: .imageWidth)
                imageHeight = try c.decodeIfPresent(Int.self, forKey: .imageHeight)
            }
        }

        struct AttitudeValue: Decodable, Sendable {
            var quaternion: [Double]
            var orientation: ScreenOrientation?
            var frame: AttitudeReferenceFrame?
        }

        var calibration: String?
        var intrinsics: Intrinsics?
        var attitude: AttitudeValue?
    }

    struct AlignOptions: Decodable, Sendable {
        var mode: Alignment.Mode?
        var opacity: Double?
        var format: String?
    }

    var reference: Photo?
    var retake: Photo?
    /// Left undecoded here: the parameter registry reads it (PipelineConfig.overriding).
    var hasConfig = false
    var align: AlignOptions?

    /// What the reference is, "photo" or "print" (`ReferenceKind`); nil: a print when its camera is unknown, else detected.
    var referenceKind: ReferenceKind?

    enum CodingKeys: String, CodingKey { case reference, retake, config, align, referenceKind }

    init() {}

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        reference = try c.decodeIfPresent(Photo.self, forKey: .reference)
        retake = try c.decodeIfPresent(Photo.self, forKey: .retake)
        align = try c.decodeIfPresent(AlignOptions.self, forKey: .align)
        if let text = try c.decodeIfPresent(String.self, forKey: .referenceKind) {
            guard let kind = ReferenceKind(rawValue: text) else {
                throw ServiceError.badInput("metadata.referenceKind '\(text.prefix(40))' must be \"photo\" or \"print\"")
            }
            referenceKind = kind
        }
        hasConfig = c.contains(.config)
    }

    /// The keys each object of the metadata may have; `config`'s are the parameter registry's to check.
    private indirect enum Keys {
        case object([String: Keys])
        case any
        static let photo = Keys.object(["calibration": .any,
                                        "intrinsics": .object(["fx": .any, "fy": .any, "cx": .any, "cy": .any, "distortion": .any,
                                                               "imageWidth": .any, "imageHeight": .any]),
                                        "attitude": .object(["quaternion": .any, "orientation": .any, "frame": .any])])
        static let metadata = Keys.object(["reference": photo, "retake": photo, "config": .any, "referenceKind": .any,
                                           "align": .object(["mode": .any, "opacity": .any, "format": .any])])
    }

    /// A misspelt key was dropped without a word, and its default used instead (probe: "orientaton" for a
    /// landscape photo gave a target rectangle turned 180°, 200 OK): every key must be one the schema has.
    private static func refuseUnknownKeys(_ value: Any, _ keys: Keys, at path: String) throws {
        guard case .object(let known) = keys, let object = value as? [String: Any] else { return }
        for (key, child) in object.sorted(by: { $0.key < $1.key }) {
            let place = path.isEmpty ? key : "\(path).\(key)"
            guard let expected = known[key] else {
                throw ServiceError.badInput("metadata: unknown key '\(place)' (\(path.isEmpty ? "the metadata" : path) has \(known.keys.sorted().joined(separator: ", ")))")
            }
            try refuseUnknownKeys(child, expected, at: place)
        }
    }

    /// The part's bytes, decoded; the raw `config` object is kept for the registry.
    static func parse(_ data: Data?) throws -> (RequestMetadata, config: Data?) {
        guard let data, !data.isEmpty else { return (RequestMetadata(), nil) }
        guard data.count <= 64 << 10 else { throw ServiceError.badInput("metadata is \(data.count) bytes, more than 64 KiB") }
        do {
            let metadata = try JSONDecoder().decode(RequestMetadata.self, from: data)
            do {
                try ConfigFile.refuseRepeatedKeys(data, what: "metadata")
            } catch let error as RephotoError {
                throw ServiceError.badInput(error.message)
            }
            let parsed = try JSONSerialization.jsonObject(with: data)
            try refuseUnknownKeys(parsed, Keys.metadata, at: "")
            var config: Data?
            if metadata.hasConfig, let object = parsed as? [String: Any], let tree = object["config"] {
                // JSONSerialization traps (not throws) on a top-level value that is no object: check first.
                guard let settings = tree as? [String: Any], JSONSerialization.isValidJSONObject(settings) else {
                    throw ServiceError.badInput("metadata.config must be an object of settings, as in a config file")
                }
                config = try JSONSerialization.data(withJSONObject: settings)
            }
            return (metadata, config)
        } catch let error as ServiceError {
            throw error
        } catch let error as DecodingError {
            throw ServiceError.badInput("metadata: \(ConfigFile.describe(error, json: data))")
        } catch {
            throw ServiceError.badInput("metadata is not JSON (\(ConfigFile.describe(error)))")
        }
    }

    /// The settings for this request: the server's, with the request's overrides. Limits (bytes, pixels,
    /// analysis size) may be lowered by a request, never raised.
    static func settings(base: PipelineConfig, overrides: Data?) throws -> PipelineConfig {
        guard let overrides else { return base }
        var config: PipelineConfig
        do {
            config = try base.overriding(with: overrides)
        } catch let error as RephotoError {
            throw ServiceError.badInput("metadata.config: \(error.message)")
        }
        guard config.maxBytes <= base.maxBytes, config.maxPixels <= base.maxPixels else {
            throw ServiceError.badInput("metadata.config may lower maxBytes and maxPixels, not raise them")
        }
        if let limit = base.features.maxDimension, (config.features.maxDimension ?? Int.max) > limit {
            throw ServiceError.badInput("metadata.config: features.maxDimension may not exceed the server's \(limit) (memory)")
        }
        // A request's cost is the pipeline's, under --request-timeout, but a timed-out request runs on: two
        // requests asking a million samples of every search held both pipelines for minutes, FLANN at a million
        // checks held one for 14 minutes, and SIFT at 10 octave layers tripled a pipeline's memory.
        for cap in costCaps {
            // Every path is the registry's (ServerTests.everyCostCapIsARegistryParameter).
            guard let parameter = ParameterRegistry.parameter(cap.path) else { continue }
            let (limit, asked) = (parameter.value(in: base), parameter.value(in: config))
            func size(_ value: ParameterValue) -> Double? {
                switch value {
                case .int(let n): cap.zeroIsUnlimited && n == 0 ? .infinity : Double(n)
                case .double(let x): x
                default: nil
                }
            }
            if let a = size(asked), let l = size(limit), a > l {
                throw ServiceError.badInput("metadata.config: \(cap.path) = \(asked) may not exceed the server's \(limit) (\(cap.cost))")
            }
        }
        // cv::BFMatcher is there to check our matcher against, at 2-3 times its time (19.5 CPU-s with
        // matching.mutual on a textured 1600 px pair, 5.5 at the defaults): a server chooses it, not a request.
        if config.matching.matcher == .opencvBruteForce, base.matching.matcher != .opencvBruteForce {
            throw ServiceError.badInput("metadata.config: matching.matcher opencv_brute_force is for checks: a request may choose brute_force or flann (time)")
        }
        // SIFT's float descriptors cost several times AKAZE's binary ones to match: at the 20,000-keypoint cap a
        // Strecha pair matched in 9-19 s against AKAZE's 0.7 s. A request that turns SIFT on
        // keeps at most siftKeypoints a side (1.6 s); a server whose own settings use SIFT has chosen its cost.
        if config.features.detector == .sift, base.features.detector != .sift {
            let asked = config.features.maxKeypoints
            config.features.maxKeypoints = asked == 0 ? siftKeypoints : min(asked, siftKeypoints)
        }
        return config
    }

    /// The most keypoints a side a request that turns SIFT on keeps (`features.maxKeypoints`).
    static let siftKeypoints = 8_000

    /// The counts a request may lower but not raise, with what they cost; for SIFT's count and the keypoint cap
    /// 0 keeps every feature, no cap at all.
    static let costCaps: [(path: String, zeroIsUnlimited: Bool, cost: String)] = [
        ("homography.maxIterations", false, "time"), ("pose.essential.maxIterations", false, "time"),
        ("pose.minIterations", false, "time"), ("pose.sensorGuidedSamples", false, "time"), ("pose.reproductions", false, "time"),
        ("pose.runnersUp", false, "time"), ("features.orb.features", false, "time"), ("features.sift.features", true, "time"),
        ("features.maxKeypoints", true, "time"), ("matching.flannChecks", false, "time"), ("matching.kdTrees", false, "time"),
        ("matching.lshTableNumber", false, "time and memory"), ("matching.lshMultiProbeLevel", false, "time"),
        ("matching.lshKeySize", false, "memory"), ("features.sift.octaveLayers", false, "memory"),
        ("features.akaze.octaves", false, "memory"), ("features.akaze.octaveLayers", false, "memory"),
        ("features.orb.levels", false, "memory"), ("features.orb.patchSize", false, "time"), ("features.orb.edgeThreshold", false, "time"),
        ("matching.guidedRadius", false, "time"), ("pose.referenceFocal.maxIterations", false, "time"),
        ("pose.referenceFocal.minIterations", false, "time"), ("pose.referenceFocal.sixPointIterations", false, "time"),
    ]

    /// The reference's camera is said to be unknown (an old photo): estimated for each retake from its matches.
    static func cameraUnknown(_ photo: Photo?) -> Bool { photo?.intrinsics?.unknown == true }

    /// Whether a photo's metadata says anything of its camera (a calibration, intrinsics or "unknown"); when the
    /// reference's does not, a stored reference's own camera holds.
    static func namesCamera(_ photo: Photo?) -> Bool { photo?.calibration != nil || photo?.intrinsics != nil }

    /// The camera of one photo: a named calibration, inline intrinsics, or none.
    static func camera(_ photo: Photo?, role: String, calibrationDirectory: String?) throws -> CameraIntrinsics? {
        guard let photo else { return nil }
        if photo.calibration != nil && photo.intrinsics != nil {
            throw ServiceError.badInput("metadata.\(role): give calibration or intrinsics, not both")
        }
        if let name = photo.calibration {
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
            guard !name.isEmpty, name.count <= 64, name.first != ".", name.allSatisfy(allowed.contains) else {
                throw ServiceError.badInput("metadata.\(role).calibration '\(name)' must be a plain name from the server's calibration folder")
            }
            guard let calibrationDirectory else {
                throw ServiceError.badInput("metadata.\(role).calibration: this worker serves no named calibrations (rephoto serve --calibration-dir); send intrinsics instead")
            }
            for ext in ["yml", "yaml", "xml", "json"] {
                let path = "\(calibrationDirectory)/\(name).\(ext)"
                if FileManager.default.fileExists(atPath: path) {
                    do {
                        return try CameraIntrinsics.load(from: path)
                    } catch let error as RephotoError {
                        throw ServiceError(.internal, code: "internal", kind: .internal, "calibration '\(name)' on the server is unreadable: \(error.message)")
                    }
                }
            }
            throw ServiceError.badInput("metadata.\(role).calibration: no calibration named '\(name)'")
        }
        if let i = photo.intrinsics, i.unknown {
            guard role == "reference" else { throw ServiceError.badInput("metadata.\(role).intrinsics: only the reference's camera may be \"unknown\"") }
            return nil
        }
        if let i = photo.intrinsics {
            let size = i.imageWidth.flatMap { w in i.imageHeight.map { ImageSize(width: w, height: $0) } }
            let camera = CameraIntrinsics(fx: i.fx, fy: i.fy, cx: i.cx, cy: i.cy, distortion: i.distortion ?? [], imageSize: size)
            do {
                try camera.validate("metadata.\(role).intrinsics")
            } catch let error as RephotoError {
                throw ServiceError.badInput(error.message)
            }
            return camera
        }
        return nil
    }

    static func attitude(_ photo: Photo?, role: String) throws -> Attitude? {
        guard let a = photo?.attitude else { return nil }
        guard a.quaternion.count == 4 else { throw ServiceError.badInput("metadata.\(role).attitude.quaternion needs 4 numbers w, x, y, z") }
        do {
            return try Attitude(quaternion: Quaternion(w: a.quaternion[0], x: a.quaternion[1], y: a.quaternion[2], z: a.quaternion[3]),
                                frame: a.frame ?? .xArbitraryZVertical, orientation: a.orientation ?? .portrait)
        } catch let error as RephotoError {
            throw ServiceError.badInput("metadata.\(role).attitude: \(error.message)")
        }
    }
}
