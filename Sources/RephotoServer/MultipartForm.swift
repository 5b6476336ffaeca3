import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// A `multipart/form-data` body as its named parts. Browsers, curl and Rails' clients send the same shape: a
/// boundary in Content-Type, a Content-Disposition name per part.
///
/// Split here rather than by MultipartKit (4.7.1, the version this machine has): its byte-at-a-time parser
/// took about 190 ns a byte on a body of repeated "\r\n--" in a release build, 12 s for a 64 MiB upload,
/// on the request's own thread (a debug build, five times that, froze /healthz for 33 s). The whole
/// body is in memory, so the split is a search: memchr for each line feed, then a comparison that stops at the
/// next one (the delimiter holds no other), which is linear in the body whatever its bytes.
struct MultipartForm: Sendable {
    var parts: [String: Data] = [:]

    /// Bytes of one part's headers; a part's headers are a few lines.
    static let maxHeaderBytes = 16 << 10
    /// Every part any operation reads: another name is a client's mistake, refused rather than ignored.
    static let knownParts: Set = ["reference", "retake", "referenceId", "metadata", "image", "points"]

    /// Parts given directly (the stdio mode).
    init(parts: [String: Data]) { self.parts = parts }

    /// `allowed`: the parts the operation reads; any other, or one without a name, is refused.
    init(contentType: String?, body: ByteBuffer, allowed: Set<String> = knownParts) throws {
        guard let contentType, Self.mediaType(contentType) == "multipart/form-data" else {
            throw ServerError.badRequest("expected a multipart/form-data body, got Content-Type '\((contentType ?? "none").prefix(100))'")
        }
        guard let boundary = Self.boundary(in: contentType), !boundary.isEmpty else {
            throw ServerError.badRequest("multipart/form-data without a boundary parameter")
        }
        guard boundary.utf8.count <= 70 else { throw ServerError.badRequest("multipart boundary of \(boundary.utf8.count) characters: at most 70 (RFC 2046)") }
        parts = try body.withUnsafeReadableBytes { try Self.split($0, boundary: Array(boundary.utf8), allowed: allowed) }
    }

    static func boundary(in contentType: String) -> String? { parameter("boundary", in: contentType) }

    /// The media type of a Content-Type value, lowercased, without its parameters.
    static func mediaType(_ contentType: String) -> String {
        String(contentType.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// A `key=value` or `key="value"` parameter of a header value. A `;` or `=` inside quotes belongs to the
    /// value: `filename="a;name=metadata"` named the part `metadata` when the header was split on every `;`.
    static func parameter(_ key: String, in header: String) -> String? {
        var pieces: [String] = [], piece = "", quoted = false, escaped = false
        for character in header {
            if escaped {
                piece.append(character)
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ";" && !quoted {
                pieces.append(piece)
                piece = ""
            } else {
                piece.append(character)
            }
        }
        pieces.append(piece)
        for piece in pieces.dropFirst() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            guard piece[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == key else { continue }
            return piece[piece.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    // MARK: splitting

    private static let lineFeed = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r"), dash = UInt8(ascii: "-")

    private static func malformed(_ why: String) -> ServerError { .badRequest("malformed multipart body: \(why)") }

    /// The parts between the delimiters ("--boundary" at the start or after a line break; a CR before the line
    /// feed belongs to the delimiter too, and clients that end lines with a bare LF are read alike).
    private static func split(_ bytes: UnsafeRawBufferPointer, boundary: [UInt8], allowed: Set<String>) throws -> [String: Data] {
        let dashBoundary: [UInt8] = [dash, dash] + boundary
        var position: Int
        if matches(dashBoundary, in: bytes, at: 0) {
            position = dashBoundary.count
        } else if let first = delimiter(dashBoundary, in: bytes, from: 0) {
            position = first + 1 + dashBoundary.count  // text before it is a preamble (RFC 2046)
        } else {
            throw malformed("no boundary line '--\(String(decoding: boundary, as: UTF8.self).prefix(70))'")
        }
        // Parts are bounded without a count: each name may come once, and only the operation's names are read.
        var collected: [String: Data] = [:]
        while true {
            // After a delimiter: "--" ends the body (an epilogue after it is ignored); else padding, a line break.
            if position + 1 < bytes.count, bytes[position] == dash, bytes[position + 1] == dash { break }
            while position < bytes.count, bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t") { position += 1 }
            if position < bytes.count, bytes[position] == carriageReturn { position += 1 }
            guard position < bytes.count else { throw malformed("it ends after a boundary, without the closing '--'") }
            guard bytes[position] == lineFeed else { throw malformed("text after a boundary on its line") }
            position += 1

            let (name, bodyStart) = try headers(bytes, from: position)
            // The blank line's own line feed may start the delimiter of an empty part.
            guard let end = delimiter(dashBoundary, in: bytes, from: bodyStart - 1) else {
                throw malformed("it ends inside part '\(name.prefix(64))', before its closing boundary")
            }
            let bodyEnd = max(bodyStart, end > 0 && bytes[end - 1] == carriageReturn ? end - 1 : end)
            // A repeated part kept the first silently, and a misspelt one or one another operation reads was ignored.
            guard collected[name] == nil else { throw ServerError.badRequest("part '\(name.prefix(64))' given twice") }
            guard allowed.contains(name) else {
                throw ServerError.badRequest("unknown part '\(name.prefix(64))' (this operation reads \(allowed.sorted().joined(separator: ", ")))")
            }
            collected[name] = Data(UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<bodyEnd]))
            position = end + 1 + dashBoundary.count
        }
        guard !collected.isEmpty else { throw ServerError.badRequest("the multipart body has no named part") }
        return collected
    }

    /// A part's name (its one Content-Disposition: form-data header) and where its body starts.
    private static func headers(_ bytes: UnsafeRawBufferPointer, from start: Int) throws -> (name: String, bodyStart: Int) {
        var position = start
        var lines: [String] = []
        while true {
            guard let feed = nextLineFeed(bytes, from: position, limit: start + maxHeaderBytes + 1) else {
                if bytes.count > start + maxHeaderBytes { throw ServerError.badRequest("a part's headers exceed \(maxHeaderBytes) bytes") }
                throw malformed("it ends inside a part's headers")
            }
            var lineEnd = feed
            if lineEnd > position, bytes[lineEnd - 1] == carriageReturn { lineEnd -= 1 }
            let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position..<lineEnd]), as: UTF8.self)
            position = feed + 1
            if line.isEmpty { break }
            // A folded line continues the header before it (obsolete, but legal in MIME).
            if let first = line.first, first == " " || first == "\t", !lines.isEmpty {
                lines[lines.count - 1] += " " + line.trimmingCharacters(in: .whitespaces)
            } else {
                lines.append(line)
            }
        }
        var disposition: String?
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw malformed("a part's header line without a colon") }
            guard line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == "content-disposition" else { continue }
            guard disposition == nil else { throw ServerError.badRequest("a part with two Content-Disposition headers") }
            disposition = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard let disposition, mediaType(disposition) == "form-data", let name = parameter("name", in: disposition) else {
            throw ServerError.badRequest("a part without a name (each needs Content-Disposition: form-data; name=\"...\")")
        }
        return (name, position)
    }

    /// The first line feed at or after `from`, before `limit`.
    private static func nextLineFeed(_ bytes: UnsafeRawBufferPointer, from: Int, limit: Int = .max) -> Int? {
        let end = min(limit, bytes.count)
        guard from < end, let base = bytes.baseAddress else { return nil }
        guard let found = memchr(base + from, Int32(lineFeed), end - from) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Where the next "\n--boundary" starts, at or after `from`.
    private static func delimiter(_ dashBoundary: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        var position = max(0, from)
        while let feed = nextLineFeed(bytes, from: position) {
            if matches(dashBoundary, in: bytes, at: feed + 1) { return feed }
            position = feed + 1
        }
        return nil
    }

    private static func matches(_ pattern: [UInt8], in bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard offset + pattern.count <= bytes.count, let base = bytes.baseAddress else { return false }
        return pattern.withUnsafeBytes { memcmp(base + offset, $0.baseAddress!, pattern.count) == 0 }
    }
}
