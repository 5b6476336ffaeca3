import Foundation
import MultipartKit
import NIOCore

/// A `multipart/form-data` body as its named parts (MultipartKit's parser). Browsers, curl and Rails'
/// clients send the same shape: a boundary in Content-Type, a Content-Disposition name per part.
struct MultipartForm: Sendable {
    var parts: [String: Data] = [:]

    static let maxParts = 16
    /// Every part any operation reads: another name is a client's mistake, refused rather than ignored.
    static let knownParts: Set = ["reference", "retake", "referenceId", "metadata", "image"]

    /// Parts given directly (the stdio mode).
    init(parts: [String: Data]) { self.parts = parts }

    /// `allowed`: the parts the operation reads; any other, or one without a name, is refused.
    init(contentType: String?, body: ByteBuffer, allowed: Set<String> = knownParts) throws {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else {
            throw ServerError.badRequest("expected a multipart/form-data body, got Content-Type '\(contentType ?? "none")'")
        }
        guard let boundary = Self.boundary(in: contentType), !boundary.isEmpty else {
            throw ServerError.badRequest("multipart/form-data without a boundary parameter")
        }
        guard boundary.utf8.count <= 70 else { throw ServerError.badRequest("multipart boundary of \(boundary.utf8.count) characters: at most 70 (RFC 2046)") }
        let parser = MultipartParser(boundary: boundary)
        var name: String?
        var current = Data()
        var collected: [String: Data] = [:]
        var count = 0
        var failure: ServerError?
        var named = false
        parser.onHeader = { field, value in
            guard field.lowercased() == "content-disposition" else { return }
            name = Self.parameter("name", in: value)
            named = name != nil
        }
        parser.onBody = { buffer in
            current.append(contentsOf: buffer.readableBytesView)
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        }
        parser.onPartComplete = {
            count += 1
            if count > Self.maxParts { failure = .badRequest("more than \(Self.maxParts) parts") }
            // A repeated part kept the first silently, and a misspelt one, one another operation reads or one
            // without a name was ignored (probe).
            if let name {
                if collected[name] != nil {
                    failure = failure ?? .badRequest("part '\(name.prefix(64))' given twice")
                } else if !allowed.contains(name) {
                    failure = failure ?? .badRequest("unknown part '\(name.prefix(64))' (this operation reads \(allowed.sorted().joined(separator: ", ")))")
                } else {
                    collected[name] = current
                }
            } else if !named {
                failure = failure ?? .badRequest("a part without a name (each needs Content-Disposition: form-data; name=\"...\")")
            }
            name = nil
            named = false
            current = Data()
        }
        do {
            try parser.execute(body)
        } catch {
            throw ServerError.badRequest("malformed multipart body (\(error))")
        }
        if let failure { throw failure }
        // A part begun but never closed: the body ended before its boundary (it was reported as a missing part).
        if named || !current.isEmpty {
            throw ServerError.badRequest("malformed multipart body: it ends inside part '\((name ?? "").prefix(64))', before its closing boundary")
        }
        guard !collected.isEmpty else { throw ServerError.badRequest("the multipart body has no named part") }
        parts = collected
    }

    static func boundary(in contentType: String) -> String? { parameter("boundary", in: contentType) }

    /// A `key=value` or `key="value"` parameter of a header value.
    static func parameter(_ key: String, in header: String) -> String? {
        for piece in header.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == key else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return nil
    }
}
