import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// HTTP/1.0 (RFC 1945, RFC 9112 9.3): a connection closes after each response unless the request asks to keep it
/// alive, and the answer carries the request's version. Hummingbird's types drop the version, so this handler
/// sits before the conversion to them (`install` puts it there): it marks a 1.0 request `Connection: close` for
/// Hummingbird, which then closes after answering, and answers in HTTP/1.0 (no chunked framing).
final class HTTP10Support: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The versions of the requests answered next, oldest first (requests may be pipelined).
    private var versions: [(version: HTTPVersion, keepAlive: Bool)] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let tokens = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        let keepAlive = !tokens.contains("close") && (!isBefore11(head.version) || tokens.contains("keep-alive"))
        versions.append((head.version, keepAlive))
        if !keepAlive {
            head.headers.replaceOrAdd(name: "connection", value: "close")
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status != .continue:
            guard !versions.isEmpty else { return context.write(data, promise: promise) }
            let request = versions.removeFirst()
            if isBefore11(request.version) {
                head.version = request.version
                if request.keepAlive { head.headers.replaceOrAdd(name: "connection", value: "keep-alive") }
            }
            if !request.keepAlive { head.headers.replaceOrAdd(name: "connection", value: "close") }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }

    /// Added among Hummingbird's additional handlers (after the conversion to HTTPTypes), it moves the version
    /// handling before that conversion.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart

        func handlerAdded(context: ChannelHandlerContext) {
            let pipeline = context.pipeline.syncOperations
            if let codec = try? pipeline.handler(type: HTTP1ToHTTPServerCodec.self) {
                try? pipeline.addHandler(HTTP10Support(), position: .before(codec))
            }
        }
    }
}

private func isBefore11(_ version: HTTPVersion) -> Bool { version.major < 1 || (version.major == 1 && version.minor < 1) }
