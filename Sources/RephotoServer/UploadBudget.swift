import Hummingbird
import Synchronization

/// How many request bodies may be held at once: those running and those queued for a pipeline
/// (`--concurrency` + `--queue-length`). Each body is buffered whole (up to `--max-body-bytes`), and without
/// a bound memory grew with the connections: 30 uploads of 60 MB held 2.2 GB (probe). Past the bound a new
/// upload is answered 503 before its body is read, and its connection closed.
final class UploadBudget: Sendable {
    let capacity: Int
    private let held = Mutex(0)

    init(capacity: Int) { self.capacity = capacity }

    func acquire() -> Bool {
        held.withLock { count in
            guard count < capacity else { return false }
            count += 1
            return true
        }
    }

    func release() { held.withLock { $0 -= 1 } }
}

struct UploadAdmission<Context: RequestContext>: RouterMiddleware {
    let budget: UploadBudget

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard RetakeServer.hasBody(request) else { return try await next(request, context) }
        guard budget.acquire() else {
            var busy = ServerError(.serviceUnavailable, code: "unavailable", kind: .unavailable,
                                   "\(budget.capacity) uploads in progress already (--concurrency + --queue-length): try again shortly")
            busy.retryAfterSeconds = 1
            busy.closesConnection = true
            throw busy
        }
        defer { budget.release() }
        return try await next(request, context)
    }
}
