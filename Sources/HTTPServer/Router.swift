/// A handler turns a request into a response; it never throws, so every
/// failure is a response the handler chose.
public typealias Handler = @Sendable (Request) async -> Response

/// Wraps a handler: runs before (and may answer instead of) the route.
public typealias Middleware = @Sendable (Request, Handler) async -> Response

/// A check that needs no I/O (a throttle, a size cap): run on the server's
/// own thread before the request is handed to a task; a response answers
/// the request there and then, nil lets it through.
public typealias Precheck = @Sendable (Request) -> Response?

/// A handler shaped as a callback: it answers by calling `respond` once, from
/// any thread, and needs no task (the server suspends the connection and
/// resumes it from `respond`).
public typealias DeferredHandler = @Sendable (Request, @escaping @Sendable (Response) -> Void) -> Void

/// Who may call a route, declared with it, so the whole table of guards is
/// one list a test can read.
public enum Access: Sendable, Hashable, CustomStringConvertible {
    /// Anyone, unthrottled (reads, health, static files).
    case open
    /// Anyone, within a per-client limit (its name).
    case throttled(String)
    /// A caller with an admin API key of this scope (`any`, `push`), acting
    /// on the object the route names (`region`, `alert`, ..., or `none`),
    /// which is resolved and checked before the handler runs.
    case apiKey(String, object: String)
    /// A signed-in console user allowed this action (`read`, `author`, ...).
    case session(String)
    /// A caller presenting a shared secret (a webhook's).
    case secret(String)

    public var description: String {
        switch self {
        case .open: return "open"
        case .throttled(let name): return "throttled(\(name))"
        case .apiKey(let scope, let object): return "api key(\(scope), on \(object))"
        case .session(let action): return "session(\(action))"
        case .secret(let name): return "secret(\(name))"
        }
    }
}

/// One route: a method, a path pattern whose `:name` segments capture values,
/// and what the route allows beyond the default. A class, so matching a
/// request against many routes copies nothing.
public final class Route: Sendable {
    public let method: String
    /// e.g. `/api/v2/regions/:region/push_registrations`.
    public let pattern: String
    /// Format suffixes the apps append to the last segment (`.json`, `.pb`).
    public let suffixes: [String]
    /// Largest accepted body in bytes (nil = the server's default).
    public let bodyLimit: Int?
    /// The error shape this route's clients parse.
    public let errorStyle: ErrorStyle
    /// Run in order on the server's thread before parameters are parsed;
    /// the first answer wins (throttles).
    public let prechecks: [Precheck]
    /// Runs in order after parameters are parsed, in the request's task
    /// (checks that need I/O, such as an API key lookup).
    public let middleware: [Middleware]
    /// Whether to parse query and body into `Request.parameters` first.
    public let parsesParameters: Bool
    public let handler: Handler
    /// An optional synchronous answer tried first on the server's own thread
    /// (no task, no suspend/resume): for answers already in memory, such as
    /// a cached feed. Returning nil falls through to `handler`. Routes with
    /// middleware never use it.
    public let immediate: (@Sendable (Request) -> Response?)?
    /// An optional callback-shaped handler the server uses in place of
    /// `handler` for a route without middleware: no task and no
    /// continuation, for a write whose storage can answer from its own
    /// thread. `handler` must do the same (in-process callers use it).
    public let deferred: DeferredHandler?
    /// Who may call it (see `Access`).
    public let access: Access

    let segments: [Segment]

    /// - Parameters:
    ///   - access: who may call it; a route with a `throttle` is `.throttled` by it unless told otherwise.
    ///   - throttle: a per-client limit checked before anything else: on the
    ///     server's thread, and again against the counts all instances share
    ///     when there are any.
    public init(
        _ method: String, _ pattern: String, suffixes: [String] = [], bodyLimit: Int? = nil,
        errorStyle: ErrorStyle = .simple, access: Access? = nil, throttle: FixedWindowRateLimiter? = nil, prechecks: [Precheck] = [],
        middleware: [Middleware] = [], parsesParameters: Bool = true,
        immediate: (@Sendable (Request) -> Response?)? = nil, deferred: DeferredHandler? = nil, handler: @escaping Handler
    ) {
        self.immediate = immediate
        self.deferred = deferred
        self.prechecks = (throttle.map { [$0.precheck(errorStyle: errorStyle)] } ?? []) + prechecks
        self.access = access ?? throttle.map { .throttled($0.name) } ?? .open
        self.method = method
        self.pattern = pattern
        self.suffixes = suffixes
        self.bodyLimit = bodyLimit
        self.errorStyle = errorStyle
        // The throttle's second half only exists with shared counters and a
        // limit: without them the precheck is the whole throttle, and a route
        // with no middleware may be answered without a task.
        self.middleware =
            (throttle.flatMap { $0.shared == nil || $0.limit <= 0 ? nil : [$0.middleware(errorStyle: errorStyle)] } ?? []) + middleware
        self.parsesParameters = parsesParameters
        self.handler = handler
        self.segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            part.hasPrefix(":") ? .capture(String(part.dropFirst())) : .literal(String(part))
        }
    }

    enum Segment: Sendable {
        case literal(String)
        case capture(String)
    }

    /// Matches decoded path segments; returns captures and the suffix used.
    func match(_ path: [String]) -> (captures: [String: String], suffix: String?)? {
        guard path.count == segments.count else { return nil }
        var captures: [String: String] = [:]
        var usedSuffix: String?
        for (index, segment) in segments.enumerated() {
            var part = path[index]
            let isLast = index == segments.count - 1
            switch segment {
            case .literal(let literal):
                if part == literal { continue }
                // The prefix first: most routes compared differ in it, and
                // then no string is built per suffix.
                guard isLast, !suffixes.isEmpty, part.hasPrefix(literal), let suffix = suffixes.first(where: { part == literal + $0 }) else {
                    return nil
                }
                usedSuffix = suffix
            case .capture(let name):
                if isLast, let suffix = suffixes.first(where: { part.hasSuffix($0) && part.count > $0.count }) {
                    part.removeLast(suffix.count)
                    usedSuffix = suffix
                }
                captures[name] = part
            }
        }
        return (captures, usedSuffix)
    }
}

/// Chooses the route for a request and runs it. Unknown paths answer a JSON
/// 404, known paths with another method a JSON 405.
public struct Router: Sendable {
    public private(set) var routes: [Route] = []
    /// Routes by their number of path segments, so a request is compared
    /// only with routes of its own length.
    private var routesBySegmentCount: [Int: [Route]] = [:]
    /// Most parameters a request may carry (query plus body).
    var parameterLimit: Int
    /// The answers for unknown paths under a prefix (a console's own page);
    /// the longest matching prefix wins, else the JSON 404.
    private var notFoundAnswers: [(prefix: String, answer: @Sendable (Request) -> Response)] = []

    /// Unknown paths under `prefix` (`/admin`) get `answer` instead of the JSON 404.
    public mutating func answerNotFound(under prefix: String, _ answer: @escaping @Sendable (Request) -> Response) {
        notFoundAnswers.append((prefix, answer))
        notFoundAnswers.sort { $0.prefix.count > $1.prefix.count }
    }

    public init(parameterLimit: Int = 1000) {
        self.parameterLimit = parameterLimit
    }

    public mutating func add(_ route: Route) {
        routes.append(route)
        routesBySegmentCount[route.segments.count, default: []].append(route)
    }

    /// Two routes for the same method and pattern: the second would never answer.
    public struct Conflict: Error, CustomStringConvertible {
        public let method: String, pattern: String
        public var description: String { "two routes for \(method) \(pattern)" }
    }

    /// Adds routes, refusing one whose method and pattern another has (a
    /// server refuses to start on it rather than leave one unreachable).
    public mutating func register(_ added: [Route]) throws(Conflict) {
        var taken = Set(routes.map { "\($0.method) \($0.pattern)" })
        for route in added {
            guard taken.insert("\(route.method) \(route.pattern)").inserted else { throw Conflict(method: route.method, pattern: route.pattern) }
            add(route)
        }
    }

    /// The outcome of matching a request line.
    public enum Match: Sendable {
        case route(Route, captures: [String: String], suffix: String?)
        case methodNotAllowed(allowed: [String])
        case notFound
        case badPath(ParameterError)
    }

    /// Splits and strictly decodes the path; a single trailing slash is
    /// ignored (the apps call some paths with one), and so are extra leading
    /// slashes (Android joins a base URL ending in `/` and `/api/...` into
    /// `//api/...`).
    static func pathSegments(_ rawPath: String) throws(ParameterError) -> [String] {
        var rawPath = rawPath
        return try rawPath.withUTF8 { bytes in Result { () throws(ParameterError) in try pathSegments(bytes: bytes) } }.get()
    }

    private static func pathSegments(bytes: UnsafeBufferPointer<UInt8>) throws(ParameterError) -> [String] {
        var segments: [String] = []
        var start = 0
        while start < bytes.count && bytes[start] == UInt8(ascii: "/") { start += 1 }
        if start == bytes.count { return [] }
        var index = start
        while index <= bytes.count {
            if index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                let isTrailingSlash = index == bytes.count && start == bytes.count && !segments.isEmpty
                if !isTrailingSlash {
                    segments.append(try PercentEncoding.decode(UnsafeBufferPointer(rebasing: bytes[start..<index]), plusAsSpace: false))
                }
                start = index + 1
            }
            index += 1
        }
        return segments
    }

    /// Finds the route for a method and raw path.
    public func match(method: String, rawPath: String) -> Match {
        let segments: [String]
        do { segments = try Self.pathSegments(rawPath) } catch { return .badPath(error) }
        var allowed: [String] = []
        // HEAD is answered wherever GET is (libmicrohttpd drops the body).
        let wanted = method == "HEAD" ? "GET" : method
        for route in routesBySegmentCount[segments.count] ?? [] {
            guard let (captures, suffix) = route.match(segments) else { continue }
            if route.method == wanted { return .route(route, captures: captures, suffix: suffix) }
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    /// What to do with a request once everything that needs no I/O is done.
    public enum Preparation: Sendable {
        /// Answered without I/O: an unknown path, a throttle, unusable
        /// parameters, or an answer the route holds in memory.
        case answered(Response)
        /// Parameters parsed; the route's middleware and handler must run.
        case dispatch(Request, Route)
    }

    /// The part of answering that needs no I/O, run on the server's own
    /// thread: match outcomes, the route's prechecks, parameter parsing and
    /// its `immediate` answer. Refusals (404, 405, 422, 429) therefore never
    /// cost a task or a suspend/resume round trip.
    public func prepare(_ request: Request, match: Match) -> Preparation {
        var request = request
        switch match {
        case .notFound:
            let path = request.rawPath
            if let custom = notFoundAnswers.first(where: { path == $0.prefix || path.hasPrefix($0.prefix + "/") }) {
                return .answered(custom.answer(request))
            }
            return .answered(.json(404, ["error": "Not Found"]))
        case .badPath(let error):
            // No route was found for an undecodable path: a plain 400.
            return .answered(ErrorStyle.simple.response(status: 400, error: StatusText.phrase(400), messages: [error.message]))
        case .methodNotAllowed(let allowed):
            return .answered(Response.json(405, ["error": "Method Not Allowed"]).adding(header: "Allow", allowed.joined(separator: ", ")))
        case .route(let route, let captures, let suffix):
            request.routePattern = route.pattern
            request.pathParameters = captures
            if let suffix { request.pathParameters["format"] = suffix }
            for precheck in route.prechecks {
                if let answer = precheck(request) { return .answered(answer) }
            }
            if route.parsesParameters {
                do throws(ParameterError) {
                    try request.parseParameters(limit: parameterLimit)
                } catch {
                    return .answered(
                        route.errorStyle.response(status: error.status, error: StatusText.phrase(error.status), messages: [error.message]))
                }
            }
            if route.middleware.isEmpty, let immediate = route.immediate, let answer = immediate(request) {
                return .answered(answer)
            }
            return .dispatch(request, route)
        }
    }

    /// Runs a prepared request through the route's middleware and handler.
    public func run(_ request: Request, route: Route) async -> Response {
        let chain = route.middleware.reversed().reduce(route.handler) { next, middleware in
            { request in await middleware(request, next) }
        }
        return await chain(request)
    }

    /// Prepares and runs a matched request.
    public func respond(to request: Request, match: Match) async -> Response {
        switch prepare(request, match: match) {
        case .answered(let response): return response
        case .dispatch(let prepared, let route): return await run(prepared, route: route)
        }
    }

    /// Convenience for tests and in-process callers: match and respond.
    public func respond(to request: Request) async -> Response {
        await respond(to: request, match: match(method: request.method, rawPath: request.rawPath))
    }
}
