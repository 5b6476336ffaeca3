import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The worker's connections start in an upgradable HTTP/1 pipeline (for the live sessions' WebSocket), which
/// installs the HTTP handlers (idle timeout, connection tracking, protocol-error log) only once the first request
/// head has arrived. Until then this guard stands in:
/// - the first head must arrive within the idle timeout, however it trickles, or the connection is closed;
/// - a head the HTTP parser refuses is answered 400, counted and logged, and the connection closed;
/// - shutting down, the connection is closed (it has no request to finish).
/// The HTTP handlers' installation (`Release`, listed with them) or the first byte answered (a WebSocket's 101)
/// removes it.
enum FirstRequestGuard {
    /// `inner` with the guard installed around its pipeline from the connection's start.
    struct Channel<Inner: ServerChildChannel>: ServerChildChannel {
        typealias Value = Inner.Value
        let inner: Inner
        let deadline: TimeAmount
        let connections: ConnectionLimit
        /// Reads a live session's frames' headers (`SocketIntake`), first in the pipeline.
        let intake: SocketIntake
        let metrics: ServerMetrics
        let logger: Logger

        func setup(channel: any NIOCore.Channel, logger: Logger) -> EventLoopFuture<Value> {
            do {
                try channel.pipeline.syncOperations.addHandlers([connections.registration(), Deadline(after: deadline), intake.handler()],
                                                                position: .first)
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
            return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
                try channel.pipeline.syncOperations.addHandler(Refusal(metrics: metrics, logger: self.logger))
                return value
            }
        }

        func handle(value: Value, logger: Logger) async {
            var quiet = logger
            quiet.handler = EndedBeforeHead(inner: logger.handler)
            await inner.handle(value: value, logger: quiet)
        }
    }

    /// A connection that ends before its first head (closed by the deadline or the refusal, or by its client
    /// mid-head), or whose upgrade `SocketIntake` refuses (frames sent before the answer), fails the upgrade handler's
    /// promise, which hummingbird-websocket logs as an error: a debug line here.
    struct EndedBeforeHead: LogHandler {
        var inner: any LogHandler
        var metadata: Logger.Metadata {
            get { inner.metadata }
            set { inner.metadata = newValue }
        }
        var logLevel: Logger.Level {
            get { inner.logLevel }
            set { inner.logLevel = newValue }
        }
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { inner[metadataKey: key] }
            set { inner[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            var event = event
            if event.level == .error, event.message.description == "Error handling upgrade result",
               event.metadata?["error.type"]?.description == "\(ChannelError.inappropriateOperationForState)" {
                guard inner.logLevel <= .debug else { return }
                event.level = .debug
            }
            inner.log(event: event)
        }
    }

    /// Removes the guard's handlers from `pipeline` (on its event loop).
    static func release(_ pipeline: ChannelPipeline) {
        let operations = pipeline.syncOperations
        if let deadline = try? operations.handler(type: Deadline.self) { operations.removeHandler(deadline, promise: nil) }
        if let refusal = try? operations.handler(type: Refusal.self) { operations.removeHandler(refusal, promise: nil) }
    }

    /// Closes the connection when no answer has begun `after` its start: bytes in, before the HTTP decoder.
    final class Deadline: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = ByteBuffer
        let after: TimeAmount
        private var timer: Scheduled<Void>?

        init(after: TimeAmount) { self.after = after }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { start(context) }
        }

        func channelActive(context: ChannelHandlerContext) {
            start(context)
            context.fireChannelActive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            timer?.cancel()
            timer = nil
        }

        /// Shutting down, a connection with no request yet has nothing to finish.
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
            context.channel.close(promise: nil)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            context.write(data, promise: promise)
            // Later: the answer being written may come from the guard's own refusal, still writing.
            let pipeline = context.pipeline
            context.eventLoop.execute { FirstRequestGuard.release(pipeline) }
        }

        private func start(_ context: ChannelHandlerContext) {
            guard timer == nil else { return }
            let channel = context.channel, pipeline = context.pipeline
            timer = context.eventLoop.scheduleTask(in: after) {
                FirstRequestGuard.release(pipeline)  // the head cut short is no parse error of the client's
                channel.close(promise: nil)
            }
        }
    }

    /// Answers a first head the parser refuses with 400 and closes, counted as the HTTP pipeline counts it later.
    final class Refusal: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let metrics: ServerMetrics
        let logger: Logger
        private var answered = false

        init(metrics: ServerMetrics, logger: Logger) {
            self.metrics = metrics
            self.logger = logger
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard let parse = error as? HTTPParserError else { return context.fireErrorCaught(error) }
            guard !answered else { return }
            answered = true
            ProtocolErrorLog.report(parse, peer: context.remoteAddress, metrics: metrics, logger: logger)
            let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: ["Content-Length": "0", "Connection": "close"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Listed with the HTTP handlers: their installation ends the guard.
    final class Release: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        func handlerAdded(context: ChannelHandlerContext) { FirstRequestGuard.release(context.pipeline) }
    }
}
