import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTPTypes
import RephotoKit
import ServiceLifecycle
import Synchronization

/// The worker: routes, middleware and lifecycle. `rephoto serve` runs `RetakeServer.run`; tests build the
/// application with `makeApplication`.
public enum RetakeServer {
    /// Builds the application and the watcher that notes when shutdown begins (`run` runs both). `compute`:
    /// the pool the pipelines run on, for a caller that must wait for it before exiting (one is made when nil).
    /// `lanes`: the sessions' live and robust lanes (`SessionPipelines`), for the same reason.
    /// `token`: the bearer token in force (one holding `settings.token` is made when nil); `descriptors`: the
    /// process's descriptor limit, which bounds the default --max-connections.
    public static func makeApplication(settings: ServerSettings, logger: Logger, shutdown: ShutdownWatcher = ShutdownWatcher(),
                                       compute: ComputePool? = nil, lanes: (live: ComputePool, robust: ComputePool)? = nil, token: BearerToken? = nil,
                                       descriptors: Int = DescriptorLimit.current) throws -> some ApplicationProtocol {
        let metrics = ServerMetrics()
        let service = try RetakeService(settings: settings, metrics: metrics, pool: compute,
                                        lanes: lanes.map { SessionPipelines.Lanes(live: $0.live, robust: $0.robust) })
        let connections = ConnectionLimit(limit: settings.connectionLimit(descriptors: descriptors), logger: logger, metrics: metrics)
        let router = Router(context: RetakeRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: RequestLog(metrics: metrics, logger: logger))
        router.add(middleware: ShuttingDown(watcher: shutdown))
        let bearer = token ?? BearerToken(settings.token, file: settings.tokenFile)
        router.add(middleware: BearerAuth(token: bearer))
        router.add(middleware: MethodNotAllowed(openAPI: openAPI))
        let uploads = UploadBudget(capacity: settings.concurrency + settings.queueLength, perClient: settings.uploadsPerClientLimit)
        shutdown.onShutdown { uploads.cutUnread() }
        router.add(middleware: UploadAdmission(budget: uploads))

        router.get("/healthz") { _, _ in jsonResponse(.ok, Data(#"{"status":"alive"}"#.utf8)) }
        router.get("/readyz") { _, _ in
            shutdown.isShuttingDown ? jsonResponse(.serviceUnavailable, Data(#"{"status":"shutting down"}"#.utf8))
                : jsonResponse(.ok, Data(#"{"status":"ready"}"#.utf8))
        }
        router.get("/metrics") { _, _ in
            let size = service.store.size()
            metrics.storeEntries.set(Double(size.entries))
            metrics.storeBytes.set(Double(size.bytes))
            metrics.derivedBytes.set(Double(size.derived))
            service.sessions.sweep()
            metrics.sessionsOpen.set(Double(service.sessions.count))
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                            body: .init(byteBuffer: ByteBuffer(string: metrics.text())))
        }
        let document = openAPIDocument(for: settings)
        router.get("/openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: document)))
        }
        // The guide (docs/guide.md): a page that walks a phone to an old photo's vantage point over this API.
        router.get("/") { _, _ in Guide.response("index.html") }
        router.get("/guide/:file") { _, context in Guide.response(context.parameters.get("file") ?? "") }
        router.post("/v1/retakes/score") { request, context in
            await answer {
                let form = try await form(request, context, settings, parts: retakeParts)
                return jsonResponse(.ok, try await service.withRequestDeadline { try await service.score(form) })
            }
        }
        router.post("/v1/retakes/align") { request, context in
            await answer {
                let form = try await form(request, context, settings, parts: retakeParts)
                let (image, type, warnings) = try await service.withRequestDeadline { try await service.align(form) }
                var headers: HTTPFields = [.contentType: type]
                // One X-Rephoto-Warning field per warning, in ASCII (a header holds no "°"): "\u{B0}".
                for warning in warnings {
                    headers.append(HTTPField(name: Self.warningHeader, value: warning.unicodeScalars.map { $0.escaped(asASCII: true) }.joined()))
                }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: image)))
            }
        }
        router.post("/v1/references") { request, context in
            await answer {
                let form = try await form(request, context, settings, parts: referenceParts)
                let (id, created) = try await service.withRequestDeadline { try await service.addReference(form) }
                return jsonResponse(created ? .created : .ok, try JSONOutput.encode(["id": id]))
            }
        }
        router.get("/v1/references") { _, _ in
            await answer { jsonResponse(.ok, try JSONOutput.encode(["references": try service.listReferences()])) }
        }
        router.get("/v1/references/:id/qr") { request, context in
            await answer {
                let id = try referenceId(context.parameters.get("id") ?? "")
                guard service.hasReference(id) else { throw ServerError.notFound("no reference with id \(id.prefix(80))") }
                let link = try Guide.link(to: id, request: request, tls: settings.tls != nil)
                let png = try QRCode.png(link)
                return Response(status: .ok, headers: [.contentType: "image/png", .cacheControl: "no-store"],
                                body: .init(byteBuffer: ByteBuffer(bytes: png)))
            }
        }
        router.get("/v1/references/:id/image") { _, context in
            await answer {
                let id = try referenceId(context.parameters.get("id") ?? "")
                guard service.hasReference(id), let image = try service.storedImage(id) else {
                    throw ServerError.notFound(service.hasReference(id) ? "reference \(id)'s image is not kept (no --reference-store)" : "no reference with id \(id.prefix(80))")
                }
                return Response(status: .ok, headers: [.contentType: Guide.imageType(image), .cacheControl: "private, max-age=86400"],
                                body: .init(byteBuffer: ByteBuffer(bytes: image)))
            }
        }
        router.get("/v1/references/:id") { _, context in
            await answer {
                let id = try referenceId(context.parameters.get("id") ?? "")
                guard service.hasReference(id) else { throw ServerError.notFound("no reference with id \(id.prefix(80))") }
                return jsonResponse(.ok, try JSONOutput.encode(service.referenceInfo(id)))
            }
        }
        router.delete("/v1/references/:id") { _, context in
            await answer {
                let id = try referenceId(context.parameters.get("id") ?? "")
                guard try service.deleteReference(id) else { throw ServerError.notFound("no reference with id \(id.prefix(80))") }
                return Response(status: .noContent)
            }
        }
        router.post("/v1/sessions") { request, context in
            await answer {
                let form = try await form(request, context, settings, parts: sessionParts)
                return jsonResponse(.created, try await service.withRequestDeadline { try await service.openSession(form, client: context.clientAddress) })
            }
        }
        router.post("/v1/sessions/:id/frames") { request, context in
            await answer {
                let id = try LiveSessions.checkId(context.parameters.get("id") ?? "")
                let form = try await form(request, context, settings, parts: frameParts)
                return jsonResponse(.ok, try await service.withRequestDeadline { try await service.sessionFrame(id, form) })
            }
        }
        router.delete("/v1/sessions/:id") { _, context in
            await answer {
                let id = try LiveSessions.checkId(context.parameters.get("id") ?? "")
                guard service.sessions.remove(id) else { throw LiveSessions.unknown(id) }
                return Response(status: .noContent)
            }
        }
        // The live session (docs/server.md): the upgrade request passes the same gates as every /v1 request, is
        // logged as one, and a refusal is answered as one (hummingbird-websocket answered it 400 with an empty body).
        let sockets = Router(context: LiveSessionSocket.UpgradeContext.self)
        let refusals = UpgradeRefusals()
        sockets.add(middleware: UpgradeRefusals.Record(refusals: refusals))
        sockets.add(middleware: RequestLog(metrics: metrics, logger: logger, upgrades: true))
        sockets.add(middleware: ShuttingDown(watcher: shutdown))
        sockets.add(middleware: BearerAuth(token: bearer))
        let live = LiveSessionSocket(service: service, settings: settings, shutdown: shutdown, open: LiveSessionSocket.Registry(),
                                     connections: connections)
        shutdown.onShutdownDrain { await live.open.closeAll() }
        let intake = SocketIntake(settings: settings, uploads: uploads, connections: connections, metrics: metrics, logger: logger)
        sockets.ws("/v1/sessions", shouldUpgrade: { request, _ in SocketSubprotocol.upgrade(request) }) { inbound, outbound, context in
            let channel = context.requestContext.channel
            try await live.run(inbound, outbound, channel: channel, intake: intake.socket(for: channel), logger: context.logger)
        }
        var configuration = ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: "rephoto",
                                                     availableConnectionsDelegate: connections.gate)
        configuration.reuseAddress = true
        // A connection that sends no request part for `idleTimeout` is closed: 5,000 connections trickling a
        // header were held open indefinitely, 54 MB of memory and the file descriptors with them. A slow
        // upload still sends its body in parts, each of which counts. Its first head must arrive within it.
        let idle = TimeAmount.milliseconds(Int64(settings.idleTimeout * 1000))
        let upgrade = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(additionalChannelHandlers: [FirstRequestGuard.Release(), ProtocolErrorLog(metrics: metrics, logger: logger),
                                                     connections.handler(), HTTP10Support.Installer(), ResponseBackpressure(stallTimeout: idle),
                                                     refusals.answer()],
                         idleTimeout: idle),
            ws: .init(maxFrameSize: settings.maxBodyBytes))
        let upgrader = sockets.buildResponder()
        let server = HTTPServerBuilder { responder in
            FirstRequestGuard.Channel(inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: upgrader, configuration: upgrade),
                                      deadline: idle, connections: connections, intake: intake, metrics: metrics, logger: logger)
        }
        guard let tls = settings.tls else {
            return Application(router: router, server: server, configuration: configuration, logger: logger)
        }
        return Application(router: router, server: try .tls(server, tlsConfiguration: try Guide.tlsConfiguration(tls)),
                           configuration: configuration, logger: logger)
    }

    /// Runs until SIGTERM or SIGINT; requests in flight finish, new ones get 503.
    public static func run(settings: ServerSettings, logger: Logger) async throws {
        try OpenCVRuntime.configure(threads: 1)  // one OpenCV thread per pipeline; concurrency sets the pipelines
        // Loaded once at start, so the first TIFF or WebP upload does not pay for it; without it those are refused.
        do {
            try OpenCVRuntime.loadMediaPlugin()
        } catch {
            logger.warning("TIFF, WebP, BMP, PNM and JPEG 2000 uploads will be refused (415), and stored references in them answered 503: \(error)")
        }
        let watcher = ShutdownWatcher()
        let compute = RetakeService.makePool(settings)
        let made = SessionPipelines.makeLanes(settings)
        let lanes = (live: made.live, robust: made.robust)
        let token = BearerToken(settings.token, file: settings.tokenFile)
        let hangUp = settings.tokenFile.map { _ in token.reloadOnHangUp(logger: logger) }
        defer { hangUp?.cancel() }
        let app = try makeApplication(settings: settings, logger: logger, shutdown: watcher, compute: compute, lanes: lanes, token: token,
                                      descriptors: DescriptorLimit.raise())
        // Graceful shutdown runs in reverse order: the watcher first (new /v1 work gets 503), then the server,
        // which finishes the requests in flight.
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: app), .init(service: watcher, successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            // NIO's "bind(descriptor:ptr:bytes:): Address already in use" named neither the address nor the port.
            throw RephotoError.badInput("cannot listen on \(settings.host):\(settings.port): the address is in use (another worker?)")
        }
        // Work whose request timed out may still run; exiting under it would crash inside OpenCV.
        let sessionsDone = lanes.live.finish(waitingAtMost: settings.requestTimeout + 30) && lanes.robust.finish(waitingAtMost: settings.requestTimeout + 30)
        if !compute.finish(waitingAtMost: settings.requestTimeout + 30) || !sessionsDone {
            logger.warning("compute work still running at exit")
        }
    }

    static let openAPI: String = {
        guard let data = ServerResources.data("openapi.yaml") else { return "openapi: 3.1.0\n" }
        return String(decoding: data, as: UTF8.self)
    }()

    /// The served document: its `servers` entry is this worker's own address, scheme and port (a wildcard host as
    /// 127.0.0.1), not the file's placeholder.
    static func openAPIDocument(for settings: ServerSettings) -> String {
        let wildcard = ["0.0.0.0", "::", "[::]", "*"].contains(settings.host)
        let host = wildcard ? "127.0.0.1" : settings.host.contains(":") && !settings.host.hasPrefix("[") ? "[\(settings.host)]" : settings.host
        let url = "\(settings.tls == nil ? "http" : "https")://\(host):\(settings.port)"
        return openAPI.replacingOccurrences(of: "servers:\n  - url: http://127.0.0.1:8080\n", with: "servers:\n  - url: \(url)\n")
    }

    /// The paths anyone may read, also during shutdown: health, readiness, metrics and the API document. Every
    /// other path needs the token: the router takes "//v1/retakes/score" for "/v1/retakes/score", and a check
    /// for the "/v1/" prefix let it through unauthenticated.
    static func isPublic(_ path: String) -> Bool {
        let segments = path.split(separator: "/")
        // The guide's page and its files are public too: it asks for the token itself when the worker wants one.
        if segments.isEmpty || (segments.count == 2 && segments[0] == "guide") { return true }
        return segments.count == 1 && ["healthz", "readyz", "metrics", "openapi.yaml"].contains(segments[0])
    }

    static func jsonResponse(_ status: HTTPResponse.Status, _ data: Data) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func errorResponse(_ error: ServerError) -> Response {
        var response = jsonResponse(error.status, (try? JSONOutput.encode(error.envelope)) ?? Data())
        if let seconds = error.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        if error.closesConnection { response.headers[.connection] = "close" }
        if let allow = error.allow { response.headers[.allow] = allow }
        return response
    }

    /// Every failure becomes the JSON error with its status; nothing escapes as a bare 500.
    static func answer(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as HTTPError {
            let code = error.status == .contentTooLarge ? "too_large" : error.status == .notFound ? "not_found" : "bad_input"
            return errorResponse(ServerError(error.status, code: code, error.body ?? error.status.reasonPhrase))
        } catch {
            return errorResponse(ServerError.wrapping(error))
        }
    }

    /// An id in a path, refused as a `referenceId` part is: 400 when it cannot be one, not 404 as if unknown.
    static func referenceId(_ id: String) throws -> String {
        guard ReferenceStore.isValid(id) else { throw ServerError.badRequest("'\(id.prefix(80))' is not a reference id (64 lowercase hex digits, the SHA-256 of the image)") }
        return id
    }

    /// Whether the request announces a body (chunked, or a positive length).
    static func hasBody(_ request: Request) -> Bool {
        request.headers[.transferEncoding] != nil || (request.headers[.contentLength].flatMap { Int($0) } ?? 0) > 0
    }

    /// The response field that carries an alignment's warnings.
    static let warningHeader = HTTPField.Name("X-Rephoto-Warning")!

    /// The parts scoring and aligning read, and those adding a reference reads (the stdio mode's keys too).
    static let retakeParts: Set = ["reference", "referenceId", "retake", "metadata", "points"]
    static let referenceParts: Set = ["image", "metadata"]
    /// The parts opening a guidance session reads, and those a session's frame reads.
    static let sessionParts: Set = ["reference", "referenceId", "metadata"]
    static let frameParts: Set = ["frame", "metadata"]

    static func form(_ request: Request, _ context: RetakeRequestContext, _ settings: ServerSettings, parts allowed: Set<String>) async throws -> MultipartForm {
        let maxBody = settings.maxBodyBytes
        // A declared length over the limit is refused before any of the body is waited for (probe: a client
        // announcing 100 MB was waited on).
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBody {
            throw ServerError(.contentTooLarge, code: "too_large", "request body of \(declared) bytes over the limit of \(maxBody) bytes (--max-body-bytes)")
        }
        // curl and most HTTP libraries announce an upload over 1 MB with `Expect: 100-continue` and wait for the
        // interim answer before sending it: unanswered, curl waited a second on every upload, and a shorter
        // --idle-timeout cut them off. The limits above are checked first, so a refused upload is never sent.
        // Any other expectation cannot be met (RFC 9110 10.1.1): 417, and the connection closes, since the client
        // may send the body anyway.
        // The field is a list (repeated fields join with commas): 100-continue once or more is met, an empty list
        // asks nothing.
        if let expectation = request.headers[.expect],
           case let members = expectation.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }).filter({ !$0.isEmpty }),
           !members.isEmpty {
            guard members.allSatisfy({ $0 == "100-continue" }) else {
                var failed = ServerError(.expectationFailed, code: "expectation_failed",
                                         "Expect: \(expectation.prefix(100)) cannot be met (only 100-continue is supported)")
                failed.closesConnection = true
                throw failed
            }
            // A client gone meanwhile fails the body's read below (400), not this write (a 500).
            try? await context.channel.writeAndFlush(HTTPResponsePart.head(HTTPResponse(status: .continue))).get()
        }
        // A body holds an upload slot while it arrives, so its time is bounded twice: it keeps pace with
        // --min-body-rate from its first byte (after ServerSettings.bodyRateAllowance, or --idle-timeout when
        // shorter), and the whole of it arrives within --body-timeout. Both are checked as each part arrives
        // and every half second between parts (a client sending nothing at all is behind too), closing the
        // connection when one fails.
        var body = ByteBuffer()
        let start = ContinuousClock.now
        let allowance = min(settings.idleTimeout, ServerSettings.bodyRateAllowance)
        let received = Atomic<Int>(0)
        let overdue = Mutex<String?>(nil)
        @Sendable func rule(_ elapsed: Double, _ bytes: Int) -> String? {
            if elapsed > settings.bodyTimeout { return String(format: "--body-timeout %g s", settings.bodyTimeout) }
            if elapsed > allowance + Double(bytes) / settings.minBodyRate {
                return String(format: "--min-body-rate %g bytes/s from the first byte", settings.minBodyRate)
            }
            return nil
        }
        let channel = context.channel
        let watch = channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { task in
            guard let broken = rule((ContinuousClock.now - start) / .seconds(1), received.load(ordering: .relaxed)) else { return }
            overdue.withLock { $0 = broken }
            task.cancel()
            channel.close(promise: nil)
        }
        defer { watch.cancel() }
        func tooSlow(_ rule: String) -> ServerError {
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            var slow = ServerError(.requestTimeout, code: "too_slow", String(
                format: "request body arriving too slowly: %d bytes in %.1f s (%@)", body.readableBytes, elapsed, rule))
            slow.closesConnection = true
            return slow
        }
        var parts = request.body.makeAsyncIterator()
        func next() async throws -> ByteBuffer? {
            do {
                return try await nextPart(&parts)
            } catch {
                if let broken = overdue.withLock({ $0 }) { throw tooSlow(broken) }
                throw error
            }
        }
        while let part = try await next() {
            guard body.readableBytes + part.readableBytes <= maxBody else {
                throw ServerError(.contentTooLarge, code: "too_large", "request body over the limit of \(maxBody) bytes (--max-body-bytes)")
            }
            body.writeImmutableBuffer(part)
            received.store(body.readableBytes, ordering: .relaxed)
            if let broken = rule((ContinuousClock.now - start) / .seconds(1), body.readableBytes) { throw tooSlow(broken) }
        }
        context.body.markRead()
        return try MultipartForm(contentType: request.headers[.contentType], body: body, allowed: allowed)
    }

    /// The next part of a request body; a body the client breaks off or frames wrongly (a bad chunk size) is
    /// the client's error, 400.
    static func nextPart(_ parts: inout RequestBody.AsyncIterator) async throws -> ByteBuffer? {
        do {
            return try await parts.next()
        } catch {
            var broken = ServerError.badRequest("the request body could not be read: \(String(describing: error).prefix(200))")
            broken.closesConnection = true
            throw broken
        }
    }
}

/// One log line per request (id, method, route, status, milliseconds) and the request metrics.
struct RequestLog<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics
    let logger: Logger
    /// WebSocket upgrades: the router's 200 is the upgrade's 101, and the line says `upgrade=websocket`.
    var upgrades = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        metrics.inFlight.increment()
        defer { metrics.inFlight.decrement() }
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = await RetakeServer.answer { throw error }
        }
        // An answer to HEAD has GET's headers and no body, errors included: a body there would be read as the
        // start of the next response on the connection.
        if request.method == .head { response = response.createHeadResponse() }
        // An error answered to a request that has a body may leave that body unread, and Hummingbird would then
        // read it to its end, at whatever pace the client sends it (a byte a second holds the connection): such a
        // connection closes shortly after the answer, not at once, which would make Hummingbird answer a second
        // time, 400, for the body cut short.
        // A response to CONNECT carries no framing (NIO writes neither a length nor chunks for it), so its client
        // reads to the end of the connection: that end came only with the idle timeout.
        if response.status.code >= 400, let context = context as? RetakeRequestContext,
           (RetakeServer.hasBody(request) && !context.body.read) || response.headers[.connection] == "close" || request.method == .connect {
            response.headers[.connection] = "close"
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: .milliseconds(500)) { channel.close(promise: nil) }
        }
        let elapsed = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        let status = upgrades && response.status == .ok ? 101 : response.status.code
        metrics.request(route: route, status: status)
        metrics.latency.recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        let id = Self.randomId()
        response.headers[.init("X-Request-Id")!] = id
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var fields: Logger.Metadata = ["id": "\(id)", "method": "\(request.method.rawValue)", "route": "\(route)",
                                       "status": "\(status)", "ms": "\(String(format: "%.1f", ms))"]
        if upgrades { fields["upgrade"] = "websocket" }
        logger.info("request", metadata: fields)
        return response
    }
}

extension RequestLog {
    /// 64 random bits in hex: an id that tells nothing of other requests (Hummingbird's count up).
    static func randomId() -> String {
        let n = UInt64.random(in: .min ... .max)
        let hex = String(n, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// 503 for new work once shutdown began; health checks still answer.
struct ShuttingDown<Context: RequestContext>: RouterMiddleware {
    let watcher: ShutdownWatcher

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if watcher.isShuttingDown, !RetakeServer.isPublic(request.uri.path) {
            var error = ServerError(.serviceUnavailable, code: "unavailable", kind: .unavailable, "the worker is shutting down")
            error.retryAfterSeconds = 1
            return RetakeServer.errorResponse(error)
        }
        return try await next(request, context)
    }
}

/// `Authorization: Bearer <token>` on /v1 routes (on a WebSocket upgrade, or the token offered as SocketSubprotocol
/// says), compared in constant time.
struct BearerAuth<Context: RequestContext>: RouterMiddleware {
    let token: BearerToken

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = token.value, !RetakeServer.isPublic(request.uri.path) else { return try await next(request, context) }
        // The scheme is case-insensitive (RFC 9110).
        // A browser's WebSocket offers it as a subprotocol instead (SocketSubprotocol), on the upgrade only.
        let given = request.headers[.authorization].flatMap { $0.lowercased().hasPrefix("bearer ") ? String($0.dropFirst(7)) : nil }
            ?? (request.headers[.upgrade]?.lowercased() == "websocket" ? SocketSubprotocol.bearerToken(request.headers) : nil) ?? ""
        guard Self.equal(Array(given.utf8), Array(token.utf8)) else {
            var response = RetakeServer.errorResponse(ServerError(.unauthorized, code: "unauthorized", "missing or wrong bearer token"))
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        return try await next(request, context)
    }

    /// Takes as long for any wrong token as for the right one.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) { difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0) }
        return difference == 0
    }
}

/// A service that notes when graceful shutdown begins, for the middleware and /readyz, and runs what must
/// happen then (cutting uploads still arriving).
public final class ShutdownWatcher: Service, Sendable {
    private let flag = Atomic<Bool>(false)
    private let actions = Mutex<[@Sendable () -> Void]>([])
    private let drains = Mutex<[@Sendable () async -> Void]>([])
    public var isShuttingDown: Bool { flag.load(ordering: .acquiring) }

    public init() {}

    /// Runs `action` when shutdown begins (at once when it has).
    func onShutdown(_ action: @escaping @Sendable () -> Void) {
        let now = actions.withLock { list -> Bool in
            if isShuttingDown { return true }
            list.append(action)
            return false
        }
        if now { action() }
    }

    /// For tests and embedders: behave as shutting down from now on.
    public func begin() {
        let pending = actions.withLock { list -> [@Sendable () -> Void] in
            guard !flag.exchange(true, ordering: .acquiringAndReleasing) else { return [] }
            defer { list = [] }
            return list
        }
        for action in pending { action() }
    }

    public func run() async throws {
        try? await gracefulShutdown()
        begin()
        // Before the server stops: what must reach clients first (live sessions told why they end).
        let pending = drains.withLock { list -> [@Sendable () async -> Void] in
            defer { list = [] }
            return list
        }
        await withTaskGroup(of: Void.self) { group in
            for drain in pending { group.addTask { await drain() } }
        }
    }

    /// Runs `action` when shutdown begins and waits for it before the server stops (`run` only).
    func onShutdownDrain(_ action: @escaping @Sendable () async -> Void) {
        drains.withLock { $0.append(action) }
    }
}
