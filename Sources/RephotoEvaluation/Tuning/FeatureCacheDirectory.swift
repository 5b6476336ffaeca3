import Crypto
import Foundation
import RephotoKit

/// Features kept on disk between runs (`rephoto tune --cache DIR`): one file per image and feature setting,
/// named by the SHA-256 of the image's bytes, in a folder named by the settings, the OpenCV version and this
/// file format. A file holds the features and the time detecting them took, so a run that reads them still
/// reports what the configuration costs. Files are written to a temporary name and renamed, so processes
/// sharing the folder (shards) never read half a file; a damaged file is a miss and is written again.
public struct FeatureCacheDirectory: FeatureCacheDisk {
    public let root: URL
    private static let magic = Data("RPFCACHE1".utf8)

    public init(_ root: URL) throws {
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            throw RephotoError.badInput("--cache \(root.path): cannot create the folder (\(error.localizedDescription))")
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw RephotoError.badInput("--cache \(root.path) is not a folder")
        }
        self.root = root
    }

    func file(bytes: Data, config: FeatureConfig) -> URL {
        var settings = PipelineConfig()
        settings.features = config
        let scope = "\(String(decoding: Self.magic, as: UTF8.self)) opencv \(OpenCVRuntime.version)\n" + ParameterRegistry.json(of: settings)
        let folder = Self.hex(SHA256.hash(data: Data(scope.utf8))).prefix(16)
        return root.appendingPathComponent(String(folder)).appendingPathComponent(Self.hex(SHA256.hash(data: bytes)) + ".features")
    }

    public func features(bytes: Data, config: FeatureConfig) -> Features? {
        guard let data = try? Data(contentsOf: file(bytes: bytes, config: config)),
              data.count > Self.magic.count + 8, data.prefix(Self.magic.count) == Self.magic else { return nil }
        let milliseconds = data.withUnsafeBytes { Double(bitPattern: $0.loadUnaligned(fromByteOffset: Self.magic.count, as: UInt64.self)) }
        guard milliseconds.isFinite, milliseconds >= 0 else { return nil }
        return try? Features(serialized: data.suffix(from: data.startIndex + Self.magic.count + 8), config: config,
                             detectMilliseconds: milliseconds)
    }

    public func store(_ features: Features, bytes: Data, config: FeatureConfig) {
        let target = file(bytes: bytes, config: config)
        guard let serialized = try? features.serialized() else { return }
        var data = Self.magic
        withUnsafeBytes(of: features.detectMilliseconds.bitPattern) { data.append(contentsOf: $0) }
        data.append(serialized)
        let temporary = target.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).tmp")
        do {
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: temporary)
            if rename(temporary.path, target.path) != 0 { try? FileManager.default.removeItem(at: temporary) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
        }
    }

    private static func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02x", $0) }.joined() }
}
