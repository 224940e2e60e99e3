/// A handler turns a request into a response; it never throws, so every
/// failure is a response the handler chose.
public typealias Handler = @Sendable (Request) async -> Response

/// Wraps a handler: runs before (and may answer instead of) the route.
public typealias Middleware = @Sendable (Request, Handler) async -> Response

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
    /// Runs in order before parameters are parsed (throttles, auth).
    public let middleware: [Middleware]
    /// Whether to parse query and body into `Request.parameters` first.
    public let parsesParameters: Bool
    public let handler: Handler
    /// An optional synchronous answer tried first on the server's own thread
    /// (no task, no suspend/resume): for answers already in memory, such as
    /// a cached feed. Returning nil falls through to `handler`. Routes with
    /// middleware never use it.
    public let immediate: (@Sendable (Request) -> Response?)?

    let segments: [Segment]

    public init(_ method: String, _ pattern: String, suffixes: [String] = [], bodyLimit: Int? = nil,
                errorStyle: ErrorStyle = .simple, middleware: [Middleware] = [], parsesParameters: Bool = true,
                immediate: (@Sendable (Request) -> Response?)? = nil, handler: @escaping Handler) {
        self.immediate = immediate
        self.method = method
        self.pattern = pattern
        self.suffixes = suffixes
        self.bodyLimit = bodyLimit
        self.errorStyle = errorStyle
        self.middleware = middleware
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
                guard isLast, let suffix = suffixes.first(where: { part == literal + $0 }) else { return nil }
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
    public var parameterLimit: Int

    public init(parameterLimit: Int = 1000) {
        self.parameterLimit = parameterLimit
    }

    public mutating func add(_ route: Route) {
        routes.append(route)
        routesBySegmentCount[route.segments.count, default: []].append(route)
    }

    /// The outcome of matching a request line.
    public enum Match: Sendable {
        case route(Route, captures: [String: String], suffix: String?)
        case methodNotAllowed(allowed: [String])
        case notFound
        case badPath(ParameterError)
    }

    /// Splits and strictly decodes the path; a single trailing slash is
    /// ignored (the apps call some paths with one).
    public static func pathSegments(_ rawPath: String) throws(ParameterError) -> [String] {
        let bytes = Array(rawPath.utf8)
        var segments: [String] = []
        var start = bytes.first == UInt8(ascii: "/") ? 1 : 0
        var index = start
        while index <= bytes.count {
            if index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                let isTrailingSlash = index == bytes.count && start == bytes.count && !segments.isEmpty
                if !isTrailingSlash {
                    segments.append(try PercentEncoding.decode(bytes[start..<index], plusAsSpace: false))
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

    /// Runs a matched request through the route's middleware, parameter
    /// parsing and handler.
    public func respond(to request: Request, match: Match) async -> Response {
        var request = request
        switch match {
        case .notFound:
            return .json(404, ["error": "Not Found"])
        case .badPath(let error):
            // No route was found for an undecodable path: a plain 400.
            return ErrorStyle.simple.response(status: 400, error: StatusText.phrase(400), messages: [error.message])
        case .methodNotAllowed(let allowed):
            return Response.json(405, ["error": "Method Not Allowed"]).adding(header: "Allow", allowed.joined(separator: ", "))
        case .route(let route, let captures, let suffix):
            request.routePattern = route.pattern
            request.pathParameters = captures
            if let suffix { request.pathParameters["format"] = suffix }
            let limit = parameterLimit
            let final: Handler = { request in
                var request = request
                if route.parsesParameters {
                    do throws(ParameterError) {
                        try request.parseParameters(limit: limit)
                    } catch {
                        return route.errorStyle.response(status: error.status, error: StatusText.phrase(error.status), messages: [error.message])
                    }
                }
                return await route.handler(request)
            }
            let chain = route.middleware.reversed().reduce(final) { next, middleware in
                { request in await middleware(request, next) }
            }
            return await chain(request)
        }
    }

    /// The synchronous answer of a route that has one, or nil when the
    /// request must go through the async path.
    public func respondImmediately(to request: Request, match: Match) -> Response? {
        guard case .route(let route, let captures, let suffix) = match, let immediate = route.immediate, route.middleware.isEmpty else {
            return nil
        }
        var request = request
        request.routePattern = route.pattern
        request.pathParameters = captures
        if let suffix { request.pathParameters["format"] = suffix }
        if route.parsesParameters {
            do throws(ParameterError) { try request.parseParameters(limit: parameterLimit) } catch { return nil }
        }
        return immediate(request)
    }

    /// Convenience for tests and in-process callers: match and respond.
    public func respond(to request: Request) async -> Response {
        await respond(to: request, match: match(method: request.method, rawPath: request.rawPath))
    }
}
