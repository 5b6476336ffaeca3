import Crypto
import Foundation
import RephotoKit

/// Uploaded references, content-addressed (the id is the SHA-256 of the image bytes), on disk so a restart
/// or another instance sharing the folder finds them: `<dir>/<id[0..1]>/<id>.image`, `<id>.json` (the
/// camera given at upload, or that it is unknown), `<id>.features-<settings>` (the prepared features per feature
/// settings, derived files that `--store-bytes` bounds, least recently used out first) and `<id>.points-<retake>`
/// (points marked by hand between the reference and one retake, by the retake's hash; the newest `maxMarkFiles`). Writes go to a hidden temporary file
/// renamed into place, so a reader never sees half a file and two instances writing the same id write the same
/// bytes; temporaries a killed process left are removed at start. Without a folder the store is empty and
/// references live only in the cache.
final class ReferenceStore: Sendable {
    struct Entry: Codable, Sendable {
        var camera: CameraIntrinsics?
        var bytes: Int
        /// An old photo's camera nobody knows (`"intrinsics": "unknown"`): estimated for each retake. Absent when false.
        var cameraUnknown: Bool?
    }

    /// Marked points kept per reference: past it, the least recently written go first.
    static let maxMarkFiles = 64

    /// A write or removal that failed, by what the client can do about it; never carries a path.
    enum Failure: Error, Equatable {
        /// The disk (or quota) is full.
        case noRoom
        /// The store cannot be changed (read-only, permissions).
        case readOnly
        /// Any other error of the operating system, by its errno.
        case io(Int32)

        init(errno code: Int32) {
            switch code {
            case ENOSPC, EDQUOT, EFBIG: self = .noRoom
            case EROFS, EACCES, EPERM: self = .readOnly
            default: self = .io(code)
            }
        }

        var reason: String {
            switch self {
            case .noRoom: "no space left on the store's disk"
            case .readOnly: "the store cannot be written (read-only or not permitted)"
            case .io(let code): "the store failed: \(String(cString: strerror(code)))"
            }
        }
    }

    /// The file operations, parameters so that tests can fail them, which a process running as root cannot
    /// provoke through permissions. `read` answers nil when a file cannot be read just now.
    struct FileOps: Sendable {
        var read: @Sendable (String) -> Data? = { FileManager.default.contents(atPath: $0) }
        var write: @Sendable (Data, String) throws(Failure) -> Void = ReferenceStore.writeFile
        var remove: @Sendable (String) throws(Failure) -> Void = ReferenceStore.removeFile
    }

    let directory: URL?
    let files: FileOps
    var read: @Sendable (String) -> Data? { files.read }
    /// Bytes the derived files may take (nil: no bound).
    let derivedCapacity: Int?
    /// A temporary or orphaned file this old is no longer being written by anyone: removed at start.
    static let staleAge: TimeInterval = 600

    convenience init(directory: String?, read: @escaping @Sendable (String) -> Data?) throws {
        try self.init(directory: directory, files: FileOps(read: read))
    }

    init(directory: String?, files: FileOps = FileOps(), derivedCapacity: Int? = nil) throws {
        self.directory = directory.map { URL(fileURLWithPath: $0) }
        self.files = files
        self.derivedCapacity = derivedCapacity
        if let dir = self.directory {
            do {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let probe = dir.appendingPathComponent(".write-check-\(getpid())")
                try Data().write(to: probe)
                try FileManager.default.removeItem(at: probe)
            } catch {
                throw RephotoError.badInput("--reference-store \(dir.path): cannot write there (\(fileErrorReason(error)))")
            }
            removeStale()
        }
    }

    /// Writes `data` to a hidden temporary beside `path`, then renames it into place.
    static func writeFile(_ data: Data, _ path: String) throws(Failure) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".tmp-\(url.lastPathComponent)-\(UInt32.random(in: .min ... .max))").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(errno: errno) }
        var failure: Int32 = 0
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += n
            }
        }
        if failure == 0, close(fd) != 0 { failure = errno } else if failure != 0 { close(fd) }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw Failure(errno: failure)
        }
    }

    /// Removes a file; one already gone is no failure.
    static func removeFile(_ path: String) throws(Failure) {
        if unlink(path) != 0, errno != ENOENT { throw Failure(errno: errno) }
    }

    /// Removes what killed processes left: hidden temporaries, and derived files whose reference is gone, once
    /// they are `staleAge` old (another instance may be writing them now).
    func removeStale() {
        guard let directory, let shards = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        let now = Date()
        func stale(_ path: String) -> Bool {
            guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else { return false }
            return now.timeIntervalSince(modified) >= Self.staleAge
        }
        for name in shards where name.hasPrefix(".tmp-") || name.hasPrefix(".write-check-") {
            let path = directory.appendingPathComponent(name).path
            if stale(path) { try? files.remove(path) }
        }
        for shard in shards where shard.count == 2 {
            let folder = directory.appendingPathComponent(shard)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
                let path = folder.appendingPathComponent(name).path
                let orphan = (name.contains(".features-") || name.contains(".points-")) && !FileManager.default.fileExists(atPath: folder.appendingPathComponent(String(name.prefix(64)) + ".json").path)
                if name.hasPrefix(".") || orphan, stale(path) { try? files.remove(path) }
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

    /// Creates a shard folder; its failure is the store's.
    private func makeFolder(_ folder: URL) throws(Failure) {
        if mkdir(folder.path, 0o755) != 0, errno != EEXIST { throw Failure(errno: errno) }
    }

    func put(_ id: String, image: Data, camera: CameraIntrinsics?, cameraUnknown: Bool = false) throws(Failure) {
        guard let (imagePath, entryPath) = paths(id) else { return }
        try makeFolder(imagePath.deletingLastPathComponent())
        // The entry last: a reference exists once its entry does, and then its image is complete.
        try files.write(image, imagePath.path)
        let entry = (try? JSONEncoder().encode(Entry(camera: camera, bytes: image.count, cameraUnknown: cameraUnknown ? true : nil))) ?? Data()
        try files.write(entry, entryPath.path)
    }

    /// A reference's entry, nil when there is none or it does not decode.
    func entry(_ id: String) -> Entry? {
        guard let (_, entryPath) = paths(id), let data = read(entryPath.path) else { return nil }
        return try? JSONDecoder().decode(Entry.self, from: data)
    }

    /// The camera stored with a reference (nil also when unknown), without reading its image.
    func camera(_ id: String) -> CameraIntrinsics? { entry(id)?.camera }

    func get(_ id: String) -> (image: Data, entry: Entry)? {
        guard let (imagePath, entryPath) = paths(id),
              let entryData = read(entryPath.path),
              let entry = try? JSONDecoder().decode(Entry.self, from: entryData),
              let image = read(imagePath.path), image.count == entry.bytes,
              Self.id(of: image) == id else { return nil }  // the id is the image's hash: a damaged image is no image
        return (image, entry)
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
    /// intact and adding it again rewrites the entry. Removing it instead lost the image.
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
    /// client's error or as a different score.
    /// Written only for a stored reference; one deleted meanwhile (by this or another instance) takes it along.
    /// Returns the derived files evicted to stay within `derivedCapacity`.
    @discardableResult
    func putFeatures(_ id: String, settingsKey: String, _ data: Data) throws(Failure) -> Int {
        guard let path = featuresPath(id, settingsKey) else { return 0 }
        try makeFolder(path.deletingLastPathComponent())
        try files.write(data + Data(SHA256.hash(data: data)), path.path)
        guard contains(id) else {
            try? files.remove(path.path)
            return 0
        }
        return evictDerived(sparing: path.path)
    }

    /// The saved features, nil when there are none or they are damaged. A read marks them used (their
    /// modification time), for the eviction order.
    func features(_ id: String, settingsKey: String) -> Data? {
        guard contains(id), let path = featuresPath(id, settingsKey), let file = read(path.path),
              file.count >= SHA256.byteCount else { return nil }
        let data = file.prefix(file.count - SHA256.byteCount)
        guard Data(SHA256.hash(data: data)) == file.suffix(SHA256.byteCount) else { return nil }
        if derivedCapacity != nil { utimes(path.path, nil) }
        return Data(data)
    }

    /// Whether features for these settings are stored (not whether they are intact).
    func hasFeatures(_ id: String, settingsKey: String) -> Bool {
        featuresPath(id, settingsKey).map { FileManager.default.fileExists(atPath: $0.path) } ?? false
    }

    /// Every derived file with its size and last use.
    private func derivedFiles() -> [(path: String, bytes: Int, used: Date)] {
        guard let directory, let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey, .contentModificationDateKey]) else { return [] }
        var found: [(String, Int, Date)] = []
        for case let url as URL in walker where url.lastPathComponent.contains(".features-") && !url.lastPathComponent.hasPrefix(".") {
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .contentModificationDateKey])
            found.append((url.path, values?.fileSize ?? 0, values?.contentModificationDate ?? .distantPast))
        }
        return found
    }

    /// Removes derived files, least recently used first, until they fit `derivedCapacity`; `sparing` (the file
    /// just written) goes last.
    private func evictDerived(sparing: String) -> Int {
        guard let capacity = derivedCapacity else { return 0 }
        var derived = derivedFiles()
        var total = derived.reduce(0) { $0 + $1.bytes }
        guard total > capacity else { return 0 }
        derived.sort { ($0.path == sparing ? 1 : 0, $0.used) < ($1.path == sparing ? 1 : 0, $1.used) }
        var evicted = 0
        for file in derived where total > capacity {
            guard (try? files.remove(file.path)) != nil else { continue }
            total -= file.bytes
            evicted += 1
        }
        return evicted
    }

    /// Points marked between a reference and one retake (`retake`: the retake's id, the SHA-256 of its bytes).
    private func marksPath(_ id: String, retake: String) -> URL? {
        guard Self.isValid(retake) else { return nil }
        return paths(id).map { $0.image.deletingLastPathComponent().appendingPathComponent("\(id).points-\(retake.prefix(32))") }
    }

    /// Keeps a retake's marked points (a points file's text) with a stored reference; the reference's oldest marks
    /// go past `maxMarkFiles`. Nothing is kept for a reference the store does not have.
    func putMarks(_ id: String, retake: String, _ text: Data) throws(Failure) {
        guard contains(id), let path = marksPath(id, retake: retake) else { return }
        try files.write(text, path.path)
        let folder = path.deletingLastPathComponent()
        let kept = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.contentModificationDateKey])) ?? [])
            .filter { $0.lastPathComponent.hasPrefix("\(id).points-") }
            .map { ($0.path, (try? $0.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast) }
            .sorted { ($0.1, $0.0) > ($1.1, $1.0) }
        for old in kept.dropFirst(Self.maxMarkFiles) where old.0 != path.path { try? files.remove(old.0) }
    }

    /// Whether any marks are kept with the reference: a score without them hashes its retake only then.
    func hasMarks(_ id: String) -> Bool {
        guard let folder = paths(id)?.image.deletingLastPathComponent() else { return false }
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).contains { $0.hasPrefix("\(id).points-") }
    }

    /// The marked points kept for a reference and a retake, nil when there are none.
    func marks(_ id: String, retake: String) -> Data? {
        guard contains(id), let path = marksPath(id, retake: retake) else { return nil }
        return read(path.path)
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

    /// Removes a reference: its entry first, so that when nothing can be removed nothing changes (and the
    /// failure is thrown), then its image and derived files. False when there was no entry.
    @discardableResult
    func delete(_ id: String) throws(Failure) -> Bool {
        guard let (imagePath, entryPath) = paths(id) else { return false }
        let existed = FileManager.default.fileExists(atPath: entryPath.path)
        try files.remove(entryPath.path)
        try files.remove(imagePath.path)
        let folder = imagePath.deletingLastPathComponent()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        where name.hasPrefix("\(id).features-") || name.hasPrefix("\(id).points-") {
            try files.remove(folder.appendingPathComponent(name).path)
        }
        return existed
    }

    /// The stored references' ids, the most recently added first, at most `limit` (GET /v1/references).
    func ids(limit: Int) -> [String] {
        guard let directory else { return [] }
        var found: [(id: String, added: Date)] = []
        for shard in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where shard.utf8.count == 2 {
            let folder = directory.appendingPathComponent(shard)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where name.hasSuffix(".json") {
                let id = String(name.dropLast(5))
                guard Self.isValid(id), id.hasPrefix(shard) else { continue }
                let added = (try? folder.appendingPathComponent(name).resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
                found.append((id, added))
            }
        }
        return found.sorted { ($0.added, $0.id) > ($1.added, $1.id) }.prefix(limit).map(\.id)
    }

    /// Entries, bytes on disk, and the derived files' bytes (for /metrics).
    func size() -> (entries: Int, bytes: Int, derived: Int) {
        guard let directory, let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey]) else { return (0, 0, 0) }
        var entries = 0, bytes = 0, derived = 0
        for case let url as URL in walker {
            if url.pathExtension == "json" { entries += 1 }
            let size = (try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
            bytes += size
            if url.lastPathComponent.contains(".features-") { derived += size }
        }
        return (entries, bytes, derived)
    }
}

/// Prepared references (features, FLANN index) in memory, least recently used first out, bounded in bytes.
/// Keyed by id and the settings the features depend on, so an override of the detector never reuses them.
final class ReferenceCache: @unchecked Sendable {
    private let lock = NSLock()
    // `registered`: added as a reference (POST /v1/references). A reference uploaded with a score is cached
    // too, for the next score, but is nobody's reference: it was reported known, so anyone could learn whether
    // an image had been scored, and scored against by id.
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

    /// The registered references cached, the most recently used first.
    func registeredIds(limit: Int) -> [String] {
        lock.withLock {
            var latest: [String: UInt64] = [:]
            for (key, value) in entries where value.registered {
                let id = String(key.prefix { $0 != "|" })
                latest[id] = max(latest[id] ?? 0, value.used)
            }
            return latest.sorted { ($0.value, $0.key) > ($1.value, $1.key) }.prefix(limit).map(\.key)
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

    /// The camera of the reference's most recently used prepared frame, or that it is unknown: without a store,
    /// the only record of the camera an upload gave (scoring by id without it answered 404).
    func camera(id: String) -> (camera: CameraIntrinsics?, unknown: Bool)? {
        lock.withLock {
            entries.filter { $0.key.hasPrefix(id + "|") && $0.value.registered }.max { $0.value.used < $1.value.used }
                .map { ($0.value.camera, $0.value.frame.cameraUnknown) }
        }
    }

    var count: Int { lock.withLock { entries.count } }
}
