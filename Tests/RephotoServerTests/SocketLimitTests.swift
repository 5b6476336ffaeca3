import Foundation
import Glibc
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RephotoKit
import RephotoTestSupport
import Synchronization
import Testing
@testable import RephotoServer

/// A WebSocket client on a plain TCP socket, for what a well-behaved client never sends: the header of a long
/// message and a little of it, then nothing. Reads time out after `timeout` seconds (nil then).
final class RawWebSocket {
    let socket: Int32

    init(port: Int, from source: String = "127.0.0.1", timeout: Int = 10) {
        socket = loopbackConnection(port, from: source, timeout: timeout) ?? -1
    }

    deinit { close(socket) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    private var buffered: [UInt8] = []

    /// At least `count` bytes read (nil when the connection ends or the read times out first).
    private func read(_ count: Int) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while buffered.count < count {
            let n = recv(socket, &chunk, chunk.count, 0)
            guard n > 0 else { return nil }
            buffered += chunk.prefix(n)
        }
        defer { buffered.removeFirst(count) }
        return Array(buffered.prefix(count))
    }

    /// Sends the upgrade request and reads the answer: its status, head and body (`Content-Length` bytes).
    /// `send`: false reads the answer to a request sent already.
    func upgrade(path: String = "/v1/sessions", token: String? = nil, protocols: [String] = [], send sending: Bool = true)
        -> (status: Int, head: String, body: String) {
        var request = "GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        if !protocols.isEmpty { request += "Sec-WebSocket-Protocol: \(protocols.joined(separator: ", "))\r\n" }
        if sending { send(Array((request + "\r\n").utf8)) }
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
            guard let byte = read(1) else { break }
            head += byte
        }
        let text = String(decoding: head, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let length = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
        let body = status == 101 || length == 0 ? [] : read(length) ?? []
        return (status, text, String(decoding: body, as: UTF8.self))
    }

    /// A client frame's header (masked, with a zero key, so the payload goes as is).
    static func header(opcode: UInt8, length: Int, fin: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if length < 126 {
            bytes.append(0x80 | UInt8(length))
        } else if length < 65536 {
            bytes += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(0x80 | 127)
            bytes += (0..<8).reversed().map { UInt8((length >> ($0 * 8)) & 0xFF) }
        }
        return bytes + [0, 0, 0, 0]
    }

    func sendText(_ text: String) { send(Self.header(opcode: 1, length: text.utf8.count) + Array(text.utf8)) }
    func sendBinary(_ data: Data) { send(Self.header(opcode: 2, length: data.count) + Array(data)) }

    /// The server's next frame: its opcode and payload (nil on a timeout or the connection's end).
    func frame() -> (opcode: UInt8, payload: [UInt8])? {
        guard let start = read(2) else { return nil }
        var length = Int(start[1] & 0x7F)
        if length == 126 {
            guard let extended = read(2) else { return nil }
            length = Int(extended[0]) << 8 | Int(extended[1])
        } else if length == 127 {
            guard let extended = read(8) else { return nil }
            length = extended.reduce(0) { $0 << 8 | Int($1) }
        }
        guard let payload = length == 0 ? [] : read(length) else { return nil }
        return (start[0] & 0x0F, payload)
    }

    /// The next text message's JSON object (empty when the next frame is something else).
    func json() -> [String: Any] {
        guard let frame = frame(), frame.opcode == 1 else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(frame.payload))) as? [String: Any] ?? [:]
    }

    /// The next frame's close code (nil when it is no close frame).
    func closeCode() -> Int? {
        guard let frame = frame(), frame.opcode == 8, frame.payload.count >= 2 else { return nil }
        return Int(frame.payload[0]) << 8 | Int(frame.payload[1])
    }

    /// Whether the server ends the connection within the read timeout (anything it sends first is skipped).
    func ends() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(socket, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }
}

/// The log lines a test's worker writes.
final class CapturedLog: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(owner: self) }
    }

    struct Handler: LogHandler {
        let owner: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).merging(metadata) { a, _ in a }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            owner.lines.withLock { $0.append("\(event.message) \(fields.joined(separator: " "))") }
        }
    }
}

/// What one client of the live sessions may hold (issue 57, "One client can take the worker down"): a text message
/// is refused by its length before it is read; a binary message holds an upload slot while it arrives; a client
/// address holds at most --sessions-per-client sessions; the upgrade without the token is answered as every request.
@Suite(.serialized) struct SocketLimitTests {
    static func error(_ object: [String: Any]) -> (code: String, message: String) {
        let error = object["error"] as? [String: Any] ?? [:]
        return (error["code"] as? String ?? "", error["message"] as? String ?? "")
    }

    /// An upload over HTTP from 127.0.0.1 (an empty form, 400 once admitted): the head of the answer.
    static func upload(_ port: Int) -> String {
        let socket = RawWebSocket(port: port)
        let body = "--b--\r\n"
        socket.send(Array("POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
        let answer = socket.upgrade(send: false)
        return answer.head + answer.body
    }

    /// One text message of 60 MB was read whole and parsed (1.9 GB): the opening may have 64 KiB, a frame's metadata
    /// 16 KiB, counted over a message's fragments, and past it the socket is told so and closed (1009) from the
    /// header that announces the length, before the rest arrives.
    @Test func aLongTextMessageIsRefusedByItsLength() async throws {
        try await ServerTests.app(try ServerTests.settings()).test(.live) { client in
            let port = try #require(client.port)
            let opening = RawWebSocket(port: port)
            #expect(opening.upgrade().status == 101)
            opening.send(RawWebSocket.header(opcode: 1, length: 100_000) + Array(#"{"reference"#.utf8))
            let refused = Self.error(opening.json())
            #expect(refused.code == "too_large" && refused.message.contains("100000 bytes") && refused.message.contains("65536"), "\(refused)")
            #expect(opening.closeCode() == 1009)
            #expect(opening.ends())

            // Open, then metadata in two fragments of 10,000 bytes: refused at the second's header.
            let open = RawWebSocket(port: port)
            #expect(open.upgrade().status == 101)
            open.sendText(#"{"reference": "upload", "metadata": \#(SessionRouteTests.cameras)}"#)
            open.sendBinary(try SessionRouteTests.file("reference.jpg"))
            #expect(open.json()["opened"] != nil)
            open.send(RawWebSocket.header(opcode: 1, length: 10_000, fin: false) + [UInt8](repeating: 0x20, count: 10_000))
            open.send(RawWebSocket.header(opcode: 0, length: 10_000) + Array("{}".utf8))
            let metadata = Self.error(open.json())
            #expect(metadata.code == "too_large" && metadata.message.contains("20000 bytes") && metadata.message.contains("16384"), "\(metadata)")
            #expect(open.closeCode() == 1009)
        }
    }

    /// The session's own reading, frame by frame (behind the intake, which refuses the same from the headers): a text
    /// message is refused by its length as its fragments arrive, 64 KiB for the opening and 16 KiB after, a binary one
    /// past --max-body-bytes; fragments join, and a message begun inside another is a protocol error.
    @Test func framesJoinIntoMessagesWithinTheirLimits() {
        func bytes(_ n: Int) -> ByteBuffer { ByteBuffer(repeating: 0x20, count: n) }
        func refusal(_ step: (result: LiveSessionSocket.Messages.Result, endsBinary: Bool)) -> (String, WebSocketErrorCode)? {
            guard case .refused(let error, let code) = step.result else { return nil }
            return (error.envelope.error.message, code)
        }
        var messages = LiveSessionSocket.Messages(maxBinary: 100_000)
        // The opening may have 64 KiB, in two fragments.
        guard case .partial = messages.add(.text, bytes(40_000), fin: false).result else { Issue.record("a first fragment"); return }
        guard case .message(.text(let opening)) = messages.add(.continuation, bytes(20_000), fin: true).result else { Issue.record("the opening"); return }
        #expect(opening.utf8.count == 60_000)
        let binary = messages.add(.binary, bytes(100_000), fin: true)
        guard case .message(.binary(let frame)) = binary.result else { Issue.record("a frame"); return }
        #expect(frame.readableBytes == 100_000 && binary.endsBinary)
        // A frame's metadata: 16 KiB, counted over its fragments.
        #expect(refusal(messages.add(.text, bytes(10_000), fin: false)) == nil)
        let metadata = refusal(messages.add(.continuation, bytes(10_000), fin: true))
        #expect(metadata?.0.contains("text message of 20000 bytes, over the limit of 16384 bytes for a frame's metadata") == true && metadata?.1 == .messageTooLarge,
                "\(String(describing: metadata))")
        var other = LiveSessionSocket.Messages(maxBinary: 100_000)
        #expect(refusal(other.add(.binary, bytes(60_000), fin: false)) == nil)
        #expect(refusal(other.add(.continuation, bytes(60_000), fin: true))?.1 == .messageTooLarge)
        var broken = LiveSessionSocket.Messages(maxBinary: 100_000)
        #expect(refusal(broken.add(.continuation, bytes(10), fin: true))?.1 == .protocolError)
        #expect(refusal(broken.add(.text, bytes(10), fin: false)) == nil)
        #expect(refusal(broken.add(.binary, bytes(10), fin: true))?.1 == .protocolError)
        // The default share of sessions per client address: half of --max-sessions, rounded up.
        var settings = ServerSettings()
        #expect(settings.sessionsPerClientLimit == 8)
        settings.maxSessions = 3
        #expect(settings.sessionsPerClientLimit == 2)
        settings.sessionsPerClient = 5
        #expect(settings.sessionsPerClientLimit == 5)
    }

    /// Ninety sockets each sending 63 MiB of a 64 MiB message held 6 GB: a binary message holds an upload slot of
    /// its client address from its first byte until the worker has taken it whole, as an HTTP upload does, and past
    /// the budget the socket is told so (503-like `unavailable`) and closed (1013, try again later).
    @Test func aBinaryMessageHoldsAnUploadSlot() async throws {
        let settings = try ServerTests.settings { $0.concurrency = 1; $0.queueLength = 1; $0.uploadsPerClient = 1 }
        try await ServerTests.app(settings).test(.live) { client in
            let port = try #require(client.port)
            let holder = RawWebSocket(port: port)
            #expect(holder.upgrade().status == 101)
            holder.send(RawWebSocket.header(opcode: 2, length: 1 << 20) + [UInt8](repeating: 1, count: 1000))
            try await Task.sleep(for: .milliseconds(300))
            let refused = Self.upload(port)
            #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("--uploads-per-client"), "\(refused)")
            let second = RawWebSocket(port: port)
            #expect(second.upgrade().status == 101)
            second.send(RawWebSocket.header(opcode: 2, length: 1000))
            let busy = Self.error(second.json())
            #expect(busy.code == "unavailable" && busy.message.contains("--uploads-per-client"), "\(busy)")
            #expect(second.closeCode() == 1013)
            // The message whole (and refused: no session is open), the slot is free again.
            holder.send([UInt8](repeating: 1, count: (1 << 20) - 1000))
            #expect(Self.error(holder.json()).message.contains("open the session first"))
            try await Task.sleep(for: .milliseconds(300))
            let admitted = Self.upload(port)
            #expect(admitted.hasPrefix("HTTP/1.1 400"), "\(admitted)")
        }
    }

    /// A message must keep --min-body-rate from its first byte, as an HTTP body: a stalled one is cut (`too_slow`,
    /// 1008) and its slot freed, not held until the session's idle timeout.
    @Test func aStalledMessageIsCutByTheRateRule() async throws {
        let settings = try ServerTests.settings { $0.idleTimeout = 2; $0.minBodyRate = Double(1 << 20) }
        try await ServerTests.app(settings).test(.live) { client in
            let port = try #require(client.port)
            let socket = RawWebSocket(port: port)
            #expect(socket.upgrade().status == 101)
            let start = ContinuousClock.now
            socket.send(RawWebSocket.header(opcode: 2, length: 4 << 20) + [UInt8](repeating: 1, count: 100))
            let slow = Self.error(socket.json())
            #expect(slow.code == "too_slow" && slow.message.contains("--min-body-rate"), "\(slow)")
            #expect(socket.closeCode() == 1008)
            #expect(ContinuousClock.now - start < .seconds(6), "\(ContinuousClock.now - start)")
        }
    }

    /// Fourteen `POST /v1/sessions` from one address took every session: one address holds at most
    /// --sessions-per-client (default half of --max-sessions, rounded up), then 429 `too_many_sessions`, over HTTP
    /// and on a socket's opening alike.
    @Test func sessionsPerClientAreCapped() async throws {
        try await ServerTests.app(try ServerTests.settings { $0.maxSessions = 3 }).test(.live) { client in
            let port = try #require(client.port)
            let reference = Upload().adding("reference", try SessionRouteTests.file("reference.jpg"))
            var ids: [String] = []
            for _ in 0..<2 {
                let id = try await client.execute(uri: "/v1/sessions", method: .post, headers: reference.headers, body: reference.body) { response in
                    #expect(response.status == .created)
                    return ServerTests.json(response)["id"] as? String ?? ""
                }
                ids.append(id)
            }
            try await client.execute(uri: "/v1/sessions", method: .post, headers: reference.headers, body: reference.body) { response in
                #expect(response.status == .tooManyRequests && ServerTests.errorCode(response) == "too_many_sessions", "\(response.status)")
                #expect(String(buffer: response.body).contains("--sessions-per-client 2"), "\(String(buffer: response.body))")
            }
            let socket = RawWebSocket(port: port)
            #expect(socket.upgrade().status == 101)
            socket.sendText(#"{"reference": "upload"}"#)
            socket.sendBinary(try SessionRouteTests.file("reference.jpg"))
            let refused = Self.error(socket.json())
            #expect(refused.code == "too_many_sessions" && refused.message.contains("--sessions-per-client 2"), "\(refused)")
            #expect(socket.closeCode() == 1008)
            // One closed, the client may open one again.
            try await client.execute(uri: "/v1/sessions/\(ids[0])", method: .delete) { #expect($0.status == .noContent) }
            let again = RawWebSocket(port: port)
            #expect(again.upgrade().status == 101)
            again.sendText(#"{"reference": "upload"}"#)
            again.sendBinary(try SessionRouteTests.file("reference.jpg"))
            #expect(again.json()["opened"] != nil)
        }
    }

    /// The upgrade without the token (or with a wrong one) got 400, an empty body and no log line: it is answered
    /// 401 `unauthorized` in JSON, as every /v1 request, and logged.
    @Test func anUpgradeWithoutTheTokenIsAnsweredAsEveryRequest() async throws {
        let log = CapturedLog()
        let settings = try ServerTests.settings { $0.token = "correct-horse-battery-staple" }
        try await RetakeServer.makeApplication(settings: settings, logger: log.logger).test(.live) { client in
            let port = try #require(client.port)
            for token in [nil, "wrong-horse-battery-staple"] {
                let socket = RawWebSocket(port: port)
                let answer = socket.upgrade(token: token)
                #expect(answer.status == 401, "\(answer.head)")
                #expect(answer.head.lowercased().contains("content-type: application/json") && answer.head.lowercased().contains("www-authenticate: bearer"),
                        "\(answer.head)")
                let body = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] ?? [:]
                #expect(Self.error(body).code == "unauthorized", "\(answer.body)")
            }
            #expect(RawWebSocket(port: port).upgrade(token: "correct-horse-battery-staple").status == 101)
        }
        let refusals = log.all.filter { $0.contains("upgrade=websocket") && $0.contains("status=401") }
        #expect(refusals.count == 2, "\(log.all)")
    }

    /// A browser's WebSocket cannot send Authorization: the token offered as the subprotocol `rephoto.bearer.<hex>`
    /// opens the session, and the worker selects `rephoto.v1` (never echoing the token); a wrong or malformed one is 401.
    @Test func aBrowserOffersTheTokenAsASubprotocol() async throws {
        let token = "guide/token:correct=horse"
        let hex: @Sendable (String) -> String = { text in text.utf8.map { String(format: "%02x", $0) }.joined() }
        let settings = try ServerTests.settings { $0.token = token }
        try await RetakeServer.makeApplication(settings: settings, logger: CapturedLog().logger).test(.live) { client in
            let port = try #require(client.port)
            let socket = RawWebSocket(port: port)
            let opened = socket.upgrade(protocols: ["rephoto.v1", "rephoto.bearer." + hex(token)])
            #expect(opened.status == 101, "\(opened.head)")
            let selected = opened.head.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("sec-websocket-protocol:") }
            #expect(selected == ["sec-websocket-protocol: rephoto.v1"] || selected == ["Sec-WebSocket-Protocol: rephoto.v1"], "\(opened.head)")
            socket.sendText(#"{"reference": "upload"}"#)
            socket.sendBinary(try SessionRouteTests.file("reference.jpg"))
            #expect(socket.json()["opened"] != nil)
            for offer in ["rephoto.bearer." + hex("guide/token:wrong=horse"), "rephoto.bearer." + hex(token).uppercased(),
                          "rephoto.bearer." + hex(token).dropLast(), "rephoto.bearer."] {
                #expect(RawWebSocket(port: port).upgrade(protocols: ["rephoto.v1", offer]).status == 401, "\(offer)")
            }
            // A client that sends Authorization and offers no subprotocol is answered without one.
            let plain = RawWebSocket(port: port).upgrade(token: token)
            #expect(plain.status == 101 && !plain.head.lowercased().contains("sec-websocket-protocol"), "\(plain.head)")
        }
    }

    /// A client must wait for the upgrade's answer before it sends a frame (RFC 6455 4.1): frames sent with the request
    /// cannot be placed in the stream the intake reads, so the connection is closed instead of upgraded.
    @Test func framesSentBeforeTheUpgradesAnswerCloseTheConnection() async throws {
        let log = CapturedLog()
        try await RetakeServer.makeApplication(settings: try ServerTests.settings(), logger: log.logger).test(.live) { client in
            let port = try #require(client.port)
            let socket = RawWebSocket(port: port)
            let request = "GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            socket.send(Array(request.utf8) + RawWebSocket.header(opcode: 1, length: 2) + Array("{}".utf8))
            #expect(socket.upgrade(send: false).status != 101)
            #expect(RawWebSocket(port: port).upgrade().status == 101)
        }
        #expect(log.all.contains { $0.contains("data sent before the upgrade's answer") }, "\(log.all)")
        #expect(!log.all.contains { $0.contains("Error handling upgrade result") }, "\(log.all)")
    }

    /// A socket without a session is no longer spared at --max-connections: ninety of them from one address had been.
    /// Once quiet for the eviction grace it is closed for a new connection, as an idle HTTP connection is.
    @Test func aSocketWithoutASessionIsEvictedAtTheConnectionLimit() async throws {
        try await ServerTests.app(try ServerTests.settings { $0.maxConnections = 4 }).test(.live) { client in
            let port = try #require(client.port)
            let socket = RawWebSocket(port: port, timeout: 8)
            #expect(socket.upgrade().status == 101)
            try await Task.sleep(for: .milliseconds(1_200))
            let idle = (0..<6).map { _ in SessionSocketTests.rawConnection(port) }
            defer { for connection in idle { close(connection) } }
            #expect(socket.ends())
        }
    }
}
