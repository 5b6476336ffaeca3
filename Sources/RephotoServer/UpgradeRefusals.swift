import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import NIOHTTPTypes
import Synchronization

/// A WebSocket upgrade the sockets' router refuses (401 without the token, 503 shutting down, 404 for another path)
/// was answered by hummingbird-websocket with its own 400 and an empty body, whatever the router said. The router's
/// answer is kept here, by connection, and written in the place of that 400: JSON, as every other request's.
final class UpgradeRefusals: Sendable {
    private let kept = Mutex<[ObjectIdentifier: (head: HTTPResponse, body: ByteBuffer)]>([:])

    /// The handler, among the HTTP ones, that writes a kept answer in the place of the refusal's 400.
    func answer() -> Answer { Answer(refusals: self) }

    private func keep(_ channel: any Channel, _ head: HTTPResponse, _ body: ByteBuffer) {
        let key = ObjectIdentifier(channel)
        kept.withLock { $0[key] = (head, body) }
        // A connection that ends before the answer is written leaves nothing behind.
        channel.closeFuture.whenComplete { [self] _ in _ = kept.withLock { $0.removeValue(forKey: key) } }
    }

    fileprivate func take(_ channel: any Channel) -> (head: HTTPResponse, body: ByteBuffer)? {
        kept.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// First on the sockets' router: keeps the answer to an upgrade that is not made.
    struct Record: RouterMiddleware {
        typealias Context = LiveSessionSocket.UpgradeContext
        let refusals: UpgradeRefusals

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            let response: Response
            do {
                response = try await next(request, context)
            } catch {
                response = await RetakeServer.answer { throw error }
            }
            guard response.status != .ok else { return response }
            let body = Collected()
            try? await response.body.write(Collector(into: body))
            refusals.keep(context.channel, HTTPResponse(status: response.status, headerFields: response.headers), body.buffer)
            return response
        }
    }

    private final class Collected: @unchecked Sendable {
        var buffer = ByteBuffer()
    }

    private struct Collector: ResponseBodyWriter {
        let into: Collected
        mutating func write(_ buffer: ByteBuffer) async throws { into.buffer.writeImmutableBuffer(buffer) }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    /// Writes the kept answer in the place of the failed upgrade's 400 (its head, then its body before the end).
    final class Answer: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        let refusals: UpgradeRefusals
        private var body: ByteBuffer?

        init(refusals: UpgradeRefusals) { self.refusals = refusals }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            switch unwrapOutboundIn(data) {
            case .head(let head) where head.status == .badRequest:
                guard let (kept, content) = refusals.take(context.channel) else { break }
                var replaced = kept
                replaced.headerFields[.contentLength] = String(content.readableBytes)
                replaced.headerFields[.connection] = "close"
                body = content
                return context.write(wrapOutboundOut(.head(replaced)), promise: promise)
            case .end:
                if let content = body {
                    body = nil
                    context.write(wrapOutboundOut(.body(content)), promise: nil)
                }
            case .head, .body:
                break
            }
            context.write(data, promise: promise)
        }
    }
}
