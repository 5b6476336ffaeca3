import HTTPTypes
import Hummingbird
import Yams

/// 405 with `Allow` for a method openapi.yaml does not define on a path it does: a wrong method was answered
/// 404, as if the path did not exist. The paths and methods are read from the served openapi.yaml, so
/// the answer cannot drift from the documented API. HEAD is allowed wherever GET is.
struct MethodNotAllowed<Context: RequestContext>: RouterMiddleware {
    struct Route: Sendable {
        /// The path template's segments; "{name}" matches any one segment.
        let segments: [String]
        let methods: [String]
    }
    let routes: [Route]

    init(openAPI: String) {
        let spec = (try? Yams.load(yaml: openAPI)) as? [String: Any]
        let paths = spec?["paths"] as? [String: Any] ?? [:]
        let verbs: Set = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        routes = paths.map { path, item in
            var methods = ((item as? [String: Any]) ?? [:]).keys.filter(verbs.contains).map { $0.uppercased() }
            // HEAD goes with GET (RFC 9110 9.3.2): the router answers it with GET's headers, as a health check
            // behind a load balancer expects.
            if methods.contains("GET") && !methods.contains("HEAD") { methods.append("HEAD") }
            return Route(segments: path.split(separator: "/").map(String.init), methods: methods.sorted())
        }
    }

    func route(for path: String) -> Route? {
        let segments = path.split(separator: "/")
        return routes.first { route in
            route.segments.count == segments.count && zip(route.segments, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let route = route(for: request.uri.path), !route.methods.contains(request.method.rawValue) {
            let allowed = route.methods.joined(separator: ", ")
            var error = ServerError(.methodNotAllowed, code: "method_not_allowed",
                                    "\(request.method.rawValue.prefix(32)) is not allowed on \(request.uri.path.prefix(200)) (allowed: \(allowed))")
            error.allow = allowed
            throw error
        }
        return try await next(request, context)
    }
}
