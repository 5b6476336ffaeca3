import Crypto
import Foundation
import RephotoKit

/// Features kept on disk between runs (`rephoto tune --cache DIR`): one file per image and feature setting,
/// named by the SHA-256 of the image's bytes, in a folder named by the settings, the OpenCV version and this
/// file format. A file holds the features, the time detecting them took (on the machine that wrote it), and a
/// SHA-256 of both, so a run that reads them still reports what the configuration costs and damage of any kind
/// is a miss: the features are detected again and the file rewritten. Files are written to a temporary name
/// and renamed, so processes sharing the folder (shards) never read half a file; temporary files a killed
/// run left behind are removed once they are an hour old.
public struct FeatureCacheDirectory: FeatureCacheDisk {
    public let root: URL
    private static let magic = Data("RPFCACHE2".utf8)
    /// Larger files are not features this program wrote (100,000 SIFT keypoints take 54 MB): a miss, unread.
    public static let maxFileBytes = 256 << 20

    public init(_ root: URL) throws {
        let manager = FileManager.default
        var isFolder: ObjCBool = false
        if !(manager.fileExists(atPath: root.path, isDirectory: &isFolder) && isFolder.boolValue) {
            do {
                try manager.createDirectory(at: root, withIntermediateDirectories: true)
            } catch {
                throw RephotoError.badInput("--cache \(root.path) is not a folder and cannot be made one")
            }
        }
        guard manager.fileExists(atPath: root.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw RephotoError.badInput("--cache \(root.path) is not a folder")
        }
        self.root = root
        removeStaleTemporaryFiles()
    }

    /// Whether new features can be written (a read-only cache still serves what it holds).
    public var isWritable: Bool { FileManager.default.isWritableFile(atPath: root.path) }

    func file(bytes: Data, config: FeatureConfig) -> URL {
        var settings = PipelineConfig()
        settings.features = config
        let scope = "\(String(decoding: Self.magic, as: UTF8.self)) opencv \(OpenCVRuntime.version)\n" + ParameterRegistry.json(of: settings)
        let folder = Self.hex(SHA256.hash(data: Data(scope.utf8))).prefix(16)
        return root.appendingPathComponent(String(folder)).appendingPathComponent(Self.hex(SHA256.hash(data: bytes)) + ".features")
    }

    // Layout: magic, SHA-256 of the rest (32 bytes), detection milliseconds (a Double's bits), serialized features.
    public func features(bytes: Data, config: FeatureConfig) -> Features? {
        // Only a regular file, opened without blocking (a FIFO in its place must not hang the run), read at most
        // one byte past the limit: a larger file is a miss without ever being held whole.
        let descriptor = open(file(bytes: bytes, config: config).path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
              let data = try? handle.read(upToCount: Self.maxFileBytes + 1), data.count <= Self.maxFileBytes else { return nil }
        let header = Self.magic.count + 32
        guard data.count > header + 8, data.prefix(Self.magic.count) == Self.magic else { return nil }
        let body = data.suffix(from: data.startIndex + header)
        guard Data(SHA256.hash(data: body)) == data.subdata(in: data.startIndex + Self.magic.count ..< data.startIndex + header) else { return nil }
        let milliseconds = body.withUnsafeBytes { Double(bitPattern: $0.loadUnaligned(as: UInt64.self)) }
        guard milliseconds.isFinite, milliseconds >= 0 else { return nil }
        return try? Features(serialized: body.suffix(from: body.startIndex + 8), config: config, detectMilliseconds: milliseconds)
    }

    public func store(_ features: Features, bytes: Data, config: FeatureConfig) {
        let target = file(bytes: bytes, config: config)
        guard let serialized = try? features.serialized() else { return }
        var body = Data()
        withUnsafeBytes(of: features.detectMilliseconds.bitPattern) { body.append(contentsOf: $0) }
        body.append(serialized)
        var data = Self.magic
        data.append(Data(SHA256.hash(data: body)))
        data.append(body)
        let temporary = target.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).tmp")
        do {
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: temporary)
            if rename(temporary.path, target.path) != 0 { try? FileManager.default.removeItem(at: temporary) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
        }
    }

    /// A run killed between writing and renaming leaves a temporary file; one an hour old belongs to no live run.
    private func removeStaleTemporaryFiles() {
        let manager = FileManager.default
        let cutoff = Date().addingTimeInterval(-3600)
        for folder in (try? manager.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? [] {
            for file in (try? manager.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
            where file.lastPathComponent.hasPrefix(".") && file.pathExtension == "tmp" {
                if let modified = try? file.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate, modified < cutoff {
                    try? manager.removeItem(at: file)
                }
            }
        }
    }

    private static func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02x", $0) }.joined() }
}
