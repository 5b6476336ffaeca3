import Hummingbird
import NIOCore
import Synchronization

/// How many request bodies may be held at once: those running and those queued for a pipeline
/// (`--concurrency` + `--queue-length`), and how many of them one client address may hold
/// (`--uploads-per-client`). Each body is buffered whole (up to `--max-body-bytes`). Past either bound a new
/// upload is answered 503 before its body is read, and its connection closed. A live session's socket holds a
/// slot while a binary message of its arrives (`SocketIntake`), and past the bounds is refused the same way. Uploads still receiving their
/// body are cut when shutdown begins: a drain waits for work being computed, not for slow senders.
final class UploadBudget: Sendable {
    let capacity: Int
    let perClient: Int

    private struct State {
        var held = 0
        var byClient: [String: Int] = [:]
        /// Connections whose body is still arriving, by an id of the admission.
        var receiving: [Int: (channel: any Channel, body: RetakeRequestContext.BodyState)] = [:]
        var nextId = 0
        var cut = false
    }
    private let state = Mutex(State())

    enum Refusal: Error { case full, client }

    init(capacity: Int, perClient: Int) {
        self.capacity = capacity
        self.perClient = max(1, min(perClient, capacity))
    }

    /// A slot for `client`, released by `release`; the id it returns names the admission.
    func acquire(client: String?, channel: (any Channel)? = nil, body: RetakeRequestContext.BodyState? = nil) -> Result<Int, Refusal> {
        state.withLock { s in
            guard s.held < capacity, !s.cut else { return .failure(.full) }
            if let client {
                guard s.byClient[client, default: 0] < perClient else { return .failure(.client) }
                s.byClient[client, default: 0] += 1
            }
            s.held += 1
            s.nextId += 1
            if let channel, let body { s.receiving[s.nextId] = (channel, body) }
            return .success(s.nextId)
        }
    }

    /// The answer's message for a refusal.
    func message(_ refusal: Refusal) -> String {
        refusal == .full
            ? "\(capacity) uploads in progress already (--concurrency + --queue-length): try again shortly"
            : "\(perClient) uploads from this client address in progress already (--uploads-per-client): try again when one ends"
    }

    func release(_ id: Int, client: String?) {
        state.withLock { s in
            s.held -= 1
            s.receiving[id] = nil
            guard let client else { return }
            if let n = s.byClient[client], n > 1 { s.byClient[client] = n - 1 } else { s.byClient[client] = nil }
        }
    }

    /// Closes every connection whose upload has not been read whole, and admits no more (shutdown).
    func cutUnread() {
        let unread = state.withLock { s -> [any Channel] in
            s.cut = true
            return s.receiving.values.filter { !$0.body.read }.map(\.channel)
        }
        for channel in unread { channel.close(promise: nil) }
    }
}

struct UploadAdmission: RouterMiddleware {
    typealias Context = RetakeRequestContext
    let budget: UploadBudget

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard RetakeServer.hasBody(request) else { return try await next(request, context) }
        let client = context.clientAddress
        switch budget.acquire(client: client, channel: context.channel, body: context.body) {
        case .success(let id):
            defer { budget.release(id, client: client) }
            return try await next(request, context)
        case .failure(let refusal):
            var busy = ServerError(.serviceUnavailable, code: "unavailable", kind: .unavailable, budget.message(refusal))
            busy.retryAfterSeconds = 1
            busy.closesConnection = true
            throw busy
        }
    }
}
