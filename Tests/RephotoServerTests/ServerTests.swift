import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import RephotoKit
import RephotoTestSupport
import Synchronization
import Testing
import Yams
@testable import RephotoServer

/// A multipart/form-data body as clients build it: curl's shape, or Rails' (multipart-post: a Content-Length
/// and a Content-Transfer-Encoding per part, a longer boundary).
struct Upload {
    enum Client { case curl, rails }
    var parts: [(name: String, data: Data, filename: String?)] = []
    var client = Client.curl

    static func image(_ sample: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: try Fixtures.sample(sample))) }

    var boundary: String { client == .curl ? "------------------------7a9f3c1d2e4b6a80" : "-----------RubyMultipartPost-5f2a9b1c3d4e" }
    var headers: HTTPFields { [.contentType: "multipart/form-data; boundary=\(client == .curl ? boundary : "\"\(boundary)\"")"] }

    var body: ByteBuffer {
        var out = Data()
        for part in parts {
            out += Data("--\(boundary)\r\n".utf8)
            if let filename = part.filename {
                out += Data("Content-Disposition: form-data; name=\"\(part.name)\"; filename=\"\(filename)\"\r\n".utf8)
                if client == .rails { out += Data("Content-Length: \(part.data.count)\r\n".utf8) }
                out += Data("Content-Type: application/octet-stream\r\n".utf8)
                if client == .rails { out += Data("Content-Transfer-Encoding: binary\r\n".utf8) }
            } else {
                out += Data("Content-Disposition: form-data; name=\"\(part.name)\"\r\n".utf8)
            }
            out += Data("\r\n".utf8) + part.data + Data("\r\n".utf8)
        }
        out += Data("--\(boundary)--\r\n".utf8)
        return ByteBuffer(bytes: out)
    }

    func adding(_ name: String, _ data: Data, filename: String? = "photo") -> Upload {
        var u = self
        u.parts.append((name, data, filename))
        return u
    }

    func adding(_ name: String, json: String) -> Upload { adding(name, Data(json.utf8), filename: nil) }
}

@Suite(.serialized) struct ServerTests {
    static func settings(_ change: (inout ServerSettings) -> Void = { _ in }) throws -> ServerSettings {
        var s = ServerSettings()
        s.concurrency = 2
        s.calibrationDirectory = Fixtures.packageRoot.appendingPathComponent("calibration").path
        s.referenceStore = try Scratch.directory().appendingPathComponent("store").path
        change(&s)
        return s
    }

    static func app(_ settings: ServerSettings) throws -> some ApplicationProtocol {
        try RetakeServer.makeApplication(settings: settings, logger: Logger(label: "test"))
    }

    static func json(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
    }

    static func homography(_ object: [String: Any]) -> Matrix3? {
        guard let rows = object["homography"] as? [[Double]] else { return nil }
        return Matrix3(rows.flatMap { $0 })
    }

    static func errorCode(_ response: TestResponse) -> String? { (json(response)["error"] as? [String: Any])?["code"] as? String }

    static func cornerError(_ h: Matrix3) throws -> Double {
        let truth = try Fixtures.graf13()
        let corners = [(0.0, 0.0), (800, 0), (800, 640), (0, 640)]
        return corners.map { c in
            let a = h.project(Point2(x: c.0, y: c.1)), b = truth.project(Point2(x: c.0, y: c.1))
            return a.distance(to: b)
        }.max()!
    }

    @Test(arguments: [Upload.Client.curl, .rails])
    func scoresAnUploadedPairAgainstThePublishedHomography(client: Upload.Client) async throws {
        let upload = Upload(client: client).adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
        try await Self.app(try Self.settings()).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .ok)
                let body = Self.json(response)
                let h = try #require(Self.homography(body))
                #expect(try Self.cornerError(h) < 3, "corner error against H1to3p")
                for key in ["navigation", "metrics", "counts", "timings", "warnings", "pose", "sensor", "comparison"] { #expect(body.keys.contains(key), "\(key)") }
                #expect(body["schemaVersion"] as? Int == 2)
                let navigation = body["navigation"] as? [String: Any] ?? [:]
                let hints = navigation["hints"] as? [String] ?? []
                #expect(!hints.isEmpty && (navigation["actions"] as? [Any])?.count == hints.count, "\(navigation)")
                #expect(response.headers[HTTPField.Name("X-Request-Id")!] != nil)
            }
        }
    }

    /// A cap on a path the registry does not know would be skipped in silence.
    @Test func everyCostCapIsARegistryParameter() {
        for cap in RequestMetadata.costCaps {
            #expect(ParameterRegistry.parameter(cap.path) != nil, "\(cap.path)")
        }
    }

    @Test func referencesAreStoredByContentHashScoredByIdAndDeleted() async throws {
        let graf1 = try Upload.image("graf1.png")
        let settings = try Self.settings()
        // The id is the SHA-256 of the bytes, as sha256sum computes it.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [try Fixtures.sample("graf1.png")]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let expected = String(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64))
        try await Self.app(settings).test(.router) { http in
            let upload = Upload().adding("image", graf1)
            try await http.execute(uri: "/v1/references", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .created)
                #expect(Self.json(response)["id"] as? String == expected && Self.json(response)["schemaVersion"] as? Int == 2)
            }
            try await http.execute(uri: "/v1/references", method: .post, headers: upload.headers, body: upload.body) { #expect($0.status == .ok) }
            try await http.execute(uri: "/v1/references/\(expected)", method: .get) { #expect($0.status == .ok) }
            let byId = Upload().adding("referenceId", Data(expected.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
            let direct = Upload().adding("reference", graf1).adding("retake", try Upload.image("graf3.png"))
            let a = try await http.execute(uri: "/v1/retakes/score", method: .post, headers: byId.headers, body: byId.body) { Self.homography(Self.json($0)) }
            let b = try await http.execute(uri: "/v1/retakes/score", method: .post, headers: direct.headers, body: direct.body) { Self.homography(Self.json($0)) }
            #expect(a != nil && a == b)
            try await http.execute(uri: "/v1/references/\(expected)", method: .delete) { #expect($0.status == .noContent) }
            try await http.execute(uri: "/v1/references/\(expected)", method: .get) { #expect($0.status == .notFound) }
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: byId.headers, body: byId.body) { response in
                #expect(response.status == .notFound && Self.errorCode(response) == "not_found")
                #expect(Self.json(response)["schemaVersion"] as? Int == 2)
            }
        }
    }

    /// An old photo of unknown camera (`"intrinsics": "unknown"`): the bundled synthetic reference shrunk to 0.7, so its
    /// focal length is exactly 0.7 x 391.64 px; the score reports it within 2 %. Where it cannot be used, it is refused.
    @Test func aReferenceOfUnknownCameraIsScoredWithItsEstimate() async throws {
        let sequence = Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach")
        let old = try Image(contentsOfFile: sequence.appendingPathComponent("reference.jpg").path).resized(width: 336, height: 252).encoded(as: .png)
        let retake = try Data(contentsOf: sequence.appendingPathComponent("frame-0000.jpg"))
        let cameras = #"{"reference": {"intrinsics": "unknown"}, "retake": {"intrinsics": {"fx": 391.6444049109095, "fy": 391.6444049109095, "cx": 239.5, "cy": 179.5}}}"#
        try await Self.app(try Self.settings()).test(.router) { http in
            let score = Upload().adding("reference", old).adding("retake", retake).adding("metadata", json: cameras)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .ok)
                let camera = Self.json(response)["referenceCamera"] as? [String: Any]
                let focal = camera?["fx"] as? Double ?? 0
                #expect(abs(focal - 0.7 * 391.6444049109095) / (0.7 * 391.6444049109095) < 0.02, "\(camera ?? [:])")
            }
            // The word in any case, as on the CLI.
            let upper = try RequestMetadata.parse(Data(#"{"reference": {"intrinsics": "Unknown"}}"#.utf8)).0
            #expect(RequestMetadata.cameraUnknown(upper.reference))
            let refusals: [(Upload, String, String)] = [
                (Upload().adding("reference", old).adding("retake", retake).adding("metadata", json: #"{"reference": {"intrinsics": "unknown"}}"#),
                 "/v1/retakes/score", "needs the retake's camera"),
                (Upload().adding("reference", old).adding("retake", retake).adding("metadata", json: #"{"reference": {"intrinsics": "unkown"}}"#),
                 "/v1/retakes/score", "'unkown' is neither intrinsics {fx, fy, cx, cy} nor"),
                (Upload().adding("reference", old).adding("retake", retake).adding("metadata", json: #"{"retake": {"intrinsics": "unknown"}}"#),
                 "/v1/retakes/score", "metadata.retake.intrinsics: only the reference's camera may be"),
            ]
            for (upload, path, message) in refusals {
                try await http.execute(uri: path, method: .post, headers: upload.headers, body: upload.body) { response in
                    #expect(response.status == .badRequest && String(buffer: response.body).contains(message), "\(path): \(String(buffer: response.body))")
                }
            }
        }
    }

    /// What the reference is (metadata.referenceKind): declared, a print when its camera is unknown, else detected; the
    /// score says which and how. A colour photo is detected a photo, an undeclared unknown camera is a print, a
    /// declaration wins, and a kind that is neither word is refused by name.
    @Test func theReferencesKindIsDeclaredOrDetectedAndReported() async throws {
        let sequence = Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach")
        let reference = try Data(contentsOf: sequence.appendingPathComponent("reference.jpg"))
        let retake = try Data(contentsOf: sequence.appendingPathComponent("frame-0000.jpg"))
        let camera = #"{"fx": 391.6444049109095, "fy": 391.6444049109095, "cx": 239.5, "cy": 179.5}"#
        let cases: [(String, String, String)] = [
            (#"{"retake": {"intrinsics": \#(camera)}}"#, "photo", "detected"),
            (#"{"reference": {"intrinsics": "unknown"}, "retake": {"intrinsics": \#(camera)}}"#, "print", "cameraUnknown"),
            (#"{"referenceKind": "print", "retake": {"intrinsics": \#(camera)}}"#, "print", "declared"),
        ]
        try await Self.app(try Self.settings()).test(.router) { http in
            for (metadata, kind, source) in cases {
                let score = Upload().adding("reference", reference).adding("retake", retake).adding("metadata", json: metadata)
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                    #expect(response.status == .ok, "\(metadata): \(String(buffer: response.body))")
                    let found = Self.json(response)["referenceKind"] as? [String: Any] ?? [:]
                    #expect(found["kind"] as? String == kind && found["source"] as? String == source, "\(metadata): \(found)")
                }
            }
            let bad = Upload().adding("reference", reference).adding("retake", retake).adding("metadata", json: #"{"referenceKind": "painting"}"#)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: bad.headers, body: bad.body) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("metadata.referenceKind 'painting' must be"),
                        "\(String(buffer: response.body))")
            }
        }
    }

    /// A known image uploaded again without a camera keeps the camera stored with it (it was overwritten with
    /// none, and scoring by id then gave no pose; probe); a camera given with it replaces it.
    @Test func uploadingAReferenceAgainKeepsItsCamera() async throws {
        let settings = try Self.settings()
        let graf1 = try Upload.image("graf1.png")
        let camera = #"{"reference": {"intrinsics": {"fx": 800, "fy": 800, "cx": 400, "cy": 320}}, "retake": {"intrinsics": {"fx": 800, "fy": 800, "cx": 400, "cy": 320}}}"#
        let withCamera = Upload().adding("image", graf1).adding("metadata", json: camera)
        let bare = Upload().adding("image", graf1)
        try await Self.app(settings).test(.router) { http in
            let id = try await http.execute(uri: "/v1/references", method: .post, headers: withCamera.headers, body: withCamera.body) { response in
                #expect(response.status == .created)
                return Self.json(response)["id"] as? String ?? ""
            }
            try await http.execute(uri: "/v1/references", method: .post, headers: bare.headers, body: bare.body) { #expect($0.status == .ok) }
            let store = try ReferenceStore(directory: settings.referenceStore)
            #expect(store.camera(id)?.fx == 800)
            let moved = Upload().adding("image", graf1).adding("metadata", json: camera.replacingOccurrences(of: "800", with: "900"))
            try await http.execute(uri: "/v1/references", method: .post, headers: moved.headers, body: moved.body) { #expect($0.status == .ok) }
            #expect(store.camera(id)?.fx == 900)
        }
    }

    /// Without a store, a reference scored by id uses the camera it was uploaded with (it answered 404 unless
    /// the camera was sent again; probe), and asking for other feature settings says why it cannot be served.
    @Test func aReferenceInMemoryIsScoredByIdWithItsCamera() async throws {
        let settings = try Self.settings { $0.referenceStore = nil }
        let camera = #"{"intrinsics": {"fx": 800, "fy": 800, "cx": 400, "cy": 320}}"#
        let upload = Upload().adding("image", try Upload.image("graf1.png")).adding("metadata", json: #"{"reference": \#(camera)}"#)
        try await Self.app(settings).test(.router) { http in
            let id = try await http.execute(uri: "/v1/references", method: .post, headers: upload.headers, body: upload.body) { Self.json($0)["id"] as? String ?? "" }
            let score = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
                .adding("metadata", json: #"{"retake": \#(camera)}"#)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                #expect(!String(buffer: response.body).contains("no intrinsics"), "\(String(buffer: response.body))")
            }
            // One camera given, for either photo, serves for both (as in the CLI): a stored reference's for a retake
            // with none, a retake's for an inline reference with none ("no intrinsics" before; probe).
            let bare = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
            let inline = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
                .adding("metadata", json: #"{"retake": \#(camera)}"#)
            for request in [bare, inline] {
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: request.headers, body: request.body) { response in
                    #expect(response.status == .ok && !String(buffer: response.body).contains("no intrinsics"), "\(String(buffer: response.body))")
                }
            }
            let orb = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
                .adding("metadata", json: #"{"config": {"features": {"detector": "orb"}}}"#)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: orb.headers, body: orb.body) { response in
                #expect(response.status == .notFound && String(buffer: response.body).contains("without --reference-store its image is not kept"),
                        "\(String(buffer: response.body))")
            }
        }
    }

    /// A reference is what was added as one: an image scored as an upload is not reported known (anyone could
    /// learn whether an image had been scored) nor scored against by id, with a store or without; adding it then
    /// creates it. Without a store, one that cannot fit the cache is refused, 507, not answered 201 and lost (probe).
    @Test func onlyAddedReferencesAreKnown() async throws {
        let graf1 = try Upload.image("graf1.png")
        let id = ReferenceStore.id(of: graf1)
        for store in [true, false] {
            let settings = try Self.settings { if !store { $0.referenceStore = nil } }
            try await Self.app(settings).test(.router) { http in
                let inline = Upload().adding("reference", graf1).adding("retake", try Upload.image("graf3.png"))
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: inline.headers, body: inline.body) { #expect($0.status == .ok) }
                try await http.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .notFound, "store \(store)") }
                let byId = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: byId.headers, body: byId.body) { #expect($0.status == .notFound, "store \(store)") }
                let add = Upload().adding("image", graf1)
                try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { #expect($0.status == .created, "store \(store)") }
                try await http.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .ok, "store \(store)") }
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: byId.headers, body: byId.body) { #expect($0.status == .ok, "store \(store)") }
            }
        }
        let tiny = try Self.settings { $0.referenceStore = nil; $0.cacheBytes = 10_000 }
        try await Self.app(tiny).test(.router) { http in
            let add = Upload().adding("image", graf1)
            try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { response in
                #expect(response.status.code == 507 && Self.errorCode(response) == "no_room", "\(String(buffer: response.body))")
                #expect(String(buffer: response.body).contains("more than --cache-bytes 10000"), "\(String(buffer: response.body))")
            }
            try await http.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .notFound) }
        }
    }

    /// A restart, or a second instance sharing the store folder, finds a reference uploaded through the first.
    /// Damaged store files are the worker's to repair, not the client's error: features with an edited field are
    /// detected again (the same answer as from the image), and a reference whose image no longer hashes to its
    /// id is removed, so score and GET agree (probe: 400 "descriptors differ", a different score, 415).
    @Test func damagedStoreFilesAreRepairedOrForgotten() async throws {
        let settings = try Self.settings()
        let graf1 = try Upload.image("graf1.png")
        let add = Upload().adding("image", graf1)
        let id = try #require(try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { Self.json($0)["id"] as? String }
        })
        let folder = URL(fileURLWithPath: try #require(settings.referenceStore)).appendingPathComponent(String(id.prefix(2)))
        let featuresFile = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).first { $0.hasPrefix("\(id).features-") })
        var features = try Data(contentsOf: folder.appendingPathComponent(featuresFile))
        features[features.count / 2] ^= 0xFF  // a descriptor bit, a keypoint or a header field: all damage
        try features.write(to: folder.appendingPathComponent(featuresFile))
        let score = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
        try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .ok)
                let h = try #require(Self.homography(Self.json(response)))
                #expect(try Self.cornerError(h) < 3)
                let detect = (Self.json(response)["timings"] as? [String: Any])?["detectReference"] as? Double ?? 0
                #expect(detect > 0)  // detected again
            }
        }
        let resaved = try Data(contentsOf: folder.appendingPathComponent(featuresFile))
        #expect(resaved != features)  // and saved again
        var image = try Data(contentsOf: folder.appendingPathComponent("\(id).image"))
        image[image.count / 2] ^= 0xFF
        try image.write(to: folder.appendingPathComponent("\(id).image"))
        try FileManager.default.removeItem(at: folder.appendingPathComponent(featuresFile))
        try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .notFound && String(buffer: response.body).contains("image in --reference-store is missing or damaged"), "\(String(buffer: response.body))")
            }
            try await http.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .notFound) }
        }
    }

    /// graf1.png added to the store of `settings`: the upload, its id and the folder of its files.
    static func storedReference(_ settings: ServerSettings) async throws -> (add: Upload, id: String, folder: URL) {
        let add = Upload().adding("image", try Upload.image("graf1.png"))
        let id = try #require(try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { Self.json($0)["id"] as? String }
        })
        return (add, id, URL(fileURLWithPath: try #require(settings.referenceStore)).appendingPathComponent(String(id.prefix(2))))
    }

    /// Align needs the reference's own image, not only its saved features: a damaged one is forgotten there as
    /// well, with the same answer as score's, so that GET agrees (it had answered 404 "no stored image" and kept
    /// the reference, which GET still listed).
    @Test func alignForgetsAReferenceWhoseStoredImageIsDamaged() async throws {
        let settings = try Self.settings()
        let (_, id, folder) = try await Self.storedReference(settings)
        var image = try Data(contentsOf: folder.appendingPathComponent("\(id).image"))
        image[image.count / 2] ^= 0xFF
        try image.write(to: folder.appendingPathComponent("\(id).image"))
        let align = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
        try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .ok) }
            try await http.execute(uri: "/v1/retakes/align", method: .post, headers: align.headers, body: align.body) { response in
                #expect(response.status == .notFound && String(buffer: response.body).contains("image in --reference-store is missing or damaged"),
                        "\(response.status) \(String(buffer: response.body))")
            }
            try await http.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .notFound) }
        }
    }

    /// An entry that no longer decodes beside an intact image keeps the image, and every request that needs the
    /// camera it held (a score or align by id, GET's `intrinsics`) is answered 500 saying so, never as if the
    /// reference had no camera, even when its features are saved; adding it again rewrites the entry.
    @Test func aDamagedEntryKeepsItsIntactImageAndIsNeverReadAsNoCamera() async throws {
        let settings = try Self.settings()
        let (add, id, folder) = try await Self.storedReference(settings)
        try Data("not json".utf8).write(to: folder.appendingPathComponent("\(id).json"))
        let align = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
        let score = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
        try await Self.app(settings).test(.router) { http in
            let unreadable = "entry in --reference-store is unreadable (its image is intact and kept)"
            for (uri, upload) in [("/v1/retakes/align", align), ("/v1/retakes/score", score)] {
                try await http.execute(uri: uri, method: .post, headers: upload.headers, body: upload.body) { response in
                    #expect(response.status == .internalServerError && String(buffer: response.body).contains(unreadable),
                            "\(uri): \(response.status) \(String(buffer: response.body))")
                }
            }
            try await http.execute(uri: "/v1/references/\(id)", method: .get) { response in
                #expect(response.status == .internalServerError && String(buffer: response.body).contains(unreadable))
            }
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("\(id).image").path))
            try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { #expect($0.status == .ok || $0.status == .created) }
            try await http.execute(uri: "/v1/retakes/align", method: .post, headers: align.headers, body: align.body) { #expect($0.status == .ok) }
        }
    }

    /// A stored image that cannot be read just now (under load, out of file descriptors) is 503 with a retry, and
    /// the reference is kept; once reads work again it is served as before.
    @Test func aStoredImageUnreadableJustNowIsRetriedNotForgotten() throws {
        let settings = try Self.settings()
        let directory = try #require(settings.referenceStore)
        let image = try Upload.image("graf1.png")
        let id = ReferenceStore.id(of: image)
        try ReferenceStore(directory: directory).put(id, image: image, camera: nil)
        let failing = try ReferenceStore(directory: directory) { path in
            path.hasSuffix(".image") ? nil : FileManager.default.contents(atPath: path)
        }
        let service = try RetakeService(settings: settings, metrics: ServerMetrics(), store: failing)
        #expect {
            try service.storedImage(id)
        } throws: { error in
            guard let error = error as? ServiceError else { return false }
            // The stored image is unreadable for now, not gone: 503, to retry, where a missing one is 404.
            return ServerError(error).status == .serviceUnavailable && error.retryAfterSeconds == 1
        }
        #expect(failing.contains(id))
        let working = try RetakeService(settings: settings, metrics: ServerMetrics())
        #expect(try working.storedImage(id) == image)
        #expect(try working.storedImage(String(repeating: "0", count: 64)) == nil)
    }

    @Test func referencesSurviveARestartAndAreSharedThroughTheStore() async throws {
        let settings = try Self.settings()
        let upload = Upload().adding("image", try Upload.image("graf1.png"))
        let id = try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/references", method: .post, headers: upload.headers, body: upload.body) { Self.json($0)["id"] as? String }
        }
        let score = Upload().adding("referenceId", Data((id ?? "").utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
        try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .ok)
                let h = try #require(Self.homography(Self.json(response)))
                #expect(try Self.cornerError(h) < 3)
                // The features came from the store, not from detecting again.
                #expect((Self.json(response)["timings"] as? [String: Any])?["detectReference"] as? Double == 0)
            }
            // And are kept: the next score by id finds them in memory.
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { #expect($0.status == .ok) }
            try await http.execute(uri: "/metrics", method: .get) { response in
                #expect(String(buffer: response.body).contains("rephoto_reference_cache_hits_total 1"), "\(String(buffer: response.body))")
            }
        }
    }

    @Test func everyErrorHasItsStatusAndCode() async throws {
        let graf1 = try Upload.image("graf1.png"), graf3 = try Upload.image("graf3.png")
        let cases: [(String, Upload, HTTPResponse.Status, String)] = [
            ("missing retake", Upload().adding("reference", graf1), .badRequest, "bad_input"),
            ("missing reference", Upload().adding("retake", graf3), .badRequest, "bad_input"),
            ("bad metadata", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: "{not json"), .badRequest, "bad_input"),
            ("unknown parameter", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"features": {"detektor": "orb"}}}"#), .badRequest, "bad_input"),
            ("raised limit", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"maxPixels": 900000000}}"#), .badRequest, "bad_input"),
            ("unsupported", Upload().adding("reference", graf1).adding("retake", Data("GIF89a........".utf8)), .unsupportedMediaType, "unsupported_format"),
            ("too many pixels", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"maxPixels": 100000}}"#), .contentTooLarge, "too_large"),
            ("too little signal", Upload().adding("reference", graf1).adding("retake", try Upload.image("HappyFish.jpg")), .unprocessableContent, "estimation_failed"),
            ("unknown id", Upload().adding("referenceId", Data(String(repeating: "0", count: 64).utf8), filename: nil).adding("retake", graf3), .notFound, "not_found"),
            // A scalar `config` made JSONSerialization trap and killed the worker (found by probing the server).
            ("config a string", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": "x"}"#), .badRequest, "bad_input"),
            ("config null", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": null}"#), .badRequest, "bad_input"),
            ("config a number", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": 5}"#), .badRequest, "bad_input"),
            ("absurd focal length", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retake": {"intrinsics": {"fx": 1e308, "fy": 1e308, "cx": 400, "cy": 320}}}"#), .badRequest, "bad_input"),
            // A distortion list of the wrong length with an image size indexed past its end and killed the worker.
            ("one distortion coefficient", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retake": {"intrinsics": {"fx": 500, "fy": 500, "cx": 320, "cy": 240, "distortion": [0.1], "imageWidth": 640, "imageHeight": 480}}}"#), .badRequest, "bad_input"),
            ("fifteen distortion coefficients", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retake": {"intrinsics": {"fx": 500, "fy": 500, "cx": 320, "cy": 240, "distortion": [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0], "imageWidth": 640, "imageHeight": 480}}}"#), .badRequest, "bad_input"),
            // A key given twice: one was kept silently.
            // Nested as deep as JSONDecoder admits: the repeated-key check composes it again, on a task's stack.
            ("deeply nested metadata", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"pose": "# + String(repeating: "[", count: 500) + String(repeating: "]", count: 500) + "}}"), .badRequest, "bad_input"),
            ("metadata nested past JSON's depth limit", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"pose": "# + String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000) + "}}"), .badRequest, "bad_input"),
            ("repeated setting", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"pose": {"seed": 1, "seed": 2}}}"#), .badRequest, "bad_input"),
            // A misspelt key fell back to its default: a landscape retake was answered as portrait, 200 OK (probe).
            ("misspelt orientation", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retake": {"attitude": {"quaternion": [1, 0, 0, 0], "orientaton": "landscapeLeft"}}}"#), .badRequest, "bad_input"),
            ("repeated part", Upload().adding("reference", graf1).adding("retake", graf3).adding("retake", graf1), .badRequest, "bad_input"),
            ("unknown part", Upload().adding("reference", graf1).adding("retake", graf3).adding("retkae", graf1), .badRequest, "bad_input"),
            ("misspelt part of the metadata", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retkae": {}}"#), .badRequest, "bad_input"),
            ("bad calibration name", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"reference": {"calibration": "../etc/passwd"}}"#), .badRequest, "bad_input"),
            ("a number past a double", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retake": {"intrinsics": {"fx": 1e400, "fy": 500, "cx": 320, "cy": 240}}}"#), .badRequest, "bad_input"),
            ("a part another operation reads", Upload().adding("reference", graf1).adding("retake", graf3).adding("image", graf1), .badRequest, "bad_input"),
            ("a million samples", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"pose": {"essential": {"maxIterations": 1000000}}}}"#), .badRequest, "bad_input"),
            ("every keypoint", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"features": {"maxKeypoints": 0}}}"#), .badRequest, "bad_input"),
            ("a thousand FLANN checks", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"matching": {"matcher": "flann", "flannChecks": 1000}}}"#), .badRequest, "bad_input"),
            ("a wide guided search", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"matching": {"guidedRadius": 30}}}"#), .badRequest, "bad_input"),
            ("ten SIFT octave layers", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"features": {"detector": "sift", "sift": {"octaveLayers": 10}}}}"#), .badRequest, "bad_input"),
            ("a million samples of the old camera's scan", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"reference": {"intrinsics": "unknown"}, "retake": {"intrinsics": {"fx": 700, "fy": 700, "cx": 400, "cy": 320}}, "config": {"pose": {"referenceFocal": {"minIterations": 1000000, "maxIterations": 1000000}}}}"#), .badRequest, "bad_input"),
            ("a million six-point samples", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"pose": {"referenceFocal": {"solver": "sixPoint", "sixPointIterations": 1000000}}}}"#), .badRequest, "bad_input"),
            ("a 32-bit LSH key", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"matching": {"matcher": "flann", "lshKeySize": 32}}}"#), .badRequest, "bad_input"),
            ("a tiny navigation target", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"navigation": {"targetFraction": 1e-10}}}"#), .badRequest, "bad_input"),
            ("an integer past Int", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"config": {"pose": {"seed": 1e20}}}"#), .badRequest, "bad_input"),
            ("a 60,000-digit number", Upload().adding("reference", graf1).adding("retake", graf3).adding("metadata", json: #"{"retake": {"intrinsics": {"fx": 1"# + String(repeating: "0", count: 60_000) + "}}}"), .badRequest, "bad_input"),
        ]
        // The message says what is wrong, not only that it is.
        let messages = ["a number past a double": "metadata: The given data was not valid JSON. (Number 1e400 is not representable in Swift.)",
                        "a million samples": "metadata.config: pose.essential.maxIterations = 1000000 may not exceed the server's 20000 (time)",
                        "every keypoint": "metadata.config: features.maxKeypoints = 0 may not exceed the server's 20000 (time)",
                        "a thousand FLANN checks": "metadata.config: matching.flannChecks = 1000 may not exceed the server's 50 (time)",
                        "a wide guided search": "metadata.config: matching.guidedRadius = 30 may not exceed the server's 5 (time)",
                        "ten SIFT octave layers": "metadata.config: features.sift.octaveLayers = 10 may not exceed the server's 3 (memory)",
                        "a million samples of the old camera's scan": "metadata.config: pose.referenceFocal.maxIterations = 1000000 may not exceed the server's 400 (time)",
                        "a million six-point samples": "metadata.config: pose.referenceFocal.sixPointIterations = 1000000 may not exceed the server's 2000 (time)",
                        "a 32-bit LSH key": "metadata.config: matching.lshKeySize = 32 is out of range",
                        "an integer past Int": "metadata.config: pose.seed = 1e+20 is out of range (allowed: "]
        try await Self.app(try Self.settings()).test(.router) { http in
            for (name, upload, status, code) in cases {
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                    #expect(response.status == status, "\(name): \(String(buffer: response.body))")
                    #expect(Self.errorCode(response) == code, "\(name)")
                    // Messages quote what they refuse, but never at length (the number was echoed whole, probe).
                    #expect((Self.json(response)["error"] as? [String: Any])?["message"].map { "\($0)".count < 1_100 } == true, "\(name)")
                    if let message = messages[name] {
                        #expect(String(buffer: response.body).contains(message), "\(name): \(String(buffer: response.body))")
                    }
                    if name == "misspelt orientation" {
                        #expect(String(buffer: response.body).contains("metadata: unknown key 'retake.attitude.orientaton' (retake.attitude has frame, orientation, quaternion)"))
                    }
                }
            }
            // With the server's SIFT capped, a request may not lift the cap (0 keeps every feature).
            try await Self.app(try Self.settings { $0.pipeline.features.sift.features = 2000 }).test(.router) { capped in
                for (asked, status) in [(0, HTTPResponse.Status.badRequest), (5000, .badRequest)] {
                    let upload = Upload().adding("reference", graf1).adding("retake", graf3)
                        .adding("metadata", json: #"{"config": {"features": {"detector": "sift", "sift": {"features": \#(asked)}}}}"#)
                    try await capped.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                        #expect(response.status == status && String(buffer: response.body).contains("features.sift.features"), "\(asked): \(String(buffer: response.body))")
                    }
                }
            }
            // A blank reference was stored (201), and no score against it could ever succeed (probe); an image
            // part is scoring's mistake, and a part without a name was ignored.
            let blank = Upload().adding("image", Data("P5\n64 64\n255\n".utf8) + Data(repeating: 128, count: 64 * 64))
            try await http.execute(uri: "/v1/references", method: .post, headers: blank.headers, body: blank.body) { response in
                #expect(response.status == .unprocessableContent && Self.errorCode(response) == "estimation_failed", "\(String(buffer: response.body))")
            }
            let unnamed = "--b\r\nContent-Type: image/png\r\n\r\nxyz\r\n--b--\r\n"
            try await http.execute(uri: "/v1/references", method: .post, headers: [.contentType: "multipart/form-data; boundary=b"], body: ByteBuffer(string: unnamed)) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("a part without a name"), "\(String(buffer: response.body))")
            }
            // A body cut before its closing boundary said "missing part 'retake'", although that part was sent (probe).
            let unclosed = "--b\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nxyz"
            try await http.execute(uri: "/v1/references", method: .post, headers: [.contentType: "multipart/form-data; boundary=b"], body: ByteBuffer(string: unclosed)) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("it ends inside part 'image', before its closing boundary"), "\(String(buffer: response.body))")
            }
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}")) {
                #expect($0.status == .badRequest)
            }
            try await http.execute(uri: "/v1/nothing-here", method: .get) { response in
                #expect(response.status == .notFound && Self.errorCode(response) == "not_found")
            }
            try await http.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            // A method the API does not define on a path it does: 405 with what it allows (it was 404), read from
            // openapi.yaml; a path parameter matches any one segment.
            let wrong: [(String, HTTPRequest.Method, String)] = [
                ("/v1/retakes/score", .get, "POST"), ("/healthz", .post, "GET, HEAD"), ("/v1/references/abc", .post, "DELETE, GET, HEAD"),
                ("/v1/references", .delete, "GET, HEAD, POST"), ("/", .post, "GET, HEAD"),
            ]
            for (uri, method, allowed) in wrong {
                try await http.execute(uri: uri, method: method) { response in
                    #expect(response.status == .methodNotAllowed && Self.errorCode(response) == "method_not_allowed", "\(method) \(uri): \(response.status)")
                    #expect(response.headers[.allow] == allowed, "\(method) \(uri)")
                    #expect(String(buffer: response.body).contains("is not allowed on \(uri) (allowed: \(allowed))"))
                }
            }
            try await http.execute(uri: "/v1/references/abc/def", method: .post) { #expect($0.status == .notFound) }
            // What cannot be an id is refused as the referenceId part is, not answered as unknown.
            for (method, id) in [(HTTPRequest.Method.get, String(repeating: "A", count: 64)), (.delete, "abc")] {
                try await http.execute(uri: "/v1/references/\(id)", method: method) { response in
                    #expect(response.status == .badRequest && String(buffer: response.body).contains("'\(id)' is not a reference id (64 lowercase hex digits, the SHA-256 of the image)"))
                }
            }
            // HEAD answers as GET would, without the body (a load balancer's health check; it was 405).
            try await http.execute(uri: "/healthz", method: .head) { response in
                #expect(response.status == .ok && response.body.readableBytes == 0, "\(response.status)")
            }
            try await http.execute(uri: "/v1/references/\(String(repeating: "0", count: 64))", method: .head) { response in
                #expect(response.status == .notFound && response.body.readableBytes == 0, "\(response.status)")
            }
            try await http.execute(uri: "/v1/retakes/score", method: .head) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "POST" && response.body.readableBytes == 0, "\(response.status)")
            }
        }
        // A body over the limit is refused as too large.
        let small = try Self.settings { $0.maxBodyBytes = 4096 }
        try await Self.app(small).test(.router) { http in
            let upload = Upload().adding("reference", graf1).adding("retake", graf3)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .contentTooLarge && Self.errorCode(response) == "too_large", "\(response.status) \(String(buffer: response.body))")
            }
        }
    }

    @Test func aTokenIsRequiredWhenConfiguredAndAnOpenBindIsRefused() async throws {
        let settings = try Self.settings { $0.token = "correct-horse-battery-staple" }
        try await Self.app(settings).test(.router) { http in
            try await http.execute(uri: "/v1/references/\(String(repeating: "a", count: 64))", method: .get) { response in
                #expect(response.status == .unauthorized && Self.errorCode(response) == "unauthorized")
            }
            try await http.execute(uri: "/v1/references/\(String(repeating: "a", count: 64))", method: .get,
                                   headers: [.authorization: "Bearer correct-horse-battery-staple"]) { #expect($0.status == .notFound) }
            try await http.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            // Every path but the public four needs the token: the router takes "//v1/..." for "/v1/...", and a
            // "/v1/" prefix check let a score, an upload and a delete through without one (probe).
            for uri in ["//v1/retakes/score", "//v1/references", "/nothing", "/healthz/x"] {
                try await http.execute(uri: uri, method: .post) { #expect($0.status == .unauthorized, "\(uri)") }
            }
            // The scheme is case-insensitive.
            try await http.execute(uri: "/v1/references/\(String(repeating: "a", count: 64))", method: .get,
                                   headers: [.authorization: "bearer correct-horse-battery-staple"]) { #expect($0.status == .notFound) }
        }
        // The guide's page and files are public too (they hold nothing; the page sends the token itself).
        for path in ["/healthz", "/readyz", "/metrics", "/openapi.yaml", "/", "", "/guide/guide.js"] { #expect(RetakeServer.isPublic(path), "\(path)") }
        for path in ["//v1/retakes/score", "/v1/references", "/healthz/x", "/guide", "/guide/a/b", "/v1/references/x/qr"] { #expect(!RetakeServer.isPublic(path), "\(path)") }
        let open = try Self.settings { $0.host = "0.0.0.0" }
        #expect(throws: RephotoError.self) { try open.validate() }
        #expect(BearerAuth<BasicRequestContext>.equal(Array("abc".utf8), Array("abc".utf8)))
        #expect(!BearerAuth<BasicRequestContext>.equal(Array("abc".utf8), Array("abd".utf8)))
        #expect(!BearerAuth<BasicRequestContext>.equal(Array("abc".utf8), Array("abcd".utf8)))
    }

    /// Vision fails on the pair, attitudes were sent: 200, vision null, the sensor path's guidance.
    @Test func theSensorPathSurvivesAVisionFailure() async throws {
        let metadata = #"{"reference": {"attitude": {"quaternion": [0.9, 0.1, 0.3, 0.2985]}}, "retake": {"attitude": {"quaternion": [0.92, 0.1, 0.28, 0.2533]}}}"#
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("HappyFish.jpg")).adding("metadata", json: metadata)
        try await Self.app(try Self.settings()).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .ok)
                let body = Self.json(response)
                #expect(body["vision"] is NSNull && body["sensor"] is [String: Any])
                #expect((body["visionFailure"] as? [String: Any])?["code"] as? String == "estimation_failed")
            }
        }
    }

    @Test(arguments: ["warped", "blend", "split"])
    func alignsTheRetakeIntoTheReferenceFrame(mode: String) async throws {
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
            .adding("metadata", json: #"{"align": {"mode": "\#(mode)", "format": "png"}}"#)
        try await Self.app(try Self.settings()).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/align", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/png")
                let image = try Image(data: Data(buffer: response.body))
                #expect((image.width, image.height) == (800, 640))
                // graf3 warped back onto graf1 by the true homography matches graf1 where both see the wall.
                if mode == "warped" {
                    let difference = try Self.meanGreenDifference(try Fixtures.image("graf1.png"), image, x: 250..<550, y: 200..<440)
                    #expect(difference < 30, "mean difference \(difference)")
                }
            }
        }
    }

    /// Mean absolute difference of the green channel of two colour images of one size over a window (graf1's wall).
    static func meanGreenDifference(_ a: Image, _ b: Image, x: Range<Int>, y: Range<Int>) throws -> Double {
        let p = try a.pixels(), q = try b.pixels()
        var difference = 0.0, count = 0
        for row in stride(from: y.lowerBound, to: y.upperBound, by: 2) {
            for column in stride(from: x.lowerBound, to: x.upperBound, by: 2) {
                let i = (row * a.width + column) * 3 + 1
                difference += Double(abs(Int(p[i]) - Int(q[i])))
                count += 1
            }
        }
        return difference / Double(max(1, count))
    }

    /// The aligned image is at most --align-max-dimension on its longer side, both photos decoded that small
    /// (the homography scaled to them): still graf3 on graf1's wall.
    @Test func alignedImagesAreBoundedInSize() async throws {
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
            .adding("metadata", json: #"{"align": {"format": "png"}}"#)
        try await Self.app(try Self.settings { $0.alignMaxDimension = 400 }).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/align", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .ok)
                let image = try Image(data: Data(buffer: response.body))
                #expect((image.width, image.height) == (400, 320))
                let small = try Image(data: try Upload.image("graf1.png"), reducedFor: FeatureConfig(detector: .akaze, maxDimension: 400))
                let difference = try Self.meanGreenDifference(small, image, x: 125..<275, y: 100..<220)
                #expect(difference < 30, "mean difference \(difference)")
            }
        }
    }

    /// 50 requests at once: all succeed, identical inputs give identical answers.
    @Test func fiftyParallelScoresAgree() async throws {
        let upload = Upload().adding("reference", try Upload.image("Blender_Suzanne1.jpg")).adding("retake", try Upload.image("Blender_Suzanne2.jpg"))
        try await Self.app(try Self.settings { $0.queueLength = 64 }).test(.router) { http in
            let results = try await withThrowingTaskGroup(of: (HTTPResponse.Status, Matrix3?).self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) {
                            ($0.status, Self.homography(Self.json($0)))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 50 && results.allSatisfy { $0.0 == .ok })
            #expect(Set(results.compactMap { $0.1.map { "\($0)" } }).count == 1)
        }
    }

    /// A queue of one in front of one pipeline: the excess gets 503 with Retry-After at once, and /healthz
    /// answers quickly meanwhile.
    @Test func aFullQueueAnswers503AtOnce() async throws {
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
        try await Self.app(try Self.settings { $0.concurrency = 1; $0.queueLength = 1 }).test(.router) { http in
            let statuses = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) {
                            ($0.status, $0.headers[.retryAfter])
                        }
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(100))
                    let start = ContinuousClock.now
                    let status = try await http.execute(uri: "/healthz", method: .get) { $0.status }
                    let elapsed = ContinuousClock.now - start
                    return (status, elapsed < .milliseconds(500) ? "fast" : "slow")
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.contains { $0.0 == .ok && $0.1 == "fast" })
            let refused = statuses.filter { $0.0 == .serviceUnavailable }
            #expect(!refused.isEmpty && refused.allSatisfy { $0.1 == "1" })
            #expect(statuses.filter { $0.0 == .ok }.count >= 2)
        }
    }

    /// A score's `points` part (marks) is read as `--points` is: a malformed one is 400 naming its line, a good one is
    /// reported back in `marks`.
    @Test func aScoresMarkedPointsAreReadOrRefused() async throws {
        let base = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
        let good = base.adding("points", try Fixtures.grafMarks())
        let bad = base.adding("points", Data("\(MarkedPoints.header)\n1,2,x,4\n".utf8))
        try await Self.app(try Self.settings()).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: bad.headers, body: bad.body) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("part 'points' line 2: '1,2,x,4' is not four finite numbers"))
            }
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: good.headers, body: good.body) { response in
                #expect(response.status == .ok)
                let json = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                let marks = json?["marks"] as? [String: Any]
                #expect(marks?["count"] as? Int == 5 && marks?["guided"] as? Bool == true)
            }
        }
    }

    /// "unknown" is a property of a stored reference: kept on upload (and when the image comes again bare), shown by
    /// GET, used by a score by id, which estimates the focal length (truth: 0.7 x 391.64 px) and then needs the
    /// retake's camera, and a guidance session on it; a camera given with the image again replaces it.
    @Test func aStoredReferenceKeepsItsCameraUnknown() async throws {
        let sequence = Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach")
        let old = try Image(contentsOfFile: sequence.appendingPathComponent("reference.jpg").path).resized(width: 336, height: 252).encoded(as: .png)
        let retake = try Data(contentsOf: sequence.appendingPathComponent("frame-0000.jpg"))
        let retakeCamera = #"{"intrinsics": {"fx": 391.6444049109095, "fy": 391.6444049109095, "cx": 239.5, "cy": 179.5}}"#
        let truth = 0.7 * 391.6444049109095
        try await Self.app(try Self.settings()).test(.router) { http in
            let add = Upload().adding("image", old).adding("metadata", json: #"{"reference": {"intrinsics": "unknown"}}"#)
            let id = try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { response in
                #expect(response.status == .created, "\(String(buffer: response.body))")
                return Self.json(response)["id"] as? String ?? ""
            }
            let bare = Upload().adding("image", old)
            try await http.execute(uri: "/v1/references", method: .post, headers: bare.headers, body: bare.body) { #expect($0.status == .ok) }
            try await http.execute(uri: "/v1/references/\(id)", method: .get) { response in
                #expect(Self.json(response)["intrinsics"] as? String == "unknown")
            }
            let score = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", retake)
                .adding("metadata", json: #"{"retake": \#(retakeCamera)}"#)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .ok)
                let camera = Self.json(response)["referenceCamera"] as? [String: Any]
                #expect(abs((camera?["fx"] as? Double ?? 0) - truth) / truth < 0.02, "\(camera ?? [:])")
            }
            let noCamera = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", retake)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: noCamera.headers, body: noCamera.body) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("camera is \\\"unknown\\\" (as stored): estimating it needs the retake's camera"),
                        "\(String(buffer: response.body))")
            }
            // A guidance session on it: the first frame's estimate is held and reported.
            let open = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("metadata", json: #"{"retake": \#(retakeCamera)}"#)
            let frames = try await http.execute(uri: "/v1/sessions", method: .post, headers: open.headers, body: open.body) { response in
                #expect(response.status == .created, "\(String(buffer: response.body))")
                return Self.json(response)["frames"] as? String ?? ""
            }
            let frame = Upload().adding("frame", retake)
            try await http.execute(uri: frames, method: .post, headers: frame.headers, body: frame.body) { response in
                let camera = Self.json(response)["referenceCamera"] as? [String: Any]
                #expect(abs((camera?["fx"] as? Double ?? 0) - truth) / truth < 0.02, "\(camera ?? [:])")
            }
            let known = Upload().adding("image", old).adding("metadata", json: #"{"reference": {"intrinsics": {"fx": 274, "fy": 274, "cx": 167.5, "cy": 125.5}}}"#)
            try await http.execute(uri: "/v1/references", method: .post, headers: known.headers, body: known.body) { #expect($0.status == .ok) }
            let stored = try await http.execute(uri: "/v1/references/\(id)", method: .get) { response in
                let intrinsics = Self.json(response)["intrinsics"] as? [String: Any]
                #expect(intrinsics?["fx"] as? Double == 274 && intrinsics?["cy"] as? Double == 125.5)
                let keys = Set(intrinsics?.keys.map { $0 } ?? []), metadataKeys: Set = ["fx", "fy", "cx", "cy", "distortion", "imageWidth", "imageHeight"]
                #expect(keys.isSubset(of: metadataKeys), "GET answers the camera in the shape metadata takes: \(intrinsics ?? [:])")
                return String(data: try JSONSerialization.data(withJSONObject: intrinsics ?? [:]), encoding: .utf8)!
            }
            // What GET answered is accepted back as the reference's camera.
            let again = Upload().adding("image", old).adding("metadata", json: #"{"reference": {"intrinsics": \#(stored)}}"#)
            try await http.execute(uri: "/v1/references", method: .post, headers: again.headers, body: again.body) {
                #expect($0.status == .ok, "\(String(buffer: $0.body))")
            }
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .ok && Self.json(response)["referenceCamera"] == nil)
            }
        }
    }

    /// Marks given with a stored reference are kept with it for that retake: the same retake scored or aligned again
    /// without them uses them (`marks.kept`); another retake does not, marks that do not fit are not kept, and deleting
    /// the reference deletes them.
    @Test func marksOnAStoredReferenceAreKeptForTheirRetake() async throws {
        let settings = try Self.settings()
        let graf1 = try Upload.image("graf1.png"), graf3 = try Upload.image("graf3.png")
        // The same view in other bytes is another retake: marks are kept by the retake's hash.
        let graf3JPEG = try Image(contentsOfFile: try Fixtures.sample("graf3.png")).encoded(as: .jpeg(quality: 95))
        try await Self.app(settings).test(.router) { http in
            // With a camera, a pose to check the marks against (without one they could not be refused).
            let add = Upload().adding("image", graf1).adding("metadata", json: #"{"reference": {"intrinsics": {"fx": 800, "fy": 800, "cx": 400, "cy": 320}}}"#)
            let id = try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { Self.json($0)["id"] as? String ?? "" }
            func score(_ retake: Data, points: Data? = nil) -> Upload {
                let upload = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", retake)
                return points.map { upload.adding("points", $0) } ?? upload
            }
            // A mark 300 px off is refused, and not kept.
            var lines = String(decoding: try Fixtures.grafMarks(), as: UTF8.self).split(separator: "\n").map(String.init)
            var fields = lines[1].split(separator: ",").map { Double($0)! }
            fields[2] += 300
            lines[1] = fields.map { String($0) }.joined(separator: ",")
            let slipped = score(graf3, points: Data(lines.joined(separator: "\n").utf8))
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: slipped.headers, body: slipped.body) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("marked pair 1 does not fit"), "\(String(buffer: response.body))")
            }
            let bare = score(graf3)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: bare.headers, body: bare.body) { response in
                #expect(response.status == .ok && Self.json(response)["marks"] == nil)
            }
            let marked = score(graf3, points: try Fixtures.grafMarks())
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: marked.headers, body: marked.body) { response in
                let marks = Self.json(response)["marks"] as? [String: Any]
                #expect(marks?["count"] as? Int == 5 && marks?["kept"] == nil, "\(marks ?? [:])")
            }
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: bare.headers, body: bare.body) { response in
                let marks = Self.json(response)["marks"] as? [String: Any]
                #expect(marks?["count"] as? Int == 5 && marks?["kept"] as? Bool == true, "\(marks ?? [:])")
            }
            let other = score(graf3JPEG)
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: other.headers, body: other.body) { response in
                #expect(Self.json(response)["marks"] == nil)
            }
            let folder = URL(fileURLWithPath: settings.referenceStore!).appendingPathComponent(String(id.prefix(2)))
            func keptFiles() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.contains(".points-") }.count }
            #expect(keptFiles() == 1)
            try await http.execute(uri: "/v1/references/\(id)", method: .delete) { #expect($0.status == .noContent) }
            #expect(keptFiles() == 0)
        }
    }

    /// Past --request-timeout the answer is 503 `timeout` with Retry-After; the worker stays usable.
    @Test func aSlowRequestTimesOut() async throws {
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
        let settings = try Self.settings { $0.requestTimeout = 0.01 }
        let compute = ComputePool(threads: settings.concurrency, queueLimit: settings.queueLength, name: "rephoto-serve")
        let app = try RetakeServer.makeApplication(settings: settings, logger: Logger(label: "test"), compute: compute)
        try await app.test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .serviceUnavailable && Self.errorCode(response) == "timeout")
                #expect(response.headers[.retryAfter] == "1")
            }
            try await http.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
        }
        // The abandoned work runs out; the process must not exit under it (it would crash inside OpenCV).
        #expect(compute.finish(waitingAtMost: 60))
        #expect(compute.running == 0 && compute.queued == 0)
    }

    /// One --request-timeout covers all of a request's pipelines (preparing its reference, then scoring): each
    /// had its own, so a request was answered 200 well past the timeout (probe). Under a 1 s deadline, a first
    /// pipeline of 0.9 s leaves the second at most 0.1 s, and one that cannot end before it is answered is cut off;
    /// once the deadline has passed, no work starts. No wall-clock bound: a loaded machine only shortens what is left.
    @Test func oneDeadlineCoversARequestsPipelines() async throws {
        let service = try RetakeService(settings: try Self.settings { $0.requestTimeout = 1 }, metrics: ServerMetrics())
        defer { service.pool.shutdown() }
        let release = DispatchSemaphore(value: 0)
        let finished = Mutex(false)
        do {
            try await service.withRequestDeadline {
                try await service.compute { Thread.sleep(forTimeInterval: 0.9) }
                let left = try #require(service.timeLeft())
                #expect(left <= 0.1 + 1e-3, "a second pipeline got \(left) s, its own deadline rather than what the request had left")
                // Held until the caller has its answer: only the deadline can answer it.
                try await service.compute { release.wait(); finished.withLock { $0 = true } }
            }
            Issue.record("a pipeline that could not end passed a 1 s deadline")
        } catch let error as ServiceError {
            #expect(ServerError(error).status == .serviceUnavailable && error.message == "the request took longer than 1.0 s (--request-timeout)")
        }
        #expect(!finished.withLock { $0 })
        release.signal()
        let ran = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            Task {
                let outcome = try? await service.withRequestDeadline {
                    try await Task.sleep(for: .milliseconds(1100))
                    return try await service.compute { true }
                }
                done.resume(returning: outcome ?? false)
            }
        }
        #expect(!ran)
    }

    /// Concurrent uploads of one new reference: one creates it (201), the others find it known (200); all six
    /// had answered 201 (found by probing).
    @Test func concurrentUploadsOfOneReferenceCreateItOnce() async throws {
        let add = Upload().adding("image", try Upload.image("graf1.png"))
        try await Self.app(try Self.settings()).test(.router) { http in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { $0.status } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .created }.count == 1 && statuses.filter { $0 == .ok }.count == 5, "\(statuses)")
        }
    }

    /// An alignment passes on the warnings that bear on it (a damaged retake was aligned in silence, found by
    /// probing), one X-Rephoto-Warning field each, and not the pose's (no camera was given).
    @Test func alignPassesOnItsWarnings() async throws {
        let jpeg = try Upload.image("Blender_Suzanne2.jpg")
        let middle = jpeg.count / 2
        let damaged = jpeg.prefix(middle) + jpeg.dropFirst(middle + 7)
        let align = Upload().adding("reference", try Upload.image("Blender_Suzanne1.jpg")).adding("retake", Data(damaged))
        try await Self.app(try Self.settings()).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/align", method: .post, headers: align.headers, body: align.body) { response in
                #expect(response.status == .ok)
                let warnings = response.headers[values: RetakeServer.warningHeader]
                #expect(warnings.count == 1 && warnings.first?.hasPrefix("current image has damaged data: Corrupt JPEG data") == true, "\(warnings)")
            }
        }
    }

    /// SIFT's float descriptors matched a Strecha pair in 9-19 s at the 20,000-keypoint cap, 8 times the documented
    /// worst (found by probing): a request that turns SIFT on keeps at most 8,000 a side; fewer stay fewer, and a
    /// server whose own settings use SIFT keeps its cap.
    @Test func aRequestThatTurnsSIFTOnKeepsFewerKeypoints() throws {
        func keypoints(_ json: String, base: PipelineConfig = PipelineConfig()) throws -> Int {
            try RequestMetadata.settings(base: base, overrides: Data(json.utf8)).features.maxKeypoints
        }
        #expect(try keypoints(#"{"features": {"detector": "sift"}}"#) == 8_000)
        #expect(try keypoints(#"{"features": {"detector": "sift", "maxKeypoints": 5000}}"#) == 5_000)
        #expect(try keypoints(#"{"features": {"detector": "orb"}}"#) == 20_000)
        var sift = PipelineConfig()
        sift.features.detector = .sift
        #expect(try keypoints(#"{"features": {"sift": {"contrastThreshold": 0.01}}}"#, base: sift) == 20_000)
    }

    /// Settings whose time grows with them, not with the image, may be lowered by a request but not raised: ORB's
    /// patch and border at 1024 px (with FAST at 0) took a textured pair from about 3 to 11 CPU-s, and OpenCV's
    /// matcher with mutual matching to 19.5 CPU-s against 5.5 (found by probing).
    @Test func aRequestCannotRaiseWhatItsTimeGrowsWith() throws {
        for (json, message) in [
            (#"{"features": {"detector": "orb", "orb": {"patchSize": 1024}}}"#, "features.orb.patchSize = 1024 may not exceed the server's 31 (time)"),
            (#"{"features": {"detector": "orb", "orb": {"edgeThreshold": 1024}}}"#, "features.orb.edgeThreshold = 1024 may not exceed the server's 31 (time)"),
            (#"{"matching": {"matcher": "opencv_brute_force", "mutual": true}}"#, "matching.matcher opencv_brute_force is for checks"),
        ] {
            let error = #expect(throws: ServiceError.self) { try RequestMetadata.settings(base: PipelineConfig(), overrides: Data(json.utf8)) }
            #expect(error.map { ServerError($0).status } == .badRequest && error?.message.contains(message) == true, "\(error?.message ?? "")")
        }
        #expect(try RequestMetadata.settings(base: PipelineConfig(), overrides: Data(#"{"features": {"orb": {"patchSize": 15, "edgeThreshold": 15}}}"#.utf8)).features.orb.patchSize == 15)
    }

    /// Requests that time out while queued are not computed afterwards: with one pipeline held, the queued
    /// requests' work is dropped, and the metric counts it.
    @Test func timedOutQueuedRequestsAreNotComputed() async throws {
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
        let settings = try Self.settings { $0.requestTimeout = 0.2; $0.concurrency = 1; $0.queueLength = 4 }
        let compute = ComputePool(threads: 1, queueLimit: settings.queueLength, name: "rephoto-serve")
        let hold = DispatchSemaphore(value: 0)
        let holding = Task { try await compute.run { hold.wait() } }
        while compute.running == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let app = try RetakeServer.makeApplication(settings: settings, logger: Logger(label: "test"), compute: compute)
        try await app.test(.router) { http in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { $0.status }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [.serviceUnavailable, .serviceUnavailable, .serviceUnavailable])
            hold.signal()
            try await holding.value
            while compute.queued > 0 || compute.running > 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(compute.skipped == 3)
            try await http.execute(uri: "/metrics", method: .get) { response in
                #expect(String(buffer: response.body).contains("rephoto_compute_abandoned_total 3"))
                // Dropped, they wait no more: the gauge had kept them until the next request (found by probing).
                #expect(String(buffer: response.body).contains("rephoto_compute_queue_depth 0"), "\(String(buffer: response.body))")
            }
        }
        #expect(compute.finish(waitingAtMost: 60))
    }

    @Test func shutdownRefusesNewWorkAndReadinessSaysSo() async throws {
        let watcher = ShutdownWatcher()
        let app = try RetakeServer.makeApplication(settings: try Self.settings(), logger: Logger(label: "test"), shutdown: watcher)
        try await app.test(.router) { http in
            try await http.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
            watcher.begin()
            try await http.execute(uri: "/readyz", method: .get) { #expect($0.status == .serviceUnavailable) }
            try await http.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            let upload = Upload().adding("image", try Upload.image("graf1.png"))
            try await http.execute(uri: "/v1/references", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .serviceUnavailable && response.headers[.retryAfter] == "1")
            }
        }
    }

    /// The document's `servers` entry is the worker's own scheme, address and port, not the file's placeholder 8080.
    @Test func theOpenAPIServerIsThisWorker() throws {
        func servers(_ settings: ServerSettings) throws -> [String] {
            let document = try #require(try Yams.load(yaml: RetakeServer.openAPIDocument(for: settings)) as? [String: Any])
            return ((document["servers"] as? [[String: Any]]) ?? []).compactMap { $0["url"] as? String }
        }
        var s = ServerSettings()
        s.port = 9123
        #expect(try servers(s) == ["http://127.0.0.1:9123"])
        s.tls = ServerSettings.TLSFiles(certificate: "cert.pem", key: "key.pem")
        s.host = "::1"
        #expect(try servers(s) == ["https://[::1]:9123"])
        s.host = "0.0.0.0"
        #expect(try servers(s) == ["https://127.0.0.1:9123"])
    }

    /// Without --calibration-dir no folder is read (the default was a relative "calibration", whatever the working
    /// folder held): a request naming a calibration is told to send intrinsics.
    @Test func namedCalibrationsNeedAFolder() async throws {
        let upload = Upload().adding("reference", try Upload.image("graf1.png")).adding("retake", try Upload.image("graf3.png"))
            .adding("metadata", json: #"{"reference": {"calibration": "opencv-sample-640x480"}}"#)
        try await Self.app(try Self.settings { $0.calibrationDirectory = nil }).test(.router) { http in
            try await http.execute(uri: "/v1/retakes/score", method: .post, headers: upload.headers, body: upload.body) { response in
                #expect(response.status == .badRequest)
                #expect((Self.json(response)["error"] as? [String: Any])?["message"] as? String
                    == "metadata.reference.calibration: this worker serves no named calibrations (rephoto serve --calibration-dir); send intrinsics instead")
            }
        }
    }

    @Test func servesItsOpenAPIDocumentAndMetrics() async throws {
        try await Self.app(try Self.settings()).test(.router) { http in
            try await http.execute(uri: "/openapi.yaml", method: .get) { response in
                let document = try #require(try Yams.load(yaml: String(buffer: response.body)) as? [String: Any])
                #expect(document["openapi"] as? String == "3.1.0")
                let paths = try #require(document["paths"] as? [String: Any])
                for path in ["/v1/retakes/score", "/v1/retakes/align", "/v1/references", "/v1/references/{id}", "/healthz", "/readyz", "/metrics"] {
                    #expect(paths[path] != nil, "\(path)")
                }
                // The document's action schema names what the code writes, no more and no less, and its version.
                let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
                let action = try #require((schemas["GuidanceAction"] as? [String: Any])?["properties"] as? [String: Any])
                func names(_ key: String) -> Set<String> { Set((((action[key] as? [String: Any])?["enum"] as? [Any]) ?? []).compactMap { $0 as? String }) }
                #expect(names("kind") == Set(GuidanceAction.Kind.allCases.map(\.rawValue)))
                #expect(names("direction") == Set(GuidanceAction.Direction.allCases.map(\.rawValue)))
                #expect(names("unit") == Set(GuidanceAction.Unit.allCases.map(\.rawValue)))
                #expect((schemas["SchemaVersion"] as? [String: Any])?["const"] as? Int == JSONOutput.schemaVersion)
            }
            try await http.execute(uri: "/healthz", method: .get) { _ in }
            try await http.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                for name in ["rephoto_requests_total{route=\"/healthz\",status=\"200\"}", "rephoto_request_duration_seconds_bucket", "rephoto_requests_in_flight",
                             "rephoto_compute_queue_depth", "rephoto_reference_cache_hits_total", "rephoto_reference_store_entries"] {
                    #expect(text.contains(name), "\(name)")
                }
            }
        }
    }
}
