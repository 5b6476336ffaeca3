import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket

/// The WebSocket subprotocols of `GET /v1/sessions`. A browser's `WebSocket` cannot send `Authorization`, so a page
/// offers the bearer token as a second subprotocol, `rephoto.bearer.<the token's UTF-8 bytes in lower-case hex>`
/// (hex: a subprotocol must be an RFC 9110 token, and a bearer token may hold `/`, `:` or `=`), beside `rephoto.v1`,
/// the one the worker selects. The token travels in the upgrade's headers as `Authorization` would, never in a URL.
enum SocketSubprotocol {
    static let name = "rephoto.v1"
    static let bearerPrefix = "rephoto.bearer."

    /// The offered subprotocols, in the client's order.
    static func offered(_ headers: HTTPFields) -> [Substring] {
        headers[values: .secWebSocketProtocol].flatMap { $0.split(separator: ",") }
            .map { Substring($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The token a browser offered as a subprotocol; nil when none or when it is not even-length lower-case hex.
    static func bearerToken(_ headers: HTTPFields) -> String? {
        guard let offer = offered(headers).first(where: { $0.hasPrefix(bearerPrefix) }) else { return nil }
        let hex = Array(offer.dropFirst(bearerPrefix.count).utf8)
        guard !hex.isEmpty, hex.count % 2 == 0, hex.count <= 8192 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        for i in stride(from: 0, to: hex.count, by: 2) {
            guard let high = nibble(hex[i]), let low = nibble(hex[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The upgrade's answer: `rephoto.v1` selected when offered (a browser that offered subprotocols fails the
    /// connection unless one is selected), nothing otherwise. The bearer offer is never echoed.
    static func upgrade(_ request: Request) -> RouterShouldUpgrade {
        offered(request.headers).contains(name[...]) ? .upgrade([.secWebSocketProtocol: name]) : .upgrade([:])
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
