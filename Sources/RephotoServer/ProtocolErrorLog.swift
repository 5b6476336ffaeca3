import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Requests the HTTP parser refuses (a malformed request line or header) never reach a route: Hummingbird
/// answers them 400 with no body and closes. They were neither logged nor counted; this handler, placed after
/// the parser, logs each and counts it in `rephoto_requests_total` under the route "unparsed", then passes the
/// error on unchanged, once per connection.
final class ProtocolErrorLog: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let metrics: ServerMetrics
    let logger: Logger
    /// One per connection (the pipeline makes a handler for each): the parser reports its error again for
    /// every read that follows, and the connection ends with the first answer.
    private var reported = false
    /// Between a request's head and its end a parse error is the body's framing, which the route reads and
    /// answers (and counts) itself.
    private var inRequest = false

    init(metrics: ServerMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: inRequest = true
        case .end: inRequest = false
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parse = error as? HTTPParserError, !reported {
            reported = true
            guard !inRequest else { return context.fireErrorCaught(error) }
            Self.report(parse, peer: context.remoteAddress, metrics: metrics, logger: logger)
        }
        context.fireErrorCaught(error)
    }

    /// Counts and logs one request the parser refused.
    static func report(_ error: HTTPParserError, peer: SocketAddress?, metrics: ServerMetrics, logger: Logger) {
        metrics.request(route: "unparsed", status: 400)
        logger.notice("request refused by the HTTP parser", metadata: ["status": "400", "reason": "\(error)",
                                                                         "peer": "\(peer.map { "\($0)" } ?? "?")"])
    }
}
