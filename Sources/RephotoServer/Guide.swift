import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import NIOCore
import RephotoKit

/// The guide in the browser (docs/guide.md): `GET /` and `GET /guide/<file>` serve the page's files, embedded as the
/// target's resources (plain HTML, CSS and JavaScript: no build step, nothing fetched from elsewhere);
/// `GET /v1/references/{id}/qr` the QR code of the page's link to a stored reference.
enum Guide {
    static let types = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"]

    /// The page's files by name, read once.
    static let files: [String: Data] = {
        var files: [String: Data] = [:]
        for name in ["index.html", "guide.js", "guide.css"] { files[name] = ServerResources.data("Guide/\(name)") }
        return files
    }()

    static func response(_ name: String) -> Response {
        guard !files.isEmpty else {
            return RetakeServer.errorResponse(ServerError(.serviceUnavailable, code: "unavailable", kind: .unavailable,
                "the guide's files are not installed with this worker (\(ServerResources.bundleName) beside the executable or in share/rephoto: scripts/install-cli)"))
        }
        guard let data = files[name], let ext = name.split(separator: ".").last, let type = types[String(ext)] else {
            return RetakeServer.errorResponse(ServerError.notFound("no guide file \(name.prefix(80))"))
        }
        // A strict policy: the page loads nothing from elsewhere, and the camera stays with its own origin.
        return Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-cache",
                                               HTTPField.Name("Content-Security-Policy")!: "default-src 'self'; img-src 'self' blob: data:; media-src 'self' blob: mediastream:; connect-src 'self' ws: wss:",
                                               HTTPField.Name("X-Content-Type-Options")!: "nosniff"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The page's link to a stored reference, `<scheme>://<host>/?reference=<id>`, as the client reached this worker: its
    /// Host (or the request's authority), and https with TLS or where a proxy says so (`X-Forwarded-Proto`).
    static func link(to id: String, request: Request, tls: Bool) throws -> String {
        let host = request.headers[HTTPField.Name("Host")!] ?? request.head.authority ?? ""
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")
        guard !host.isEmpty, host.count <= 255, host.allSatisfy(allowed.contains) else {
            throw ServerError.badRequest("the request names no host the guide's link can use (Host: '\(host.prefix(80))')")
        }
        let forwarded = request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased()
        let scheme = forwarded == "https" || forwarded == "http" ? forwarded! : tls ? "https" : "http"
        return "\(scheme)://\(host)/?reference=\(id)"
    }

    /// A stored image's media type from its first bytes (the guide shows the old photo over the camera).
    static func imageType(_ image: Data) -> String {
        let head = [UInt8](image.prefix(12))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if head.count >= 12, head[0...3] == [0x52, 0x49, 0x46, 0x46], head[8...11] == [0x57, 0x45, 0x42, 0x50] { return "image/webp" }
        if head.count >= 12, head[4...7] == [0x66, 0x74, 0x79, 0x70] { return "image/heif" }
        return "application/octet-stream"
    }

    /// The server's TLS configuration from PEM files (`--tls-cert`, `--tls-key`).
    static func tlsConfiguration(_ files: ServerSettings.TLSFiles) throws -> TLSConfiguration {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(files.certificate)
            guard !chain.isEmpty else { throw ServerError.badRequest("--tls-cert \(files.certificate) holds no certificate") }
            let key = try NIOSSLPrivateKey(file: files.key, format: .pem)
            return TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        } catch let error as ServerError {
            throw error
        } catch {
            throw RephotoError.badInput("cannot use --tls-cert \(files.certificate) with --tls-key \(files.key): \(error)")
        }
    }
}
