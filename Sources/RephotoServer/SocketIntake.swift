import Foundation
import Logging
import NIOCore
import RephotoKit
import Synchronization

/// The live sessions' sockets at the level of their bytes, where a message's length is known from the header that
/// announces it, before any of it is held: NIO's WebSocket decoder holds a frame whole (up to --max-body-bytes)
/// before anything above it sees the frame, so a 63 MiB message that never ends was invisible to the session
/// (issue 57: ninety of them held 6 GB). Installed first in every connection's pipeline, it steps aside at the
/// first answer unless that answer is a WebSocket upgrade's 101; from then on it reads each frame's header:
/// - a text message longer than its limit (the opening, the socket's first message: 64 KiB; any later one, a
///   frame's metadata: 16 KiB; counted over its fragments) is refused from the header that passes the limit;
/// - a binary message longer than --max-body-bytes likewise;
/// - a binary message holds an upload slot of its client address (`UploadBudget`, --uploads-per-client) from its
///   first header until the session has taken it whole; past the budget the socket is refused;
/// - a message must arrive at --min-body-rate from its first byte (after the allowance), within --body-timeout,
///   and without a pause of --idle-timeout, as an HTTP body, counting only the time the worker was reading;
/// - the socket is read no further while more than --max-body-bytes of its messages wait for the session.
/// A refusal is one text message `{"error": ...}` and a close frame (1009 message too big, 1013 try again later,
/// 1008 policy violation), written here; then the connection closes and nothing more of it is read.
/// Data a client sends before the upgrade's answer (RFC 6455 4.1 says it must wait) cannot be placed: the
/// connection is closed.
final class SocketIntake: Sendable {
    /// The opening (a socket's first message) and any later text message (a frame's metadata), bytes.
    static let openingLimit = 64 << 10
    static let metadataLimit = 16 << 10

    let settings: ServerSettings
    let uploads: UploadBudget
    let connections: ConnectionLimit
    let metrics: ServerMetrics
    let logger: Logger
    private let sockets = Mutex<[ObjectIdentifier: Socket]>([:])

    init(settings: ServerSettings, uploads: UploadBudget, connections: ConnectionLimit, metrics: ServerMetrics, logger: Logger) {
        self.settings = settings
        self.uploads = uploads
        self.connections = connections
        self.metrics = metrics
        self.logger = logger
    }

    /// The handler for one connection, first in its pipeline.
    func handler() -> Handler { Handler(owner: self) }

    /// The upgraded connection's accounting, for its session to report what it has taken.
    func socket(for channel: any Channel) -> Socket? { sockets.withLock { $0[ObjectIdentifier(channel)] } }

    /// A text message's limit: the socket's first message is the opening.
    static func textLimit(message index: Int) -> Int { index <= 1 ? openingLimit : metadataLimit }

    /// The answer to a text message over its limit.
    static func textTooLarge(length: Int, message index: Int) -> ServerError {
        let limit = textLimit(message: index)
        return ServerError(.contentTooLarge, code: "too_large",
                           "text message of \(length) bytes, over the limit of \(limit) bytes for \(index <= 1 ? "the opening" : "a frame's metadata") (refused unread)")
    }

    /// What one upgraded connection holds, shared by its handler (on the event loop) and its session (which reports
    /// each frame it takes).
    final class Socket: Sendable {
        let channel: any Channel
        let client: String?
        private let owner: SocketIntake
        private struct State {
            /// Payload bytes received and not yet taken by the session.
            var waiting = 0
            /// Binary messages begun and not yet taken whole, and the upload slot they hold.
            var binary = 0
            var slot: Int?
            /// A read was held back (too much waiting); the session taking enough asks for it again.
            var withheld = false
            var finished = false
        }
        private let state = Mutex(State())

        fileprivate init(channel: any Channel, owner: SocketIntake) {
            self.channel = channel
            client = channel.remoteAddress?.ipAddress
            self.owner = owner
        }

        /// A binary message begins: its upload slot, taken with the first, or why there is none.
        fileprivate func beginBinary() -> UploadBudget.Refusal? {
            state.withLock { s -> UploadBudget.Refusal? in
                guard !s.finished else { return .full }
                if s.slot == nil {
                    switch owner.uploads.acquire(client: client) {
                    case .success(let id): s.slot = id
                    case .failure(let refusal): return refusal
                    }
                }
                s.binary += 1
                return nil
            }
        }

        fileprivate func received(_ bytes: Int) { state.withLock { $0.waiting += bytes } }

        /// Whether the socket may be read now; false holds the read back until the session has taken enough.
        fileprivate func admitsRead() -> Bool {
            state.withLock { s in
                guard s.waiting > owner.settings.maxBodyBytes else { return true }
                s.withheld = true
                return false
            }
        }

        var readsWithheld: Bool { state.withLock { $0.withheld } }

        /// The session took a frame of `bytes`, the last of a binary message when `endsBinary`.
        func taken(_ bytes: Int, endsBinary: Bool) {
            let (release, resume) = state.withLock { s -> (Int?, Bool) in
                s.waiting = max(0, s.waiting - bytes)
                var release: Int?
                if endsBinary, s.binary > 0 {
                    s.binary -= 1
                    if s.binary == 0 { release = s.slot; s.slot = nil }
                }
                let resume = s.withheld && s.waiting <= owner.settings.maxBodyBytes
                if resume { s.withheld = false }
                return (release, resume)
            }
            if let release { owner.uploads.release(release, client: client) }
            if resume { channel.read() }
        }

        /// The connection ended: its slot is free.
        fileprivate func finish() {
            let slot = state.withLock { s -> Int? in
                s.finished = true
                defer { s.slot = nil; s.binary = 0 }
                return s.slot
            }
            if let slot { owner.uploads.release(slot, client: client) }
        }
    }

    /// Why a socket is refused.
    enum Refusal {
        case textTooLarge(length: Int, message: Int)
        case binaryTooLarge(length: Int)
        case busy(UploadBudget.Refusal)
        case tooSlow(bytes: Int, seconds: Double, rule: String)

        /// The error sent, the close code and reason, and the metric's label.
        func answer(_ owner: SocketIntake) -> (error: ServerError, code: UInt16, reason: String, label: String) {
            switch self {
            case .textTooLarge(let length, let index):
                return (SocketIntake.textTooLarge(length: length, message: index), 1009, "message too big", "too_large")
            case .binaryTooLarge(let length):
                return (ServerError(.contentTooLarge, code: "too_large",
                                    "binary message of \(length) bytes, over the limit of \(owner.settings.maxBodyBytes) bytes (--max-body-bytes; refused unread)"),
                        1009, "message too big", "too_large")
            case .busy(let refusal):
                var busy = ServerError(.serviceUnavailable, code: "unavailable", kind: .unavailable, owner.uploads.message(refusal))
                busy.retryAfterSeconds = 1
                return (busy, 1013, "try again later", "unavailable")
            case .tooSlow(let bytes, let seconds, let rule):
                return (ServerError(.requestTimeout, code: "too_slow",
                                    String(format: "message arriving too slowly: %d bytes in %.1f s (%@)", bytes, seconds, rule)),
                        1008, "too slow", "too_slow")
            }
        }
    }

    final class Handler: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = IOData
        typealias OutboundOut = IOData

        private enum Phase { case http, webSocket, passThrough, refused }
        private let owner: SocketIntake
        private var phase = Phase.http
        /// Before the first answer: the last bytes read (to find the first head's end across reads), whether it
        /// ended, and the bytes read after it.
        private var recent: [UInt8] = []
        private var headEnded = false
        private var early = 0
        private var socket: Socket?
        // The frame being read: its header's bytes so far, then its payload's bytes still to come.
        private var header: [UInt8] = []
        private var remaining = 0
        private var frameIsData = false
        private var frameFin = false
        // The message being read: its kind (1 text, 2 binary), its length so far, and when it began.
        private var kind: UInt8?
        private var length = 0
        private var arrived = 0
        private var messages = 0
        private var started = NIODeadline.now()
        private var lastByte = NIODeadline.now()
        private var paused = TimeAmount.zero
        private var watch: RepeatedTask?
        /// A read is under way (the worker waits for the client's bytes): only that time counts against the rate.
        private var reading = false

        fileprivate init(owner: SocketIntake) { self.owner = owner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch phase {
            case .passThrough:
                context.fireChannelRead(data)
            case .refused:
                return
            case .http:
                note(unwrapInboundIn(data))
                context.fireChannelRead(data)
            case .webSocket:
                if let refusal = frames(unwrapInboundIn(data), context) {
                    refuse(refusal, context)
                    return
                }
                context.fireChannelRead(data)
            }
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            reading = false
            if phase != .refused { context.fireChannelReadComplete() }
        }

        func read(context: ChannelHandlerContext) {
            if phase == .webSocket, let socket, !socket.admitsRead() { return }
            reading = true
            context.read()
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard phase == .http else { return context.write(data, promise: promise) }
            let upgraded: Bool
            if case .byteBuffer(let buffer) = unwrapOutboundIn(data) {
                upgraded = buffer.readableBytesView.starts(with: Self.switching)
            } else {
                upgraded = false
            }
            guard upgraded else {
                phase = .passThrough
                recent = []
                return context.write(data, promise: promise)
            }
            guard headEnded, early == 0 else {
                // Frames sent before the answer: where the WebSocket begins in them is unknown.
                phase = .refused
                owner.metrics.socketRefused("early")
                owner.logger.notice("session socket refused: data sent before the upgrade's answer",
                                    metadata: ["peer": "\(context.remoteAddress.map { "\($0)" } ?? "?")", "bytes": "\(early)"])
                // The error `FirstRequestGuard.EndedBeforeHead` logs at debug: the notice above says it once.
                promise?.fail(ChannelError.inappropriateOperationForState)
                context.close(promise: nil)
                return
            }
            phase = .webSocket
            recent = []
            let socket = Socket(channel: context.channel, owner: owner)
            self.socket = socket
            owner.sockets.withLock { $0[ObjectIdentifier(context.channel)] = socket }
            context.write(data, promise: promise)
        }

        func channelInactive(context: ChannelHandlerContext) {
            end(context)
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { end(context) }

        private func end(_ context: ChannelHandlerContext) {
            watch?.cancel()
            watch = nil
            if let socket {
                self.socket = nil
                socket.finish()
            }
            if phase == .webSocket || phase == .refused {
                owner.sockets.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
            }
        }

        static let switching = Array("HTTP/1.1 101".utf8)
        static let headEnd: [UInt8] = [13, 10, 13, 10]

        /// Before the first answer: finds the first head's end, and counts what follows it.
        private func note(_ buffer: ByteBuffer) {
            guard !headEnded else {
                early += buffer.readableBytes
                return
            }
            let bytes = buffer.readableBytesView
            var index = bytes.startIndex
            while index < bytes.endIndex {
                recent.append(bytes[index])
                if recent.count > 4 { recent.removeFirst() }
                index += 1
                if recent == Self.headEnd {
                    headEnded = true
                    early = bytes.endIndex - index
                    recent = []
                    return
                }
            }
        }

        /// Reads the frames' headers in `buffer`; the refusal, when one passes a limit.
        private func frames(_ buffer: ByteBuffer, _ context: ChannelHandlerContext) -> Refusal? {
            let bytes = buffer.readableBytesView
            var index = bytes.startIndex
            while index < bytes.endIndex {
                if remaining > 0 {
                    let n = min(remaining, bytes.endIndex - index)
                    index += n
                    remaining -= n
                    if frameIsData {
                        arrived += n
                        lastByte = .now()
                        socket?.received(n)
                    }
                    if remaining == 0 { frameEnded(context) }
                    continue
                }
                header.append(bytes[index])
                index += 1
                guard header.count >= 2 else { continue }
                let code = header[1] & 0x7F
                let extended = code == 126 ? 2 : code == 127 ? 8 : 0
                guard header.count == 2 + extended + (header[1] & 0x80 != 0 ? 4 : 0) else { continue }
                let declared = extended == 0 ? UInt64(code) : header[2..<(2 + extended)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let opcode = header[0] & 0x0F, fin = header[0] & 0x80 != 0
                header.removeAll(keepingCapacity: true)
                if let refusal = frameStarted(opcode: opcode, fin: fin, declared: declared, context) { return refusal }
                if remaining == 0 { frameEnded(context) }
            }
            return nil
        }

        private func frameStarted(opcode: UInt8, fin: Bool, declared: UInt64, _ context: ChannelHandlerContext) -> Refusal? {
            let maxBody = owner.settings.maxBodyBytes
            switch opcode {
            case 1, 2:
                kind = opcode
                messages += 1
                length = 0
                arrived = 0
                started = .now()
                lastByte = started
                paused = .zero
                if opcode == 2, let refusal = socket?.beginBinary() { return .busy(refusal) }
                owner.connections.activity(context.channel, busy: true)
                startWatch(context)
            case 0:
                break
            default:
                // A control frame (at most 125 bytes, which NIO's decoder checks) or a reserved opcode NIO refuses.
                frameIsData = false
                guard declared <= UInt64(maxBody) else { return .binaryTooLarge(length: Int(clamping: declared)) }
                remaining = Int(declared)
                return nil
            }
            frameIsData = true
            frameFin = fin
            guard declared <= UInt64(maxBody) else {
                let length = length.addingReportingOverflow(Int(clamping: declared))
                let total = length.overflow ? Int.max : length.partialValue
                return kind == 1 ? .textTooLarge(length: total, message: messages) : .binaryTooLarge(length: total)
            }
            length += Int(declared)
            if kind == 1, length > SocketIntake.textLimit(message: messages) { return .textTooLarge(length: length, message: messages) }
            if kind != 1, length > maxBody { return .binaryTooLarge(length: length) }
            remaining = Int(declared)
            return nil
        }

        private func frameEnded(_ context: ChannelHandlerContext) {
            guard frameIsData, frameFin else { return }
            kind = nil
            watch?.cancel()
            watch = nil
            owner.connections.activity(context.channel, busy: false)
        }

        /// Checks the message's pace every half second while it arrives.
        private func startWatch(_ context: ChannelHandlerContext) {
            watch?.cancel()
            let settings = owner.settings
            let allowance = min(settings.idleTimeout, ServerSettings.bodyRateAllowance)
            let step = TimeAmount.milliseconds(500)
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            watch = loop.scheduleRepeatedTask(initialDelay: step, delay: step) { task in
                let (handler, context) = bound.value
                guard handler.phase == .webSocket, handler.kind != nil else { return task.cancel() }
                // Time the worker was not reading (the session has not taken what came before) is not the client's.
                if !handler.reading {
                    handler.paused = handler.paused + step
                    handler.lastByte = handler.lastByte + step
                }
                let now = NIODeadline.now()
                let seconds = Double((now - handler.started - handler.paused).nanoseconds) / 1e9
                let rule: String?
                if seconds > settings.bodyTimeout {
                    rule = String(format: "--body-timeout %g s", settings.bodyTimeout)
                } else if seconds > allowance + Double(handler.arrived) / settings.minBodyRate {
                    rule = String(format: "--min-body-rate %g bytes/s from the first byte", settings.minBodyRate)
                } else if Double((now - handler.lastByte).nanoseconds) / 1e9 > settings.idleTimeout {
                    rule = String(format: "--idle-timeout %g s without a byte", settings.idleTimeout)
                } else {
                    rule = nil
                }
                guard let rule else { return }
                task.cancel()
                handler.refuse(.tooSlow(bytes: handler.arrived, seconds: seconds, rule: rule), context)
            }
        }

        /// Tells the client why, closes the socket, and reads nothing more of it.
        private func refuse(_ refusal: Refusal, _ context: ChannelHandlerContext) {
            guard phase == .webSocket else { return }
            phase = .refused
            watch?.cancel()
            watch = nil
            let (error, code, reason, label) = refusal.answer(owner)
            owner.metrics.socketRefused(label)
            owner.logger.notice("session socket refused", metadata: ["code": "\(error.envelope.error.code)", "close": "\(code)",
                                                                       "message": "\(error.envelope.error.message)",
                                                                       "peer": "\(context.remoteAddress.map { "\($0)" } ?? "?")"])
            let json = (try? JSONOutput.encode(error.envelope)) ?? Data()
            var close: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
            close += Array(reason.utf8.prefix(120))
            context.write(wrapOutboundOut(.byteBuffer(Self.frame(opcode: 1, Array(json)))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(Self.frame(opcode: 8, close)))).whenComplete { _ in channel.close(promise: nil) }
            // A client that reads nothing does not hold the connection.
            context.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
            if let socket {
                self.socket = nil
                socket.finish()
            }
        }

        /// A server frame (unmasked): FIN, the opcode, the length, the payload.
        static func frame(opcode: UInt8, _ payload: [UInt8]) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.writeInteger(0x80 | opcode)
            if payload.count < 126 {
                buffer.writeInteger(UInt8(payload.count))
            } else if payload.count < 65536 {
                buffer.writeInteger(UInt8(126))
                buffer.writeInteger(UInt16(payload.count))
            } else {
                buffer.writeInteger(UInt8(127))
                buffer.writeInteger(UInt64(payload.count))
            }
            buffer.writeBytes(payload)
            return buffer
        }
    }
}
