import Crypto
import Foundation
import RephotoKit

/// Uploaded references, content-addressed (the id is the SHA-256 of the image bytes), on disk so a restart
/// or another instance sharing the folder finds them: `<dir>/<id[0..1]>/<id>.image`, `<id>.json` (the
/// camera given at upload) and `<id>.features-<settings>` (the prepared features per feature settings). Writes go to a temporary file renamed into place, so a reader never sees half
/// a file and two instances writing the same id write the same bytes. Without a folder the store is empty
/// and references live only in the cache.
final class ReferenceStore: Sendable {
    struct Entry: Codable, Sendable {
        var camera: CameraIntrinsics?
        var bytes: Int
    }

    let directory: URL?
    /// How a file is read: nil when it cannot be just now. A parameter so that tests can fail reads, which a
    /// process running as root cannot provoke through permissions.
    let read: @Sendable (String) -> Data?

    init(directory: String?, read: @escaping @Sendable (String) -> Data? = { FileManager.default.contents(atPath: $0) }) throws {
        self.directory = directory.map { URL(fileURLWithPath: $0) }
        self.read = read
        if let dir = self.directory {
            do {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let probe = dir.appendingPathComponent(".write-check-\(getpid())")
                try Data().write(to: probe)
                try FileManager.default.removeItem(at: probe)
            } catch {
                throw RephotoError.badInput("--reference-store \(dir.path): cannot write there (\(fileErrorReason(error)))")
            }
        }
    }

    static func id(of image: Data) -> String {
        SHA256.hash(data: image).map { String(format: "%02x", $0) }.joined()
    }

    static func isValid(_ id: String) -> Bool {
        id.utf8.count == 64 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private func paths(_ id: String) -> (image: URL, entry: URL)? {
        guard let directory, Self.isValid(id) else { return nil }
        let folder = directory.appendingPathComponent(String(id.prefix(2)))
        return (folder.appendingPathComponent("\(id).image"), folder.appendingPathComponent("\(id).json"))
    }

    func put(_ id: String, image: Data, camera: CameraIntrinsics?) throws {
        guard let (imagePath, entryPath) = paths(id) else { return }
        try FileManager.default.createDirectory(at: imagePath.deletingLastPathComponent(), withIntermediateDirectories: true)
        // The entry last: a reference exists once its entry does, and then its image is complete.
        try image.write(to: imagePath, options: .atomic)
        try JSONEncoder().encode(Entry(camera: camera, bytes: image.count)).write(to: entryPath, options: .atomic)
    }

    /// The camera stored with a reference (nil also when unknown), without reading its image.
    func camera(_ id: String) -> CameraIntrinsics? {
        guard let (_, entryPath) = paths(id), let data = read(entryPath.path) else { return nil }
        return (try? JSONDecoder().decode(Entry.self, from: data))?.camera
    }

    func get(_ id: String) -> (image: Data, camera: CameraIntrinsics?)? {
        guard let (imagePath, entryPath) = paths(id),
              let entryData = read(entryPath.path),
              let entry = try? JSONDecoder().decode(Entry.self, from: entryData),
              let image = read(imagePath.path), image.count == entry.bytes,
              Self.id(of: image) == id else { return nil }  // the id is the image's hash: a damaged image is no image
        return (image, entry.camera)
    }

    /// Whether a stored reference is damaged for good, not merely unread for the moment (a read can fail under
    /// load, out of file descriptors, and must not cost the reference): its entry or image is missing or no
    /// file, or its image is not the size and hash the entry and id say.
    func isDamaged(_ id: String) -> Bool {
        guard let (imagePath, entryPath) = paths(id) else { return false }
        for path in [entryPath, imagePath] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path.path, isDirectory: &isDirectory), !isDirectory.boolValue else { return true }
        }
        guard let entryData = read(entryPath.path),
              let image = read(imagePath.path) else { return false }
        // An unreadable entry beside an image that still hashes to the id is `hasDamagedEntry`: the image is kept.
        guard let entry = try? JSONDecoder().decode(Entry.self, from: entryData) else { return Self.id(of: image) != id }
        return image.count != entry.bytes || Self.id(of: image) != id
    }

    /// Whether a reference's entry no longer decodes while its image still hashes to its id (damage on disk, an
    /// edit by hand): the camera it held is lost, so the reference cannot be scored as uploaded, but the image is
    /// intact and adding it again rewrites the entry. Removing it instead lost the image (found by probing).
    func hasDamagedEntry(_ id: String) -> Bool {
        guard let (imagePath, entryPath) = paths(id), let entryData = read(entryPath.path),
              (try? JSONDecoder().decode(Entry.self, from: entryData)) == nil, let image = read(imagePath.path) else { return false }
        return Self.id(of: image) == id
    }

    /// Saved features of a reference for one set of feature settings (`settingsKey`).
    private func featuresPath(_ id: String, _ settingsKey: String) -> URL? {
        paths(id).map { $0.image.deletingLastPathComponent().appendingPathComponent("\(id).features-\(settingsKey)") }
    }

    /// Saved with their SHA-256 after them: a damaged file is detected again rather than read. Fields edited in
    /// a file (the norm, the descriptor size, a keypoint made NaN) were read as they were, and answered as the
    /// client's error or as a different score (probe).
    func putFeatures(_ id: String, settingsKey: String, _ data: Data) throws {
        guard let path = featuresPath(id, settingsKey) else { return }
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (data + Data(SHA256.hash(data: data))).write(to: path, options: .atomic)
    }

    /// The saved features, nil when there are none or they are damaged.
    func features(_ id: String, settingsKey: String) -> Data? {
        guard contains(id), let path = featuresPath(id, settingsKey), let file = read(path.path),
              file.count >= SHA256.byteCount else { return nil }
        let data = file.prefix(file.count - SHA256.byteCount)
        guard Data(SHA256.hash(data: data)) == file.suffix(SHA256.byteCount) else { return nil }
        return Data(data)
    }

    /// A short key of the feature settings, naming a features file.
    static func settingsKey(_ features: FeatureConfig) -> String {
        var settings = PipelineConfig()
        settings.features = features
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = (try? encoder.encode(settings)) ?? Data()
        return String(SHA256.hash(data: json).map { String(format: "%02x", $0) }.joined().prefix(16))
    }

    func contains(_ id: String) -> Bool {
        guard let (_, entryPath) = paths(id) else { return false }
        return FileManager.default.fileExists(atPath: entryPath.path)
    }

    @discardableResult
    func delete(_ id: String) -> Bool {
        guard let (imagePath, entryPath) = paths(id) else { return false }
        let existed = (try? FileManager.default.removeItem(at: entryPath)) != nil
        try? FileManager.default.removeItem(at: imagePath)
        let folder = imagePath.deletingLastPathComponent()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where name.hasPrefix("\(id).features-") {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
        return existed
    }

    /// Entries and bytes on disk (for /metrics).
    func size() -> (entries: Int, bytes: Int) {
        guard let directory, let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey]) else { return (0, 0) }
        var entries = 0, bytes = 0
        for case let url as URL in walker {
            if url.pathExtension == "json" { entries += 1 }
            bytes += (try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return (entries, bytes)
    }
}

/// Prepared references (features, FLANN index) in memory, least recently used first out, bounded in bytes.
/// Keyed by id and the settings the features depend on, so an override of the detector never reuses them.
final class ReferenceCache: @unchecked Sendable {
    private let lock = NSLock()
    // `registered`: added as a reference (POST /v1/references). A reference uploaded with a score is cached
    // too, for the next score, but is nobody's reference: it was reported known, so anyone could learn whether
    // an image had been scored, and scored against by id (probe).
    private var entries: [String: (frame: ReferenceFrame, camera: CameraIntrinsics?, bytes: Int, used: UInt64, registered: Bool)] = [:]
    private var clock: UInt64 = 0
    private(set) var bytes = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    static func key(_ id: String, _ features: FeatureConfig, _ camera: CameraIntrinsics?) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var settings = PipelineConfig()
        settings.features = features
        let f = (try? encoder.encode(settings)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let c = (try? encoder.encode(camera)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return "\(id)|\(f)|\(c)"
    }

    static func cost(_ frame: ReferenceFrame) -> Int {
        frame.features.count * (frame.features.descriptorBytes + 64) + 4096
    }

    /// `registeredOnly`: only a frame of a registered reference (a lookup by id).
    func get(_ key: String, registeredOnly: Bool) -> ReferenceFrame? {
        lock.withLock {
            guard var entry = entries[key], entry.registered || !registeredOnly else { return nil }
            clock += 1
            entry.used = clock
            entries[key] = entry
            return entry.frame
        }
    }

    /// `camera`: the one the frame was prepared with (as keyed), given back by `camera(id:)`.
    func put(_ key: String, _ frame: ReferenceFrame, camera: CameraIntrinsics?, registered: Bool = false) {
        let cost = Self.cost(frame)
        lock.withLock {
            guard cost <= capacity else { return }
            var wasRegistered = false
            if let old = entries.removeValue(forKey: key) {
                bytes -= old.bytes
                wasRegistered = old.registered
            }
            clock += 1
            entries[key] = (frame, camera, cost, clock, registered || wasRegistered)
            bytes += cost
            while bytes > capacity, let oldest = entries.min(by: { $0.value.used < $1.value.used }) {
                entries.removeValue(forKey: oldest.key)
                bytes -= oldest.value.bytes
            }
        }
    }

    func remove(id: String) {
        lock.withLock {
            for key in entries.keys where key.hasPrefix(id + "|") {
                bytes -= entries.removeValue(forKey: key)!.bytes
            }
        }
    }

    /// Whether a registered reference with this id is cached (for any settings).
    func contains(id: String) -> Bool { lock.withLock { entries.contains { $0.key.hasPrefix(id + "|") && $0.value.registered } } }

    /// Marks every cached frame of `id` registered; false when none is cached (it did not fit).
    func register(id: String) -> Bool {
        lock.withLock {
            var any = false
            for key in entries.keys where key.hasPrefix(id + "|") {
                entries[key]?.registered = true
                any = true
            }
            return any
        }
    }

    /// The camera of the reference's most recently used prepared frame: without a store, the only record of
    /// the camera an upload gave (scoring by id without it answered 404; probe).
    func camera(id: String) -> CameraIntrinsics? {
        lock.withLock { entries.filter { $0.key.hasPrefix(id + "|") && $0.value.registered }.max { $0.value.used < $1.value.used }?.value.camera }
    }

    var count: Int { lock.withLock { entries.count } }
}
