import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RephotoKit
import Synchronization

/// A guidance session over a WebSocket (`GET /v1/sessions` with an upgrade), for the app that guides a person live.
/// The protocol (docs/server.md, "Guidance sessions"):
/// - the first message is text, `{"referenceId": "<id>", "metadata": {...}}`, or `{"reference": "upload", "metadata":
///   {...}}` followed by one binary message with the reference photo; `metadata` as `POST /v1/sessions`'s. The answer is
///   `{"opened": {"idleTimeoutSeconds": s}}`;
/// - then each frame is one binary message (JPEG, HEIC, ...), optionally preceded by a text message with its metadata
///   (`{"attitude": ..., "timestamp": s}`); each computed frame is answered with one text message, the document of
///   `POST /v1/sessions/{id}/frames`; metadata that cannot be read is answered with an error and its frame dropped;
/// - frames that arrive while one is computed are dropped, not queued: the newest waits, and its answer's
///   `session.skippedFrames` counts the others;
/// - a failure is answered `{"error": {...}}`; one that ends the session (a bad opening, the idle timeout, shutdown)
///   then closes the socket.
/// Messages are read frame by frame, each text message refused by its length as its frames arrive, before anything
/// reads it (`SocketIntake` refuses it earlier still, from the header announcing the length, and bounds what a
/// socket's messages hold while they arrive).
struct LiveSessionSocket: Sendable {
    let service: RetakeService
    let settings: ServerSettings
    let shutdown: ShutdownWatcher
    /// The sockets open now, each with what tells its client it ends (on shutdown, before the server stops).
    let open: Registry
    /// A socket's connection is spared at --max-connections once its session is open.
    let connections: ConnectionLimit

    final class Registry: Sendable {
        private let closers = Mutex<[UUID: @Sendable () async -> Void]>([:])

        func add(_ id: UUID, _ closer: @escaping @Sendable () async -> Void) { closers.withLock { $0[id] = closer } }
        func remove(_ id: UUID) { _ = closers.withLock { $0.removeValue(forKey: id) } }

        /// Tells every open socket's client and closes it, waiting at most two seconds for them.
        func closeAll() async {
            let all = closers.withLock { Array($0.values) }
            guard !all.isEmpty else { return }
            await withTaskGroup(of: Bool.self) { group in
                for closer in all { group.addTask { await closer(); return true } }
                group.addTask { try? await Task.sleep(for: .seconds(2)); return false }
                var left = all.count
                while left > 0, let closed = await group.next(), closed { left -= 1 }
                group.cancelAll()
            }
        }
    }

    /// The upgrade request's context: Hummingbird's, plus the connection, which a session holds open.
    struct UpgradeContext: RequestContext, WebSocketRequestContext {
        var coreContext: CoreRequestContextStorage
        let webSocket = WebSocketHandlerReference<Self>()
        let channel: any Channel

        init(source: ApplicationRequestContextSource) {
            coreContext = .init(source: source)
            channel = source.channel
        }
    }

    /// One frame received: its metadata (from the text message before it, if any) and its bytes.
    struct Received: Sendable {
        var metadata: FrameMetadata
        var bytes: Data
    }

    /// What the socket's tasks share.
    final class State: Sendable {
        /// The session's id once opened; why the socket is closing, once it is.
        let opened = Mutex<String?>(nil)
        let closing = Mutex<String?>(nil)
        let lastHeard = Mutex(ContinuousClock.now)
        /// Frames the newest-wins buffer dropped since the last answer.
        let skipped = Atomic<Int>(0)
        /// The client was told the worker is shutting down.
        let toldShutdown = Atomic<Bool>(false)
        var id: String? { opened.withLock { $0 } }
    }

    /// `channel`: the socket's connection; `intake`: its accounting, told of each frame the session takes.
    func run(_ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter, channel: any Channel, intake: SocketIntake.Socket?,
             logger: Logger) async throws {
        let state = State()
        let (frames, pending) = AsyncStream<Received>.makeStream(bufferingPolicy: .bufferingNewest(1))
        defer { if let id = state.id { _ = service.sessions.remove(id) } }

        @Sendable func send(_ data: Data) async { try? await outbound.write(.text(String(decoding: data, as: UTF8.self))) }
        @Sendable func fail(_ error: Error) async {
            let failure = ServerError.wrapping(error)
            await send((try? JSONOutput.encode(failure.envelope)) ?? Data())
        }
        /// Closes the socket once, with the first reason given.
        @Sendable func end(_ reason: String, code: WebSocketErrorCode) async {
            let first = state.closing.withLock { closing -> Bool in
                defer { closing = closing ?? reason }
                return closing == nil
            }
            pending.finish()
            if first { try? await outbound.close(code, reason: String(reason.prefix(120))) }
        }

        @Sendable func shuttingDown() async {
            guard !state.toldShutdown.exchange(true, ordering: .relaxed) else { return }
            await fail(ServerError(.serviceUnavailable, code: "unavailable", kind: .unavailable, "the worker is shutting down: open a session again shortly"))
            await end("shutting down", code: .goingAway)
        }
        let registration = UUID()
        open.add(registration, shuttingDown)
        defer { open.remove(registration) }

        try await withThrowingTaskGroup(of: Void.self) { group in
            // Reader: the opening, then frames into the newest-wins buffer.
            group.addTask {
                var session = SessionSocketProtocol(readInputs: service.sessionInputs(metadata:))
                var messages = Messages(maxBinary: settings.maxBodyBytes)
                @Sendable func refuse(_ refusal: SessionSocketProtocol<RetakeService.SessionInputs>.Refusal, closing: Bool) async {
                    await fail(refusal.error)
                    if closing { await end("the session could not be opened", code: .policyViolation) }
                }
                do {
                    reading: for try await frame in inbound {
                        state.lastHeard.withLock { $0 = .now }
                        let step = messages.add(frame.opcode, frame.data, fin: frame.fin)
                        intake?.taken(frame.data.readableBytes, endsBinary: step.endsBinary)
                        let message: WebSocketMessage
                        switch step.result {
                        case .partial:
                            continue
                        case .message(let whole):
                            message = whole
                        case .refused(let error, let code):
                            session.closed()
                            await fail(error)
                            await end(error.envelope.error.code == "too_large" ? "message too big" : "protocol error", code: code)
                            break reading
                        }
                        let next = switch message {
                        case .text(let text): session.text(text)
                        case .binary(let buffer): session.binary(Data(buffer: buffer))
                        }
                        switch next {
                        case .none:
                            continue
                        case .answer(let refusal):
                            await refuse(refusal, closing: false)
                        case .close(let refusal):
                            await refuse(refusal, closing: true)
                            break reading
                        case .open(let inputs, let referenceId, let image):
                            do {
                                session.opened(try await open(inputs, referenceId: referenceId, image: image, state: state, channel: channel, send: send))
                            } catch {
                                session.failedToOpen()
                                await fail(error)
                                await end("the session could not be opened", code: .policyViolation)
                                break reading
                            }
                        case .compute(let metadata, let bytes):
                            guard let id = session.sessionId else { continue }
                            // Held to --session-max-fps: a faster client waits, its frames in its own buffers.
                            await service.sessions.pace(id)
                            if case .dropped = pending.yield(Received(metadata: metadata, bytes: bytes)) {
                                state.skipped.add(1, ordering: .relaxed)
                                service.metrics.sessionFramesSkipped.increment()
                            }
                        }
                    }
                    pending.finish()
                } catch {
                    // The transport's own errors end the session silently.
                    pending.finish()
                }
            }
            // Processor: one frame at a time, the newest.
            group.addTask {
                for await frame in frames {
                    guard let id = state.id else { continue }
                    do {
                        let answer = try await service.withRequestDeadline {
                            try await service.sessionFrame(id, bytes: frame.bytes, metadata: frame.metadata,
                                                           skipped: state.skipped.exchange(0, ordering: .relaxed), paced: true)
                        }
                        await send(answer)
                    } catch {
                        await fail(error)
                    }
                }
            }
            // Watchdog: the idle timeout, and shutdown.
            group.addTask {
                while state.closing.withLock({ $0 }) == nil {
                    try? await Task.sleep(for: .milliseconds(100))
                    if shutdown.isShuttingDown {
                        await shuttingDown()
                    } else if (ContinuousClock.now - state.lastHeard.withLock { $0 }) / .seconds(1) > settings.sessionIdleTimeout {
                        await fail(ServerError(.requestTimeout, code: "idle", "no message for \(settings.sessionIdleTimeout) s (--session-idle-timeout): the session is closed"))
                        await end("idle", code: .normalClosure)
                    }
                }
            }
            // The reader ends when the client goes away; then the rest end too.
            try await group.next()
            await end(state.closing.withLock { $0 } ?? "closed", code: .normalClosure)
            try await group.waitForAll()
        }
        logger.info("session socket closed", metadata: ["reason": "\(state.closing.withLock { $0 } ?? "client")"])
    }

    /// Opens the session, for the connection's client address (--sessions-per-client), and from then on spares the
    /// connection at --max-connections.
    private func open(_ inputs: RetakeService.SessionInputs, referenceId: String?, image: Data?, state: State, channel: any Channel,
                      send: @Sendable (Data) async -> Void) async throws -> String {
        connections.activity(channel, busy: true)
        defer { connections.activity(channel, busy: false) }
        let id = try await service.withRequestDeadline {
            try await service.openSession(inputs: inputs.0, referenceAttitude: inputs.1, referenceId: referenceId, image: image,
                                          client: channel.remoteAddress?.ipAddress)
        }
        state.opened.withLock { $0 = id }
        connections.hold(channel)
        struct Opened: Encodable { var opened: Details; struct Details: Encodable { var idleTimeoutSeconds: Double } }
        await send(try JSONOutput.encode(Opened(opened: .init(idleTimeoutSeconds: settings.sessionIdleTimeout))))
        return id
    }

    /// Frames into messages. A text message may have 64 KiB when it is the socket's first (the opening) and 16 KiB
    /// after (a frame's metadata), a binary one --max-body-bytes, counted as its frames arrive: past it the message is
    /// refused (1009) before any of it is read.
    struct Messages {
        let maxBinary: Int
        private var kind: WebSocketDataFrame.Opcode?
        private var parts = ByteBuffer()
        /// Messages begun, this one included.
        private var count = 0

        init(maxBinary: Int) { self.maxBinary = maxBinary }

        enum Result {
            case partial
            case message(WebSocketMessage)
            case refused(ServerError, WebSocketErrorCode)
        }

        /// What a frame (its opcode, payload and FIN bit) makes, and whether it ends a binary message (the socket's
        /// upload slot is then free).
        mutating func add(_ opcode: WebSocketDataFrame.Opcode, _ payload: ByteBuffer, fin: Bool) -> (result: Result, endsBinary: Bool) {
            switch opcode {
            case .text, .binary:
                guard kind == nil else {
                    return (.refused(.badRequest("a message began inside another (RFC 6455 5.4)"), .protocolError), false)
                }
                kind = opcode
                count += 1
            case .continuation:
                guard kind != nil else { return (.refused(.badRequest("a continuation frame outside a message (RFC 6455 5.4)"), .protocolError), false) }
            }
            let binary = kind == .binary
            let length = parts.readableBytes + payload.readableBytes
            if binary, length > maxBinary {
                let error = ServerError(.contentTooLarge, code: "too_large",
                                        "binary message of \(length) bytes, over the limit of \(maxBinary) bytes (--max-body-bytes)")
                return (.refused(error, .messageTooLarge), false)
            }
            if !binary, length > SocketIntake.textLimit(message: count) {
                return (.refused(SocketIntake.textTooLarge(length: length, message: count), .messageTooLarge), false)
            }
            guard fin else {
                parts.writeImmutableBuffer(payload)
                return (.partial, false)
            }
            var data = payload
            if parts.readableBytes > 0 {
                parts.writeImmutableBuffer(payload)
                data = parts
                parts = ByteBuffer()
            }
            kind = nil
            return (binary ? .message(.binary(data)) : .message(.text(String(buffer: data))), binary)
        }
    }
}
