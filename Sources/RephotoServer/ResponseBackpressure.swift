import NIOCore
import NIOHTTPTypes

/// How far a client may fall behind reading its answers. With `pauseAt` pipelined requests unanswered the
/// connection stops reading, and with `closeAt` (already decoded from what was read) it is closed; a connection
/// whose answers cannot be sent (the client does not read) for `stallTimeout` is closed. Without these, a client
/// pipelining thousands of requests and reading none held a core, its memory, and a drain on SIGTERM for as
/// long as it stayed connected.
final class ResponseBackpressure: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let pauseAt = 16
    static let closeAt = 128

    let stallTimeout: TimeAmount
    private var unanswered = 0
    private var readDeferred = false
    private var stall: Scheduled<Void>?

    init(stallTimeout: TimeAmount) { self.stallTimeout = stallTimeout }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            unanswered += 1
            if unanswered > Self.closeAt {
                context.close(promise: nil)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        guard unanswered < Self.pauseAt else {
            readDeferred = true
            return
        }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            if readDeferred, unanswered < Self.pauseAt {
                readDeferred = false
                context.read()
            }
        }
        context.write(data, promise: promise)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stall?.cancel()
            stall = nil
        } else if stall == nil {
            let channel = context.channel
            stall = context.eventLoop.scheduleTask(in: stallTimeout) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stall?.cancel()
        stall = nil
        context.fireChannelInactive()
    }
}
