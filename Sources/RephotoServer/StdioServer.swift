import Foundation
import RephotoKit

/// `rephoto serve --stdio`: for API servers that spawn a process instead of calling HTTP. One JSON request
/// per line on stdin, one JSON response per line on stdout, in order, with the HTTP endpoints' schemas:
/// `{"op": "score" (when left out) | "align" | "addReference" | "hasReference" | "deleteReference", "reference": IMAGE,
/// "referenceId": "...", "retake": IMAGE, "image": IMAGE, "metadata": {...}}` where IMAGE is
/// `{"path": "..."}` or `{"base64": "..."}`. Responses: the endpoint's JSON, `{"status": 200, ...}` fields
/// for the rest, or `{"error": {...}, "status": 4xx}`; align answers `{"image": base64, "contentType": ..., "warnings": [...]}`.
public enum StdioServer {
    public static func run(settings: ServerSettings) async throws {
        try OpenCVRuntime.configure(threads: 1)
        let service = try RetakeService(settings: settings, metrics: ServerMetrics())
        // Lines are read in bounded chunks: a line over the limit is skipped to its end, never held whole.
        let limit = settings.maxBodyBytes * 2
        let input = FileHandle.standardInput
        var line = Data(), overflow = false
        // Foundation's non-throwing reads and writes trap on an error (stdout full, a client gone with SIGPIPE
        // ignored, stdin a directory: a crash with a stack trace); these end the worker with one line.
        func answer(_ text: Data) async throws {
            let response: Data
            if overflow {
                let error = ServerError(.contentTooLarge, code: "too_large", "request line over \(limit) bytes")
                struct Failure: Encodable { var error: ErrorEnvelope.Body; var status: Int }
                response = (try? JSONOutput.encode(Failure(error: error.envelope.error, status: error.status.code))) ?? Data()
            } else {
                let string = String(decoding: text, as: UTF8.self)
                if string.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return }
                response = await service.withRequestDeadline { await handle(string, service: service, maxBytes: settings.maxBodyBytes) }
            }
            do {
                try FileHandle.standardOutput.write(contentsOf: response + Data("\n".utf8))
            } catch {
                service.finish(waitingAtMost: settings.requestTimeout + 30)
                throw RephotoError(.internal, "cannot write a response to standard output (\(fileErrorReason(error))): the client is gone or the output is full")
            }
        }
        while true {
            let chunk: Data
            do {
                chunk = try input.read(upToCount: 1 << 16) ?? Data()
            } catch {
                service.finish(waitingAtMost: settings.requestTimeout + 30)
                throw RephotoError(.internal, "cannot read requests from standard input (\(fileErrorReason(error)))")
            }
            if chunk.isEmpty { break }
            var rest = chunk[...]
            while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
                if !overflow { line.append(contentsOf: rest[..<newline]) }
                overflow = overflow || line.count > limit
                try await answer(line)
                line = Data()
                overflow = false
                rest = rest[rest.index(after: newline)...]
            }
            if !overflow { line.append(contentsOf: rest) }
            if line.count > limit { overflow = true; line = Data() }
        }
        if overflow || !line.isEmpty { try await answer(line) }
        // A request that timed out may still run on the pool; exiting under it would crash inside OpenCV.
        service.finish(waitingAtMost: settings.requestTimeout + 30)
    }

    static func handle(_ line: String, service: RetakeService, maxBytes: Int) async -> Data {
        do {
            let data = Data(line.utf8)
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw ServerError.badRequest("a request line must be one JSON object")
            }
            // JSONSerialization keeps the last of a key given twice: {"path": a, "path": b} scored b.
            if let repeated = repeatedKey(data) {
                throw ServerError.badRequest("key '\(repeated.prefix(40))' given twice in one object")
            }
            // A misspelt key would otherwise be a part silently missing, or a setting silently ignored.
            let keys = ["op", "reference", "referenceId", "retake", "image", "metadata"]
            if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
                throw ServerError.badRequest("unknown key '\(unknown.prefix(40))' (a request line has \(keys.joined(separator: ", ")))")
            }
            for name in ["op", "referenceId"] where object[name] != nil && !(object[name] is String) {
                throw ServerError.badRequest("\(name) must be a string")
            }
            // What each operation reads, as its HTTP endpoint allows its parts: nothing else is read or ignored.
            let op = object["op"] as? String ?? "score"
            let reads: [String: Set<String>] = ["score": RetakeServer.retakeParts, "align": RetakeServer.retakeParts,
                                                "addReference": RetakeServer.referenceParts, "hasReference": ["referenceId"], "deleteReference": ["referenceId"]]
            if let allowed = reads[op] {
                if let extra = object.keys.sorted().first(where: { $0 != "op" && !allowed.contains($0) }) {
                    throw ServerError.badRequest("\(op) does not read '\(extra)' (it reads \(allowed.sorted().joined(separator: ", ")))")
                }
                if allowed == ["referenceId"], object["referenceId"] == nil { throw ServerError.badRequest("\(op) needs referenceId") }
            }
            var parts: [String: Data] = [:]
            for name in ["reference", "retake", "image"] {
                guard let image = object[name] else { continue }
                parts[name] = try imageBytes(image, name: name, maxBytes: maxBytes)
            }
            if let id = object["referenceId"] as? String { parts["referenceId"] = Data(id.utf8) }
            if let metadata = object["metadata"] {
                // JSONSerialization traps (not throws) on a value that is no object: check first.
                guard metadata is [String: Any], JSONSerialization.isValidJSONObject(metadata) else {
                    throw ServerError.badRequest("metadata must be a JSON object")
                }
                parts["metadata"] = try JSONSerialization.data(withJSONObject: metadata)
            }
            let form = MultipartForm(parts: parts)
            switch op {
            case "score":
                return try await service.score(form)
            case "align":
                let (image, type, warnings) = try await service.align(form)
                struct Aligned: Encodable { var image: String; var contentType: String; var warnings: [String] }
                return try JSONOutput.encode(Aligned(image: image.base64EncodedString(), contentType: type, warnings: warnings))
            case "addReference":
                let (id, created) = try await service.addReference(form)
                return try JSONOutput.encode(["id": id, "status": created ? "created" : "known"])
            case "hasReference":
                let id = try RetakeServer.referenceId(object["referenceId"] as? String ?? "")
                guard service.hasReference(id) else { throw ServerError.notFound("no reference with id \(id.prefix(80))") }
                return try JSONOutput.encode(["id": id, "status": "known"])
            case "deleteReference":
                let id = try RetakeServer.referenceId(object["referenceId"] as? String ?? "")
                guard try service.deleteReference(id) else { throw ServerError.notFound("no reference with id \(id.prefix(80))") }
                return try JSONOutput.encode(["id": id, "status": "deleted"])
            case let op:
                throw ServerError.badRequest("unknown op '\(op.prefix(40))' (score, align, addReference, hasReference, deleteReference)")
            }
        } catch {
            let e = ServerError.wrapping(error)
            struct Failure: Encodable { var error: ErrorEnvelope.Body; var status: Int }
            return (try? JSONOutput.encode(Failure(error: e.envelope.error, status: e.status.code))) ?? Data()
        }
    }

    /// The first key given twice in one object of a JSON text, by its raw bytes; nil when none is. One pass that
    /// keeps only the keys, so a line of base64 images costs no second parse.
    static func repeatedKey(_ data: Data) -> String? {
        data.withUnsafeBytes { repeatedKey(in: $0) }
    }

    private static func repeatedKey(in bytes: UnsafeRawBufferPointer) -> String? {
        var containers: [UInt8] = [], keys: [Set<[UInt8]>] = []
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                containers.append(bytes[i])
                keys.append([])
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !containers.isEmpty { containers.removeLast(); keys.removeLast() }
            case UInt8(ascii: "\""):
                let start = i + 1
                i += 1
                while i < bytes.count && bytes[i] != UInt8(ascii: "\"") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
                var j = i + 1
                while j < bytes.count, bytes[j] == 0x20 || bytes[j] == 0x09 || bytes[j] == 0x0A || bytes[j] == 0x0D { j += 1 }
                if j < bytes.count, bytes[j] == UInt8(ascii: ":"), containers.last == UInt8(ascii: "{") {
                    var key = [UInt8](bytes[start..<min(i, bytes.count)])
                    // An escaped spelling ("p\u0061th") is the same key once decoded: decode the rare key with a
                    // backslash (the parser has accepted the line, so the escape is valid).
                    if key.contains(UInt8(ascii: "\\")),
                       let decoded = try? JSONSerialization.jsonObject(with: Data([UInt8(ascii: "[")] + [UInt8(ascii: "\"")] + key + [UInt8(ascii: "\"")] + [UInt8(ascii: "]")])) as? [String],
                       let first = decoded.first {
                        key = Array(first.utf8)
                    }
                    if !keys[keys.count - 1].insert(key).inserted { return String(decoding: key, as: UTF8.self) }
                }
            default:
                break
            }
            i += 1
        }
        return nil
    }

    static func imageBytes(_ value: Any, name: String, maxBytes: Int) throws -> Data {
        guard let spec = value as? [String: Any], spec.count == 1 else { throw ServerError.badRequest("\(name) must be {\"path\": ...} or {\"base64\": ...}") }
        if let path = spec["path"] as? String {
            do {
                return try Image.readFile(path, maxBytes: maxBytes)
            } catch let error as RephotoError {
                throw ServerError(error)
            }
        }
        if let text = spec["base64"] as? String {
            guard let data = Data(base64Encoded: text) else { throw ServerError.badRequest("\(name).base64 is not base64") }
            return data
        }
        throw ServerError.badRequest("\(name) must be {\"path\": ...} or {\"base64\": ...}")
    }
}
