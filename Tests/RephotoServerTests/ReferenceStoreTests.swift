import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import RephotoKit
import RephotoTestSupport
import Testing
@testable import RephotoServer

/// The on-disk reference store shared by instances: deletes seen everywhere, failures that keep what they
/// could not change, bounded derived files, and what killed processes leave behind.
@Suite(.serialized) struct ReferenceStoreTests {
    /// Two instances on one store: a delete through B holds for A at once, for GET and for scoring by id,
    /// although A has the reference prepared in memory (it kept answering `known` and scoring it).
    @Test func aDeleteThroughAnotherInstanceHoldsAtOnce() async throws {
        let settings = try ServerTests.settings()
        let a = try ServerTests.app(settings), b = try ServerTests.app(settings)
        let add = Upload().adding("image", try Upload.image("graf1.png"))
        try await a.test(.router) { httpA in
            let id = try #require(try await httpA.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) { ServerTests.json($0)["id"] as? String })
            let score = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
            try await httpA.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { #expect($0.status == .ok) }
            try await b.test(.router) { httpB in
                try await httpB.execute(uri: "/v1/references/\(id)", method: .delete) { #expect($0.status == .noContent) }
            }
            try await httpA.execute(uri: "/v1/references/\(id)", method: .get) { #expect($0.status == .notFound) }
            try await httpA.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { response in
                #expect(response.status == .notFound && ServerTests.errorCode(response) == "not_found", "\(String(buffer: response.body))")
            }
            let folder = URL(fileURLWithPath: try #require(settings.referenceStore)).appendingPathComponent(String(id.prefix(2)))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(id) }.isEmpty)
        }
    }

    /// A store whose files cannot be removed (read-only) keeps the reference whole and answers 503: DELETE had
    /// said 204 while all three files stayed and GET still said `known`.
    @Test func aDeleteThatCannotRemoveKeepsTheReference() async throws {
        let settings = try ServerTests.settings()
        let (_, id, folder) = try await ServerTests.storedReference(settings)
        let before = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        var files = ReferenceStore.FileOps()
        files.remove = { _ throws(ReferenceStore.Failure) in throw .readOnly }
        let store = try ReferenceStore(directory: settings.referenceStore, files: files)
        let service = try RetakeService(settings: settings, metrics: ServerMetrics(), store: store)
        let error = #expect(throws: ServiceError.self) { try service.deleteReference(id) }
        #expect(error.map { ServerError($0).status } == .serviceUnavailable && error?.envelope.error.code == "unavailable")
        #expect(error?.envelope.error.message == "reference \(id) was not deleted: the store cannot be written (read-only or not permitted)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == before)
        #expect(service.hasReference(id))
    }

    /// A full disk is 507 `no_room` (a read-only one 503), and no message carries a server path: it was a 500
    /// "internal" quoting NSFilePath=/srv/.../store/eb/eb31....image. Nothing is left half-written, and once
    /// there is room the same upload is stored.
    @Test func aFullStoreIs507WithoutPaths() async throws {
        let settings = try ServerTests.settings()
        let directory = try #require(settings.referenceStore)
        var files = ReferenceStore.FileOps()
        files.write = { _, _ throws(ReferenceStore.Failure) in throw .noRoom }
        let full = try RetakeService(settings: settings, metrics: ServerMetrics(), store: try ReferenceStore(directory: directory, files: files))
        let add = Upload().adding("image", try Upload.image("graf1.png"))
        let form = try MultipartForm(contentType: add.headers[.contentType], body: add.body, allowed: RetakeServer.referenceParts)
        let error = await #expect(throws: ServiceError.self) { try await full.addReference(form) }
        #expect(error.map { ServerError($0).status.code } == 507 && error?.envelope.error.code == "no_room")
        #expect(error?.envelope.error.message == "the reference was not stored: no space left on the store's disk")
        #expect(error.map { !$0.envelope.error.message.contains("/") } == true)
        let id = ReferenceStore.id(of: try Upload.image("graf1.png"))
        #expect(!full.hasReference(id))
        // A real write failure (the shard is a file, ENOTDIR) reaches the client without the path either.
        let shard = URL(fileURLWithPath: directory).appendingPathComponent(String(id.prefix(2)))
        try? FileManager.default.removeItem(at: shard)
        try Data().write(to: shard)
        let broken = try RetakeService(settings: settings, metrics: ServerMetrics())
        let failure = await #expect(throws: ServiceError.self) { try await broken.addReference(form) }
        #expect(failure.map { ServerError($0).status } == .internalServerError && failure.map { !$0.envelope.error.message.contains(directory) } == true,
                "\(failure?.envelope.error.message ?? "")")
        try FileManager.default.removeItem(at: shard)
        let (_, created) = try await broken.addReference(form)
        #expect(created && broken.hasReference(id))
        // A reference the store holds already is known on a full disk too: nothing needs writing (it was 507).
        let known = try await full.addReference(form)
        #expect(known.id == id && !known.created)
    }

    /// The derived files stay within --store-bytes, least recently used out first; images and entries are never
    /// evicted (500 requests with different thresholds had left 503 files, 36 MB, for one reference).
    @Test func derivedFilesStayWithinStoreBytes() async throws {
        let probe = try ServerTests.settings()
        let (_, id, folder) = try await ServerTests.storedReference(probe)
        let one = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".features-") }
        #expect(one.count == 1)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(one[0]).path)[.size] as? Int)
        // Room for about two and a half feature files.
        let settings = try ServerTests.settings { s in
            s.referenceStore = probe.referenceStore
            s.storeBytes = size * 5 / 2
        }
        try await ServerTests.app(settings).test(.router) { http in
            for threshold in ["0.0011", "0.0012", "0.0013", "0.0014", "0.0015"] {
                let score = Upload().adding("referenceId", Data(id.utf8), filename: nil).adding("retake", try Upload.image("graf3.png"))
                    .adding("metadata", json: #"{"config": {"features": {"akaze": {"threshold": \#(threshold)}}}}"#)
                try await http.execute(uri: "/v1/retakes/score", method: .post, headers: score.headers, body: score.body) { #expect($0.status == .ok) }
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            let kept = names.filter { $0.contains(".features-") }
            try await http.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                let derived = text.split(separator: "\n").first { $0.hasPrefix("rephoto_reference_store_derived_bytes ") }
                let value = derived.flatMap { Double($0.split(separator: " ").last ?? "") } ?? -1
                #expect(value > 0 && value <= Double(size * 5 / 2), "\(derived ?? "none")")
                // Six written, the rest evicted.
                #expect(text.contains("rephoto_reference_store_evicted_total \(6 - kept.count)"), "\(kept)")
            }
            #expect((1...3).contains(kept.count), "\(names)")
            // The one used last stays; the image and the entry are never evicted.
            var last = FeatureConfig()
            last.akaze.threshold = 0.0015
            #expect(kept.contains("\(id).features-\(ReferenceStore.settingsKey(last))"), "\(kept)")
            #expect(names.contains("\(id).image") && names.contains("\(id).json"))
        }
    }

    /// Temporaries a killed process left, and features written for a reference deleted meanwhile, are removed
    /// at start once they are old enough that no instance is still writing them; fresh ones are left alone.
    @Test func whatAKilledProcessLeftIsRemovedAtStart() async throws {
        let settings = try ServerTests.settings()
        let (_, id, folder) = try await ServerTests.storedReference(settings)
        let old = Date().addingTimeInterval(-ReferenceStore.staleAge - 60)
        let orphanId = String(repeating: "e", count: 62) + String(id.prefix(2))
        let root = URL(fileURLWithPath: try #require(settings.referenceStore)).appendingPathComponent(".write-check-1234")
        #expect(FileManager.default.createFile(atPath: root.path, contents: Data()))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-ReferenceStore.staleAge - 60)], ofItemAtPath: root.path)
        let names = [".tmp-\(id).image-123", ".\(id).json.ab12cd", "\(orphanId).features-0123456789abcdef", ".tmp-fresh"]
        for name in names {
            let path = folder.appendingPathComponent(name).path
            #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
            if name != ".tmp-fresh" { try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path) }
        }
        _ = try ReferenceStore(directory: settings.referenceStore)
        #expect(!FileManager.default.fileExists(atPath: root.path))
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(left.isDisjoint(with: names.dropLast()), "\(left)")
        #expect(left.contains(".tmp-fresh") && left.contains("\(id).image") && left.contains("\(id).json"))

        // Features written just after the reference was deleted (a score racing a delete) are not left behind.
        let store = try ReferenceStore(directory: settings.referenceStore)
        try store.delete(id)
        #expect(try store.putFeatures(id, settingsKey: "0123456789abcdef", Data("features".utf8)) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(id) }.isEmpty)
    }
}
