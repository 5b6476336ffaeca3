import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import RephotoKit
import RephotoShim
import RephotoShimTools
import RephotoTestSupport
import Testing
@testable import RephotoServer

/// The guide's routes (docs/guide.md): the page and its files, the stored references listed and their images,
/// and the QR code of a reference's link, decoded back with OpenCV's QRCodeDetector.
@Suite struct GuideRouteTests {
    /// The text of the QR code in a PNG, read by OpenCV's detector.
    static func decodeQR(_ png: Data) throws -> String {
        let image = try Image(data: png)
        var text = [CChar](repeating: 0, count: 4096)
        let capacity = text.count
        try text.withUnsafeMutableBufferPointer { buffer in
            try shimCall { rp_qr_decode(image.handle, buffer.baseAddress, capacity, $0) }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func qrCodesMadeByOpenCVDecodeBackToTheirText() throws {
        for text in ["https://rephoto.example/?reference=\(String(repeating: "ab", count: 32))", "http://192.168.1.20:8443/?reference=0"] {
            let decoded = try Self.decodeQR(try QRCode.png(text))
            #expect(decoded == text)
        }
        #expect(throws: (any Error).self) { try QRCode.png("") }
    }

    @Test func thePageItsFilesTheReferencesAndTheirQRCodes() async throws {
        let settings = try ServerTests.settings()
        let reference = try Upload.image("graf1.png")
        let add = Upload().adding("image", reference).adding("metadata", json: #"{"reference": {"intrinsics": "unknown"}}"#)
        try await ServerTests.app(settings).test(.router) { http in
            try await http.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                let page = String(buffer: response.body)
                #expect(page.contains("/guide/guide.js") && page.contains("data-answered"))
                #expect(!page.contains("http://") && !page.contains("https://"), "the page loads nothing from elsewhere")
            }
            for (file, type) in [("guide.js", "text/javascript"), ("guide.css", "text/css")] {
                try await http.execute(uri: "/guide/\(file)", method: .get) { response in
                    #expect(response.status == .ok && response.headers[.contentType]?.hasPrefix(type) == true, "\(file)")
                    #expect(response.body.readableBytes > 1000)
                }
            }
            try await http.execute(uri: "/guide/nothing.js", method: .get) { #expect($0.status == .notFound) }
            try await http.execute(uri: "/v1/references", method: .get) { response in
                #expect(response.status == .ok)
                #expect((ServerTests.json(response)["references"] as? [Any])?.isEmpty == true)
            }
            let id = try #require(try await http.execute(uri: "/v1/references", method: .post, headers: add.headers, body: add.body) {
                ServerTests.json($0)["id"] as? String
            })
            try await http.execute(uri: "/v1/references", method: .get) { response in
                let listed = ServerTests.json(response)["references"] as? [[String: Any]] ?? []
                #expect(listed.count == 1 && listed.first?["id"] as? String == id && listed.first?["intrinsics"] as? String == "unknown", "\(listed)")
            }
            try await http.execute(uri: "/v1/references/\(id)/image", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/png")
                #expect(Data(buffer: response.body) == reference)
            }
            try await http.execute(uri: "/v1/references/\(id)/qr", method: .get, headers: [HTTPField.Name("Host")!: "phone.example:8443"]) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/png")
                let decoded = try Self.decodeQR(Data(buffer: response.body))
                #expect(decoded == "http://phone.example:8443/?reference=\(id)")
            }
            try await http.execute(uri: "/v1/references/\(id)/qr", method: .get,
                                   headers: [HTTPField.Name("Host")!: "rephoto.example", HTTPField.Name("X-Forwarded-Proto")!: "https"]) { response in
                let decoded = try Self.decodeQR(Data(buffer: response.body))
                #expect(decoded == "https://rephoto.example/?reference=\(id)")
            }
            try await http.execute(uri: "/v1/references/\(id)/qr", method: .get, headers: [HTTPField.Name("Host")!: "bad host/<script>"]) {
                #expect($0.status == .badRequest)
            }
            let unknown = String(repeating: "0", count: 64)
            try await http.execute(uri: "/v1/references/\(unknown)/qr", method: .get, headers: [HTTPField.Name("Host")!: "a"]) { #expect($0.status == .notFound) }
            try await http.execute(uri: "/v1/references/\(unknown)/image", method: .get) { #expect($0.status == .notFound) }
        }
    }

    /// The worker's own files are found beside its executable, else in ../share/rephoto (install-cli), else in its
    /// source folder; nowhere, nil (the guide then answers 503, openapi.yaml a stub), never a stopped process.
    @Test func theWorkersFilesAreFoundWhereTheyAreInstalled() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("rephoto-resources-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let bin = root.appendingPathComponent("bin"), executable = bin.appendingPathComponent("rephoto")
        let nowhere = root.appendingPathComponent("src")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try Data().write(to: executable)
        #expect(ServerResources.locate(executable: executable, source: nowhere) == nil)
        func bundle(at folder: URL, _ text: String) throws -> URL {
            let place = folder.appendingPathComponent(ServerResources.bundleName)
            try FileManager.default.createDirectory(at: place.appendingPathComponent("Guide"), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: place.appendingPathComponent("openapi.yaml"))
            return place
        }
        let shared = try bundle(at: root.appendingPathComponent("share/rephoto"), "shared")
        #expect(ServerResources.locate(executable: executable, source: nowhere)?.standardizedFileURL.path == shared.standardizedFileURL.path)
        let beside = try bundle(at: bin, "beside")
        let found = ServerResources.locate(executable: executable, source: nowhere)
        #expect(found?.standardizedFileURL.path == beside.standardizedFileURL.path)
        #expect(ServerResources.data("openapi.yaml", in: found).map { String(decoding: $0, as: UTF8.self) } == "beside")
        // This build's own files: the page and the API document are there.
        #expect(ServerResources.directory != nil && Guide.files.count == 3 && RetakeServer.openAPI.hasPrefix("openapi: 3.1"))
    }
}
