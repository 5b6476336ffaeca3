import Foundation
import Logging
import RephotoKit
import Synchronization

/// The worker's operations, independent of HTTP (the stdio mode calls them too): every piece of CPU work
/// runs on the bounded compute pool, never on the caller's thread or an event loop, under a deadline.
final class RetakeService: Sendable {
    let settings: ServerSettings
    let pool: ComputePool
    let store: ReferenceStore
    let cache: ReferenceCache
    let metrics: ServerMetrics
    let sessions: LiveSessions
    /// Where sessions' tracked answers and robust updates run (`--session-pipelines`).
    let sessionPipelines: SessionPipelines
    /// References being added now: concurrent uploads of one new image each found it absent and all answered
    /// 201; the first one in flight creates it, the others find it known.
    private let adding = Mutex<Set<String>>([])
    /// References' kinds as detected, by id (the image's hash, so a detection holds for good); at most `maxKinds`.
    private let detectedKinds = Mutex<[String: ReferenceKindEvidence]>([:])
    private static let maxKinds = 4096

    /// `pool`: the compute pool to run on (one of `settings`' size is made when nil); `lanes`: the sessions' own
    /// (`SessionPipelines.makeLanes`, made when nil).
    init(settings: ServerSettings, metrics: ServerMetrics, pool: ComputePool? = nil, lanes: SessionPipelines.Lanes? = nil,
         store: ReferenceStore? = nil) throws {
        try settings.validate()
        self.settings = settings
        self.pool = pool ?? RetakeService.makePool(settings)
        self.store = try store ?? ReferenceStore(directory: settings.referenceStore, derivedCapacity: settings.storeBytes)
        cache = ReferenceCache(capacity: settings.cacheBytes)
        self.metrics = metrics
        sessions = LiveSessions(limit: settings.maxSessions, perClient: settings.sessionsPerClientLimit, idleTimeout: settings.sessionIdleTimeout,
                                maxFps: settings.sessionMaxFps, metrics: metrics)
        sessionPipelines = SessionPipelines(settings: settings, lanes: lanes, metrics: metrics)
    }

    /// Lets the sessions' lanes and the compute pool finish their work and end their threads, at most `seconds` each.
    @discardableResult
    func finish(waitingAtMost seconds: Double) -> Bool {
        let sessions = sessionPipelines.finish(waitingAtMost: seconds)
        return pool.finish(waitingAtMost: seconds) && sessions
    }

    static func makePool(_ settings: ServerSettings) -> ComputePool {
        ComputePool(threads: settings.concurrency, queueLimit: settings.queueLength, name: "rephoto-serve")
    }

    /// The time a request's work must end by: set once per request (`withRequestDeadline`), so its several
    /// pipelines (preparing a reference, then scoring) share one --request-timeout. Each had its own, and a
    /// request answered 200 well past it.
    @TaskLocal static var requestDeadline: ContinuousClock.Instant?

    /// Runs `body` with --request-timeout counted from now for every `compute` inside it.
    func withRequestDeadline<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await Self.$requestDeadline.withValue(.now + .milliseconds(Int64(settings.requestTimeout * 1000)), operation: body)
    }

    /// Seconds until the current request's deadline (negative once past it); nil outside `withRequestDeadline`.
    func timeLeft() -> Double? { Self.requestDeadline.map { ($0 - .now) / .seconds(1) } }

    /// Runs `work` on the pool; past the request's deadline the caller gets 503. Work already running runs out;
    /// work still queued then is dropped when its turn comes.
    func compute<T: Sendable>(on lane: ComputePool? = nil, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        let pool = lane ?? self.pool
        let seconds = timeLeft() ?? settings.requestTimeout
        guard seconds > 0 else { throw Deadline.timeout(settings.requestTimeout) }
        // The gauge is the compute pool's queue: the live lane's holds at most one frame per session.
        let main = self.pool
        metrics.queueDepth.set(Double(main.queued + (lane == nil ? 1 : 0)))
        defer { metrics.queueDepth.set(Double(main.queued)) }
        return try await Deadline.run(seconds: seconds, timeout: settings.requestTimeout) { [metrics, main] expired in
            try await pool.run(unless: {
                // This job has left the queue, to run or to be dropped: an abandoned one's caller set the gauge
                // while it still waited, and an idle worker reported it queued until the next request.
                metrics.queueDepth.set(Double(main.queued))
                guard expired() else { return false }
                metrics.abandoned.increment()
                return true
            }, work)
        }
    }

    /// The cameras as the metadata gives them; one given for one photo serves for both (as in the CLI), a
    /// stored reference's own camera first.
    struct Inputs: Sendable {
        var settings: PipelineConfig
        var referenceCamera: CameraIntrinsics?
        /// `"intrinsics": "unknown"` for the reference: estimated for each retake (the retake's camera is then needed).
        var referenceCameraUnknown = false
        var retakeCamera: CameraIntrinsics?
        var attitudes: AttitudePair?
        var metadata: RequestMetadata
    }

    func inputs(_ form: MultipartForm) throws -> Inputs {
        let (metadata, overrides) = try RequestMetadata.parse(form.parts["metadata"])
        let config = try RequestMetadata.settings(base: settings.pipeline, overrides: overrides)
        let referenceCamera = try RequestMetadata.camera(metadata.reference, role: "reference", calibrationDirectory: settings.calibrationDirectory)
        let retakeCamera = try RequestMetadata.camera(metadata.retake, role: "retake", calibrationDirectory: settings.calibrationDirectory)
        let a0 = try RequestMetadata.attitude(metadata.reference, role: "reference"), a1 = try RequestMetadata.attitude(metadata.retake, role: "retake")
        if (a0 == nil) != (a1 == nil) { throw ServiceError.badInput("metadata: give an attitude for both photos or for neither") }
        let attitudes = a0.flatMap { r in a1.map { AttitudePair(reference: r, current: $0) } }
        let unknown = RequestMetadata.cameraUnknown(metadata.reference)
        return Inputs(settings: config, referenceCamera: referenceCamera, referenceCameraUnknown: unknown, retakeCamera: retakeCamera,
                      attitudes: attitudes, metadata: metadata)
    }

    /// A foreign format or an oversized file is refused before any pipeline work (the reference's included).
    func checkUpload(_ image: Data, _ settings: PipelineConfig) throws {
        guard image.count <= settings.maxBytes else {
            throw RephotoError(.badInput, "retake of \(image.count) bytes, over the limit of \(settings.maxBytes) bytes (maxBytes)", reason: .tooLarge)
        }
        try Image.checkSignature(image)
    }

    // MARK: references

    /// Stores a reference (validated by preparing it) and returns its id; `created` is false when it existed.
    func addReference(_ form: MultipartForm) async throws -> (id: String, created: Bool) {
        guard let image = form.parts["image"] else { throw ServiceError.badInput("missing part 'image' (the reference photo)") }
        let inputs = try inputs(form)
        let id = ReferenceStore.id(of: image)
        let first = adding.withLock { $0.insert(id).inserted }
        defer { if first { adding.withLock { _ = $0.remove(id) } } }
        let existed = !first || store.contains(id) || cache.contains(id: id)
        // Uploading a known image again without a camera keeps the camera stored with it (or that it is unknown):
        // it was overwritten with none, and scoring by id lost its pose. A camera given replaces it. An unreadable
        // entry's camera is lost: this upload rewrites the entry with what it says.
        let (camera, unknown) = RequestMetadata.namesCamera(inputs.metadata.reference)
            ? (inputs.referenceCamera, inputs.referenceCameraUnknown) : (try? storedCamera(id)) ?? (nil, false)
        let kind = await referenceKind(inputs.metadata.referenceKind, cameraUnknown: unknown, id: id, image: image, settings: inputs.settings)
        let settings = inputs.settings.forReference(kind: kind.kind)
        let frame = try await prepared(id: id, image: image, camera: camera, cameraUnknown: unknown, kind: kind, settings: settings)
        // No retake can ever match a reference with fewer keypoints than a pose needs (a blank image was
        // stored, 201, and every score against it failed).
        let needed = settings.minimumInliers
        guard frame.features.count >= needed else {
            if !existed { cache.remove(id: id) }  // a known reference keeps what it had for other settings
            throw ServiceError(.estimationFailed, code: "estimation_failed", kind: .estimationFailed,
                              "the reference has \(frame.features.count) keypoints, fewer than a pose needs (\(needed), minimumInliers): a featureless or blank image")
        }
        let features = try frame.features.serialized()
        let settingsKey = ReferenceStore.settingsKey(settings.features)
        do {
            // What the store holds already is not written again: a known reference is answered on a full or
            // read-only disk too.
            if store.get(id).map({ $0.entry.camera != camera || ($0.entry.cameraUnknown ?? false) != unknown }) ?? true {
                try store.put(id, image: image, camera: camera, cameraUnknown: unknown)
            }
            if !store.hasFeatures(id, settingsKey: settingsKey) {
                metrics.derivedEvicted.increment(by: Int64(try store.putFeatures(id, settingsKey: settingsKey, features)))
            }
        } catch {
            if !existed { cache.remove(id: id) }
            throw ServiceError(error)
        }
        // Without a store the cache is all that keeps it: a reference larger than --cache-bytes was answered 201
        // and then not found.
        guard cache.register(id: id) || store.directory != nil else {
            throw ServiceError(.noRoom, code: "no_room", kind: .unavailable,
                              "the reference's features take \(ReferenceCache.cost(frame)) bytes, more than --cache-bytes \(cache.capacity), and without --reference-store nothing else keeps them")
        }
        return (id, !existed)
    }

    /// The camera a reference was added with (the store's, else the cache's): nil and false when it had none.
    /// Throws when the store's entry no longer reads: the camera it held is lost, and scoring as if the reference had
    /// none would be a confident answer on the wrong camera.
    func storedCamera(_ id: String) throws -> (camera: CameraIntrinsics?, unknown: Bool) {
        if let entry = store.entry(id) { return (entry.camera, entry.cameraUnknown ?? false) }
        if store.hasDamagedEntry(id) { throw Self.damagedEntry(id) }
        return cache.camera(id: id) ?? (nil, false)
    }

    static func damagedEntry(_ id: String) -> ServiceError {
        ServiceError(.internal, code: "internal", kind: .internal,
                     "reference \(id)'s entry in --reference-store is unreadable (its image is intact and kept): add the reference again, with its camera, to rewrite it")
    }

    /// `GET /v1/references/{id}`'s answer: the camera it was added with, `"unknown"`, or none (absent).
    struct ReferenceInfo: Encodable {
        var id: String
        var status = "known"
        var intrinsics: CameraIntrinsics?
        var cameraUnknown: Bool

        func encode(to encoder: Encoder) throws {
            enum Keys: String, CodingKey { case id, status, intrinsics }
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(id, forKey: .id)
            try c.encode(status, forKey: .status)
            if cameraUnknown {
                try c.encode("unknown", forKey: .intrinsics)
            } else if let i = intrinsics {
                try c.encode(MetadataShape(fx: i.fx, fy: i.fy, cx: i.cx, cy: i.cy, distortion: i.distortion, imageWidth: i.imageSize?.width,
                                           imageHeight: i.imageSize?.height), forKey: .intrinsics)
            }
        }

        /// The camera in the shape `metadata` takes it (`RequestMetadata.Intrinsics`), so a client can send it back as is.
        private struct MetadataShape: Encodable {
            var fx, fy, cx, cy: Double
            var distortion: [Double]
            var imageWidth, imageHeight: Int?
        }
    }

    func referenceInfo(_ id: String) throws -> ReferenceInfo {
        let (camera, unknown) = try storedCamera(id)
        return ReferenceInfo(id: id, intrinsics: camera, cameraUnknown: unknown)
    }

    /// The references the guide offers (GET /v1/references): the store's, most recently added first, or without a
    /// store the cached ones, most recently used first; at most 200. An entry that no longer reads is left out.
    func listReferences() throws -> [ReferenceInfo] {
        let ids = store.directory != nil ? store.ids(limit: 200) : cache.registeredIds(limit: 200)
        return ids.compactMap { try? referenceInfo($0) }
    }

    /// With a store, the store alone says: another instance sharing it may have deleted the reference.
    func hasReference(_ id: String) -> Bool { store.directory != nil ? store.contains(id) : cache.contains(id: id) }

    /// False when there was no such reference; a store that cannot remove it keeps it whole and says why.
    func deleteReference(_ id: String) throws -> Bool {
        let known = hasReference(id)
        do {
            try store.delete(id)
        } catch {
            throw ServiceError(error, doing: "reference \(id) was not deleted")
        }
        cache.remove(id: id)
        return known
    }

    /// A reference's image from the store; nil when the store has no such reference. An image that cannot be read
    /// just now is 503 with a retry (a read can fail under load, out of file descriptors, and must not cost the
    /// reference); one missing or no longer hashing to its id is forgotten, so GET agrees, and said so.
    func storedImage(_ id: String) throws -> Data? {
        if let stored = store.get(id) { return stored.image }
        guard store.contains(id) else { return nil }
        if store.hasDamagedEntry(id) { throw Self.damagedEntry(id) }
        guard store.isDamaged(id) else {
            var unread = ServiceError(.unavailable, code: "unavailable", kind: .unavailable,
                                     "reference \(id)'s image could not be read from --reference-store just now")
            unread.retryAfterSeconds = 1
            throw unread
        }
        _ = try? store.delete(id)
        cache.remove(id: id)
        throw ServiceError.notFound("reference \(id)'s image in --reference-store is missing or damaged; the reference has been removed: add it again")
    }

    /// A reference's kind: declared (metadata.referenceKind), a print when its camera is unknown, else detected from
    /// its image on the pool and remembered by id. An image that cannot be decoded is taken for a photo here: preparing
    /// it says why it cannot be used.
    func referenceKind(_ declared: ReferenceKind?, cameraUnknown: Bool, id: String, image: Data?, settings: PipelineConfig) async -> ReferenceKindEvidence {
        if declared != nil || cameraUnknown { return .given(declared, cameraUnknown: cameraUnknown) }
        if let known = detectedKinds.withLock({ $0[id] }) { return known }
        // The store read as is: a damaged entry is for preparing to find, repair or forget, and say.
        guard let bytes = image ?? store.get(id)?.image,
              let found = try? await compute({ try ReferenceKindEvidence.detect(Image(data: bytes, maxPixels: settings.maxPixels, reducedFor: settings.features)) })
        else { return .given(nil, cameraUnknown: false) }
        detectedKinds.withLock { kinds in
            if kinds.count >= Self.maxKinds { kinds.removeAll() }
            kinds[id] = found
        }
        return found
    }

    /// A prepared reference from the cache, or decoded and detected (on the pool) and cached.
    func prepared(id: String, image: Data?, camera: CameraIntrinsics?, cameraUnknown: Bool = false, kind: ReferenceKindEvidence? = nil,
                  settings: PipelineConfig) async throws -> ReferenceFrame {
        let kind = kind ?? .given(nil, cameraUnknown: cameraUnknown)
        let key = ReferenceCache.key(id, settings.features, camera) + (cameraUnknown ? "|unknown" : "") + (kind.kind == .print ? "|print" : "")
        // A reference looked up by id is served from memory only while the shared store still has it: a delete
        // through any instance holds at once everywhere (one stat a request).
        if image == nil, store.directory != nil, !store.contains(id) {
            cache.remove(id: id)
            throw ServiceError.notFound("no reference with id \(id)")
        }
        if let hit = cache.get(key, registeredOnly: image == nil) {
            metrics.cacheHits.increment()
            return hit
        }
        metrics.cacheMisses.increment()
        // Found by id, or uploaded again while stored, it is a reference: cached as one, so the next lookup by id hits.
        let registered = image == nil || store.contains(id)
        let settingsKey = ReferenceStore.settingsKey(settings.features)
        // Saved features first (a restart, another instance), then the image, detected again.
        if !settings.features.referenceBorder.applies(print: kind.kind == .print), let saved = store.features(id, settingsKey: settingsKey) {
            do {
                let frame = try await compute {
                    try PoseEstimator(config: settings).prepareReference(features: try Features(serialized: saved, config: settings.features), camera: camera,
                                                                         cameraUnknown: cameraUnknown, kind: kind)
                }
                cache.put(key, frame, camera: camera, registered: registered)
                return frame
            } catch let error as RephotoError where error.kind == .badInput {
                // A damaged features file: detect again from the image below (a full queue or a timeout is
                // passed on, not answered with twice the work).
            }
        }
        guard let bytes = try image ?? storedImage(id) else {
            guard cache.contains(id: id) else { throw ServiceError.notFound("no reference with id \(id)") }
            throw ServiceError.notFound("reference \(id) is kept prepared only for other feature settings or another camera, and without --reference-store its image is not kept: upload it again with these, or run the worker with a store")
        }
        let (frame, features) = try await compute {
            let estimator = try PoseEstimator(config: settings)
            let decoded = try Self.decodingStored(id, stored: image == nil) { try estimator.decode(bytes) }
            let frame = try estimator.prepareReference(decoded, camera: camera, cameraUnknown: cameraUnknown, kind: kind)
            return (frame, try frame.features.serialized())
        }
        cache.put(key, frame, camera: camera, registered: registered)
        // Features found inside a print's border are not those of the image under these settings: not saved.
        if image == nil || store.contains(id), !settings.features.referenceBorder.applies(print: kind.kind == .print),
           let evicted = try? store.putFeatures(id, settingsKey: settingsKey, features) {
            metrics.derivedEvicted.increment(by: Int64(evicted))
        }
        return frame
    }

    /// Decodes a reference's image; one `stored` (found by id, not sent) in a format this worker cannot decode (no
    /// media plugin here) is the worker's to mend, not the client's: unavailable (503), not unsupported (415).
    static func decodingStored(_ id: String, stored: Bool, _ decode: () throws -> Image) throws -> Image {
        do {
            return try decode()
        } catch let error as RephotoError where stored && error.reason == .unsupportedFormat {
            throw ServiceError(.unavailable, code: "unavailable", kind: .unavailable, "the stored reference \(id) cannot be decoded by this worker: \(error.message)")
        }
    }

    /// A request's reference, ready to score against: `camera` is the one it was prepared with, which the retake shares
    /// when the metadata gives it none; `settings` are the request's, adjusted for an old photo (`forReference`).
    struct PreparedReference {
        var frame: ReferenceFrame
        var image: Data?
        var id: String
        var camera: CameraIntrinsics?
        var settings: PipelineConfig
    }

    /// The reference of a scoring request: an uploaded part, or a stored id (its stored camera unless the
    /// metadata names one).
    /// `camera`: the one the reference was prepared with, which the retake shares when the metadata gives it none.
    func reference(_ form: MultipartForm, _ inputs: Inputs) async throws -> PreparedReference {
        if let image = form.parts["reference"] {
            if form.parts["referenceId"] != nil { throw ServiceError.badInput("give 'reference' or 'referenceId', not both") }
            return try await reference(image: image, id: nil, inputs)
        }
        guard let raw = form.parts["referenceId"] else { throw ServiceError.badInput("missing part 'reference' (image) or 'referenceId'") }
        return try await reference(image: nil, id: String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), inputs)
    }

    /// The reference from its bytes (`image`) or a stored `id`, one of them.
    func reference(image: Data?, id: String?, _ inputs: Inputs) async throws -> PreparedReference {
        let id = image.map(ReferenceStore.id(of:)) ?? id ?? ""
        if image == nil, !ReferenceStore.isValid(id) {
            throw ServiceError.badInput("referenceId '\(id.prefix(80))' is not a reference id (64 lowercase hex digits, the SHA-256 of the image)")
        }
        // An upload's camera is the metadata's (or the retake's); a stored reference's is its own unless the metadata names one.
        let (given, unknown) = try image != nil || RequestMetadata.namesCamera(inputs.metadata.reference)
            ? (inputs.referenceCamera, inputs.referenceCameraUnknown) : storedCamera(id)
        if unknown, inputs.retakeCamera == nil {
            throw ServiceError.badInput("the reference's camera is \"unknown\"\(image == nil && !inputs.referenceCameraUnknown ? " (as stored)" : ""): estimating it needs the retake's camera (metadata.retake.calibration or intrinsics)")
        }
        let camera = unknown ? nil : given ?? inputs.retakeCamera
        let kind = await referenceKind(inputs.metadata.referenceKind, cameraUnknown: unknown, id: id, image: image, settings: inputs.settings)
        let settings = inputs.settings.forReference(kind: kind.kind)
        return PreparedReference(frame: try await prepared(id: id, image: image, camera: camera, cameraUnknown: unknown, kind: kind, settings: settings),
                                 image: image, id: id, camera: camera, settings: settings)
    }

    // MARK: scoring and alignment

    /// The score document: `rephoto pose --json`'s, or the sensor-only one when vision failed but attitudes came.
    func score(_ form: MultipartForm) async throws -> Data {
        let inputs = try inputs(form)
        guard let retake = form.parts["retake"] else { throw ServiceError.badInput("missing part 'retake' (the new photo)") }
        try checkUpload(retake, inputs.settings)
        let given = try Self.marks(form)
        let prepared = try await reference(form, inputs)
        let (reference, id) = (prepared.frame, prepared.id)
        let (marks, kept) = given.map { ($0, false) } ?? keptMarks(id, retake: retake)
        let config = prepared.settings, camera = inputs.retakeCamera ?? prepared.camera, attitudes = inputs.attitudes
        let answer = try await compute {
            let estimator = try PoseEstimator(config: config)
            let image = try estimator.decode(retake)
            switch try estimator.answer(reference: reference, current: image, camera: camera, attitudes: attitudes, marks: marks) {
            case .vision(var result):
                if kept { result.marks?.kept = true }
                return (try JSONOutput.encode(result), true)
            case .sensorOnly(let sensorOnly, _):
                return (try JSONOutput.encode(sensorOnly), false)
            }
        }
        if answer.1 { keep(form.parts["points"], reference: id, retake: retake) }
        return answer.0
    }

    /// Points marked by hand, the part `points` (a points file's CSV, docs/server.md).
    static func marks(_ form: MultipartForm) throws -> MarkedPoints? {
        guard let data = form.parts["points"] else { return nil }
        guard data.count <= 1 << 20 else { throw ServiceError.badInput("part 'points' has \(data.count) bytes, over 1 MB") }
        do {
            return try MarkedPoints.parse(data, name: "part 'points'")
        } catch let error as RephotoError {
            throw ServiceError.badInput(error.message)
        }
    }

    /// The marks kept with a stored reference for this retake (the same bytes), when a request gives none.
    func keptMarks(_ id: String, retake: Data) -> (MarkedPoints?, Bool) {
        guard store.hasMarks(id), let text = store.marks(id, retake: ReferenceStore.id(of: retake)),
              let marks = try? MarkedPoints.parse(text, name: "kept points") else { return (nil, false) }
        return (marks, true)
    }

    /// Keeps marks a request gave, once they fitted its answer, with its reference when it is stored; a store that
    /// cannot take them just now costs the answer nothing.
    func keep(_ points: Data?, reference id: String, retake: Data) {
        guard let points, store.contains(id) else { return }
        try? store.putMarks(id, retake: ReferenceStore.id(of: retake), points)
    }

    /// The retake warped into the reference's frame (alone, blended or split), encoded as JPEG or PNG.
    func align(_ form: MultipartForm) async throws -> (Data, contentType: String, warnings: [String]) {
        let inputs = try inputs(form)
        guard let retake = form.parts["retake"] else { throw ServiceError.badInput("missing part 'retake' (the new photo)") }
        try checkUpload(retake, inputs.settings)
        let options = inputs.metadata.align
        let format = (options?.format ?? "jpeg").lowercased()
        guard ["jpeg", "jpg", "png"].contains(format) else { throw ServiceError.badInput("metadata.align.format '\(format)' must be jpeg or png") }
        let mode = options?.mode ?? .warped, opacity = options?.opacity ?? 0.5
        guard opacity >= 0, opacity <= 1 else { throw ServiceError.badInput("metadata.align.opacity \(opacity) is not in 0...1") }
        let given = try Self.marks(form)
        let prepared = try await reference(form, inputs)
        let (reference, referenceBytes, id) = (prepared.frame, prepared.image, prepared.id)
        let (marks, _) = given.map { ($0, false) } ?? keptMarks(id, retake: retake)
        let config = prepared.settings, camera = inputs.retakeCamera ?? prepared.camera
        let reduced = FeatureConfig(detector: config.features.detector, maxDimension: settings.alignMaxDimension)
        let stored = referenceBytes == nil
        guard let referenceBytes = try referenceBytes ?? storedImage(id) else { throw ServiceError.notFound("no stored image for reference \(id)") }
        let data = try await compute {
            let estimator = try PoseEstimator(config: config)
            let result = try estimator.estimate(reference: reference, current: try estimator.decode(retake), camera: camera, marks: marks)
            let colourReference = try Self.decodingStored(id, stored: stored) { try Image(data: referenceBytes, maxPixels: config.maxPixels, reducedFor: reduced) }
            let colourRetake = try Image(data: retake, maxPixels: config.maxPixels, reducedFor: reduced)
            let aligned = try Alignment.compose(reference: colourReference, retake: colourRetake, homography: result.homography, mode: mode, opacity: opacity)
            return (try aligned.encoded(as: format == "png" ? .png : .jpeg(quality: 90)), result.alignmentWarnings)
        }
        keep(form.parts["points"], reference: id, retake: retake)
        return (data.0, format == "png" ? "image/png" : "image/jpeg", data.1)
    }
}

// MARK: guidance sessions

extension RetakeService {
    /// A session's inputs and its reference's attitude.
    typealias SessionInputs = (Inputs, Attitude?)

    /// A session's settings and cameras from its opening `metadata` (a score's; `retake` names the frames' camera, whose
    /// attitudes come with each frame), and the reference's attitude.
    func sessionInputs(metadata data: Data?) throws -> SessionInputs {
        let (metadata, overrides) = try RequestMetadata.parse(data)
        if metadata.retake?.attitude != nil {
            throw ServiceError.badInput("metadata.retake.attitude: a session's frames send their own attitudes (each frame's metadata)")
        }
        let inputs = Inputs(settings: try RequestMetadata.settings(base: settings.pipeline, overrides: overrides),
                            referenceCamera: try RequestMetadata.camera(metadata.reference, role: "reference", calibrationDirectory: settings.calibrationDirectory),
                            referenceCameraUnknown: RequestMetadata.cameraUnknown(metadata.reference),
                            retakeCamera: try RequestMetadata.camera(metadata.retake, role: "retake", calibrationDirectory: settings.calibrationDirectory),
                            attitudes: nil, metadata: metadata)
        return (inputs, try RequestMetadata.attitude(metadata.reference, role: "reference"))
    }

    /// Opens a guidance session on a reference (its bytes, or a stored id) for a client address and returns the session's
    /// id. A client past --sessions-per-client, or a worker at --max-sessions, is refused before the reference is prepared.
    func openSession(inputs: Inputs, referenceAttitude: Attitude?, referenceId: String?, image: Data?, client: String?) async throws -> String {
        try sessions.checkRoom(client: client)
        let prepared = try await reference(image: image, id: referenceId, inputs)
        return try sessions.add(GuidanceSession(estimator: try PoseEstimator(config: prepared.settings), reference: prepared.frame,
                                                camera: inputs.retakeCamera ?? prepared.camera, referenceAttitude: referenceAttitude,
                                                robustUpdates: .concurrent(sessionPipelines)),
                                client: client)
    }

    /// `POST /v1/sessions`: an uploaded `reference` or a stored `referenceId`, and `metadata`. Its id, its frames' path and how
    /// long it may idle.
    func openSession(_ form: MultipartForm, client: String?) async throws -> Data {
        let (inputs, attitude) = try sessionInputs(metadata: form.parts["metadata"])
        if form.parts["reference"] != nil, form.parts["referenceId"] != nil { throw ServiceError.badInput("give 'reference' or 'referenceId', not both") }
        guard form.parts["reference"] != nil || form.parts["referenceId"] != nil else {
            throw ServiceError.badInput("missing part 'reference' (image) or 'referenceId'")
        }
        let id = try await openSession(inputs: inputs, referenceAttitude: attitude,
                                       referenceId: form.parts["referenceId"].map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) },
                                       image: form.parts["reference"], client: client)
        struct Opened: Encodable { var id: String, frames: String, idleTimeoutSeconds: Double }
        return try JSONOutput.encode(Opened(id: id, frames: "/v1/sessions/\(id)/frames", idleTimeoutSeconds: settings.sessionIdleTimeout))
    }

    /// `POST /v1/sessions/{id}/frames`: a `frame` (JPEG, HEIC, ...) and its `metadata` (attitude, timestamp).
    func sessionFrame(_ id: String, _ form: MultipartForm) async throws -> Data {
        guard let bytes = form.parts["frame"] else { throw ServiceError.badInput("missing part 'frame' (the current camera frame)") }
        return try await sessionFrame(id, bytes: bytes, metadata: try FrameMetadata.parse(form.parts["metadata"]), skipped: 0)
    }

    /// The session's answer for a frame: a score's document with the `session` object (docs/json-output.md). 429 while
    /// the session computes an earlier frame, or frames come faster than `--session-max-fps` (unless the transport held
    /// them to it: `paced`). `skipped`: frames the transport dropped before this one.
    func sessionFrame(_ id: String, bytes: Data, metadata: FrameMetadata, skipped: Int, paced: Bool = false) async throws -> Data {
        let attitude = try metadata.phoneAttitude()
        let start = ContinuousClock.now
        let answer = try await sessions.frame(id, paced: paced) { entry, dropped in
            try checkUpload(bytes, entry.estimator.config)
            return try await compute(on: sessionPipelines.live) {
                var frame = try entry.process(try entry.estimator.decode(bytes), attitude: attitude, timestamp: metadata.timestamp)
                frame.session.skippedFrames = dropped + skipped
                return try JSONOutput.encode(frame)
            }
        }
        metrics.sessionFrames.increment()
        let elapsed = ContinuousClock.now - start
        metrics.sessionFrameLatency.recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        return answer
    }
}

/// Waits for `work` at most `seconds`: then throws 503 and lets the work finish on its own (a pipeline
/// inside OpenCV cannot be interrupted). `work` is handed a check that says whether the deadline has passed,
/// so work that has not started yet can be dropped.
enum Deadline {
    /// The answer to a request past --request-timeout (`seconds`).
    static func timeout(_ seconds: Double) -> ServiceError {
        var timeout = ServiceError(.unavailable, code: "timeout", kind: .unavailable, "the request took longer than \(seconds) s (--request-timeout)")
        timeout.retryAfterSeconds = 1
        return timeout
    }

    /// `seconds`: the time left; `timeout`: the request's whole allowance, which the answer names.
    static func run<T: Sendable>(seconds: Double, timeout: Double,
                                 _ work: @escaping @Sendable (_ expired: @escaping @Sendable () -> Bool) async throws -> T) async throws -> T {
        let gate = Gate<T>()
        return try await withCheckedThrowingContinuation { continuation in
            gate.set(continuation)
            let timer = Task {
                try await Task.sleep(for: .seconds(seconds))
                gate.resume(with: .failure(Self.timeout(timeout)))
            }
            Task {
                let result: Result<T, Error>
                do { result = .success(try await work { gate.settled }) } catch { result = .failure(error) }
                timer.cancel()
                gate.resume(with: result)
            }
        }
    }

    private final class Gate<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, Error>?
        private var resumed = false
        func set(_ c: CheckedContinuation<T, Error>) { lock.withLock { continuation = c } }
        /// Whether the caller has its answer (a result, or the timeout).
        var settled: Bool { lock.withLock { resumed } }
        func resume(with result: Result<T, Error>) {
            let c = lock.withLock { () -> CheckedContinuation<T, Error>? in
                defer { continuation = nil; resumed = true }
                return continuation
            }
            c?.resume(with: result)
        }
    }
}
