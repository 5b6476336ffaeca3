import Foundation
import NIOCore
import Testing
@testable import RephotoServer

/// The multipart splitter against bodies written out by hand: what each part holds, byte for byte, and the
/// refusals (each names the problem).
@Suite struct MultipartFormTests {
    static func form(_ body: String, contentType: String = "multipart/form-data; boundary=b") throws -> [String: String] {
        try form(Data(body.utf8), contentType: contentType)
    }

    static func form(_ body: Data, contentType: String = "multipart/form-data; boundary=b") throws -> [String: String] {
        try MultipartForm(contentType: contentType, body: ByteBuffer(bytes: body)).parts.mapValues { String(decoding: $0, as: UTF8.self) }
    }

    static func refusal(_ body: String, contentType: String = "multipart/form-data; boundary=b") -> String {
        do {
            _ = try form(body, contentType: contentType)
            return "accepted"
        } catch let error as ServerError {
            return error.envelope.error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func partsAreTheBytesBetweenTheDelimiters() throws {
        // Content that looks like delimiters without being one: "--b" not at a line start, "\n--bx" (no
        // line break after it is refused below, but inside a part a longer word is content), and bare CRs.
        let tricky = "line\r\n-- b\r\n--\r\nx--b\r\r\n"
        let body = "preamble\r\n--b\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"a\": 1}\r\n--b\r\n"
            + "content-disposition: FORM-DATA; filename=\"a;name=metadata;\"; name=\"reference\"\r\nContent-Type: image/png\r\n\r\n\(tricky)\r\n"
            + "--b  \r\nContent-Disposition: form-data;\r\n name=image\r\n\r\n\r\n--b--\r\nepilogue --b\r\n"
        let parts = try Self.form(body)
        #expect(parts == ["metadata": "{\"a\": 1}", "reference": tricky, "image": ""])
        // Bare line feeds, a quoted boundary, and the empty part written with no line break of its own.
        #expect(try Self.form("--b\nContent-Disposition: form-data; name=\"image\"\n\nxyz\n--b\nContent-Disposition: form-data; name=metadata\n\n--b--",
                              contentType: "Multipart/Form-Data; boundary=\"b\"") == ["image": "xyz", "metadata": ""])
        // A body of nothing but delimiter-like runs is content (this shape took MultipartKit 190 ns a byte).
        let runs = String(repeating: "\r\n--", count: 100_000) + String(repeating: "\n--c", count: 1000)
        #expect(try Self.form("--b\r\nContent-Disposition: form-data; name=image\r\n\r\n\(runs)\r\n--b--\r\n") == ["image": runs])
    }

    @Test func malformedBodiesAreRefusedByName() {
        let named = "Content-Disposition: form-data; name=\"image\"\r\n\r\n"
        let cases: [(String, String, String)] = [
            ("--b\r\n\(named)x\r\n--b--", "multipart/form-dataX; boundary=b", "expected a multipart/form-data body, got Content-Type 'multipart/form-dataX; boundary=b'"),
            ("--b\r\n\(named)x\r\n--b--", "multipart/form-data", "multipart/form-data without a boundary parameter"),
            ("\(named)x", "multipart/form-data; boundary=b", "malformed multipart body: no boundary line '--b'"),
            ("--b\r\n\(named)x", "multipart/form-data; boundary=b", "it ends inside part 'image', before its closing boundary"),
            ("--b\r\n\(named)x\r\n--bx\r\n", "multipart/form-data; boundary=b", "malformed multipart body: text after a boundary on its line"),
            ("--b\r\n\(named)x\r\n--b\r\n", "multipart/form-data; boundary=b", "malformed multipart body: it ends inside a part's headers"),
            ("--b\r\n\(named)x\r\n--b", "multipart/form-data; boundary=b", "it ends after a boundary, without the closing '--'"),
            ("--b\r\nContent-Disposition: form-data; name=\"image\"\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b",
             "a part with two Content-Disposition headers"),
            ("--b\r\nContent-Disposition: attachment; name=\"image\"\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b", "a part without a name"),
            ("--b\r\nContent-Disposition: form-data; filename=\"name=image\"\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b", "a part without a name"),
            ("--b\r\nContent-Disposition form-data\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b", "a part's header line without a colon"),
            ("--b\r\n\(named)x\r\n--b\r\n\(named)y\r\n--b--", "multipart/form-data; boundary=b", "part 'image' given twice"),
            ("--b\r\nContent-Disposition: form-data; name=\"imgae\"\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b", "unknown part 'imgae'"),
            ("--b\r\nX: " + String(repeating: "h", count: 20_000) + "\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b", "a part's headers exceed 16384 bytes"),
        ]
        for (body, contentType, message) in cases {
            let refusal = Self.refusal(body, contentType: contentType)
            #expect(refusal.contains(message), "\(message): \(refusal)")
        }
    }
}
