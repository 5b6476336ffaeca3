import Hummingbird
import NIOCore
import Synchronization

/// The request context of the worker's routes: Hummingbird's, plus the connection, so that a request answered
/// before its body was read can end the connection (otherwise Hummingbird reads the rest of the body, however
/// slowly a client sends it, to reach the next request) and an upload announcing `Expect: 100-continue` can be
/// told to go on.
struct RetakeRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    /// Set once the handler has read the whole body: an error answered after that leaves the connection open.
    let body = BodyState()

    /// The peer's IP address: what `--uploads-per-client` counts by (nil for a peer without one, which only the
    /// global bound then counts).
    var clientAddress: String? { channel.remoteAddress?.ipAddress }

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    final class BodyState: Sendable {
        private let flag = Atomic<Bool>(false)
        var read: Bool { flag.load(ordering: .acquiring) }
        func markRead() { flag.store(true, ordering: .releasing) }
    }
}
