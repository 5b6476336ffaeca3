import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// `--max-connections`: at most `limit` open connections, so the worker never runs out of file descriptors (out
/// of them, accept fails and nothing answers, /healthz included). When a connection opens at the limit, the one
/// idle longest (no request in progress, quiet for `evictionGrace` or more) is closed to keep a place free;
/// when none is idle, accepting pauses until one closes, and that is logged once per `logInterval`. Should
/// accept still run out of descriptors, the limit is lowered to the connections open then, and the one idle
/// longest is closed at once: NIO retries a failed accept without pause, a core spinning until one succeeds.
final class ConnectionLimit: Sendable {
    var limit: Int { state.withLock { $0.limit } }
    /// A connection this new has its request still on the way: never evicted.
    static let evictionGrace: Duration = .seconds(1)
    static let logInterval: Duration = .seconds(60)

    private struct Entry {
        var channel: any Channel
        var busy: Bool
        var held = false
        var lastActive: ContinuousClock.Instant
    }
    private struct State {
        var open: [ObjectIdentifier: Entry] = [:]
        var accepted = 0
        var lastLogged: ContinuousClock.Instant?
        var lastExhausted: ContinuousClock.Instant?
        var recheckScheduled = false
        var watching = false
        var limit: Int
    }
    private let state: Mutex<State>
    private let logger: Logger
    private let metrics: ServerMetrics

    init(limit: Int, logger: Logger, metrics: ServerMetrics) {
        state = Mutex(State(limit: limit))
        self.logger = logger
        self.metrics = metrics
    }

    /// Hummingbird's accept gate: counts accepted connections, pauses accepting at the limit.
    struct Gate: AvailableConnectionsDelegate {
        let owner: ConnectionLimit
        mutating func connectionOpened() { owner.state.withLock { $0.accepted += 1 } }
        mutating func connectionClosed() { owner.state.withLock { $0.accepted -= 1 } }
        func isAcceptingNewConnections() -> Bool {
            let accepting = owner.state.withLock { $0.accepted < $0.limit }
            if !accepting { owner.noteFull() }
            return accepting
        }
    }

    var gate: Gate { Gate(owner: self) }

    /// The per-connection handler that counts the connection from its start to its end, before any decoder.
    func registration() -> Registration { Registration(owner: self) }

    /// The per-connection HTTP handler that reports requests starting and ending.
    func handler() -> Tracker { Tracker(owner: self) }

    /// A connection whose live session is open is never evicted as idle: --max-sessions and --sessions-per-client
    /// bound those. A socket without a session yet is evicted as an idle HTTP connection is.
    func hold(_ channel: any Channel) {
        state.withLock { $0.open[ObjectIdentifier(channel)]?.held = true }
    }

    /// Out of descriptors, accept fails, and NIO's back-off swallows the error without ending the retries: the
    /// listening channel gets a handler that sees it first (installed with the first connection, its parent).
    fileprivate func watchAccepts(_ server: (any Channel)?) {
        guard let server, state.withLock({ s in defer { s.watching = true }; return !s.watching }) else { return }
        server.eventLoop.execute { [self] in
            try? server.pipeline.syncOperations.addHandler(AcceptWatch(owner: self), position: .first)
        }
    }

    fileprivate func acceptFailed(_ error: IOError) {
        let now = ContinuousClock.now
        let (log, limit, victim) = state.withLock { s -> (Bool, Int, (any Channel)?) in
            s.limit = max(2, min(s.limit, s.open.count - 1))
            let victim = s.open.values.filter { !$0.busy && !$0.held }.min { $0.lastActive < $1.lastActive }
            if let victim { s.open[ObjectIdentifier(victim.channel)]?.busy = true }
            let log = s.lastExhausted.map { now - $0 >= Self.logInterval } ?? true
            if log { s.lastExhausted = now }
            return (log, s.limit, victim?.channel)
        }
        metrics.acceptFailed.increment()
        if let victim {
            metrics.connectionsEvicted.increment()
            victim.close(promise: nil)
        }
        if log {
            logger.error("accepting a connection failed (\(String(cString: strerror(error.errnoCode)))): out of file descriptors; at most \(limit) connections from now on (--max-connections), raise the limit (ulimit -n) for more (logged once a minute)")
        }
    }

    /// On the listening channel: sees accept's errors before NIO's back-off handler swallows them.
    final class AcceptWatch: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = any Channel
        let owner: ConnectionLimit
        init(owner: ConnectionLimit) { self.owner = owner }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode) { owner.acceptFailed(error) }
            context.fireErrorCaught(error)
        }
    }

    fileprivate func opened(_ channel: any Channel) {
        watchAccepts(channel.parent)
        let new = state.withLock { s -> Bool in
            guard s.open[ObjectIdentifier(channel)] == nil else { return false }
            s.open[ObjectIdentifier(channel)] = Entry(channel: channel, busy: false, lastActive: .now)
            return true
        }
        guard new else { return }
        metrics.connections.increment()
        evictIfFull(sparing: channel)
    }

    fileprivate func closed(_ channel: any Channel) {
        if state.withLock({ $0.open.removeValue(forKey: ObjectIdentifier(channel)) }) != nil { metrics.connections.decrement() }
    }

    /// A request (or a socket's message, or its opening) begins (`busy`) or ends on `channel`.
    func activity(_ channel: any Channel, busy: Bool) {
        state.withLock { s in
            s.open[ObjectIdentifier(channel)]?.busy = busy
            s.open[ObjectIdentifier(channel)]?.lastActive = .now
        }
    }

    /// At the limit, closes the connection idle longest past the grace; when none is, looks again after the grace.
    private func evictIfFull(sparing spared: (any Channel)?) {
        let now = ContinuousClock.now
        let (victim, recheck) = state.withLock { s -> ((any Channel)?, Bool) in
            guard s.open.count >= s.limit else { return (nil, false) }
            let idle = s.open.values.filter { !$0.busy && !$0.held && now - $0.lastActive >= Self.evictionGrace && $0.channel !== spared }
            if let oldest = idle.min(by: { $0.lastActive < $1.lastActive }) {
                s.open[ObjectIdentifier(oldest.channel)]?.busy = true  // closing: not chosen twice
                return (oldest.channel, false)
            }
            guard !s.recheckScheduled else { return (nil, false) }
            s.recheckScheduled = true
            return (nil, true)
        }
        if let victim {
            metrics.connectionsEvicted.increment()
            victim.close(promise: nil)
        } else if recheck, let loop = spared?.eventLoop ?? state.withLock({ $0.open.values.first?.channel.eventLoop }) {
            loop.scheduleTask(in: .milliseconds(Int64(Self.evictionGrace.components.seconds * 1000 + 50))) { [self] in
                state.withLock { $0.recheckScheduled = false }
                evictIfFull(sparing: nil)
            }
        }
    }

    fileprivate func noteFull() {
        let now = ContinuousClock.now
        let log = state.withLock { s -> Bool in
            guard s.lastLogged.map({ now - $0 >= Self.logInterval }) ?? true else { return false }
            s.lastLogged = now
            return true
        }
        metrics.acceptPaused.increment()
        if log {
            logger.warning("at --max-connections \(limit): new connections wait in the listen queue until one closes or an idle one is closed (logged once a minute)")
        }
        evictIfFull(sparing: nil)
    }

    /// Counts a connection from its start to its end, on its bytes (an upgradable pipeline decodes HTTP only later).
    final class Registration: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        let owner: ConnectionLimit

        init(owner: ConnectionLimit) { self.owner = owner }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { owner.opened(context.channel) }
        }

        func channelActive(context: ChannelHandlerContext) {
            owner.opened(context.channel)
            context.fireChannelActive()
        }

        func channelInactive(context: ChannelHandlerContext) {
            owner.closed(context.channel)
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { owner.closed(context.channel) }
    }

    /// Sees each request's head come in and its response's end go out.
    final class Tracker: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        let owner: ConnectionLimit

        init(owner: ConnectionLimit) { self.owner = owner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head = unwrapInboundIn(data) { owner.activity(context.channel, busy: true) }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { owner.activity(context.channel, busy: false) }
            context.write(data, promise: promise)
        }
    }
}
