import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// The libmicrohttpd bridge against real sockets.
@Suite("HTTP server over real sockets")
struct ServerTests {
    /// Starts a server with a few routes on an ephemeral port.
    static func withServer(bodyLimit: Int = 1024, _ body: (HTTPServer) async throws -> Void) async throws {
        var router = Router()
        router.add(
            Route("POST", "/echo") { request in
                .json(200, ["bytes": String(request.body.count), "name": request.parameters["name"] ?? ""])
            })
        router.add(Route("POST", "/big", bodyLimit: 4096) { request in .json(200, ["bytes": String(request.body.count)]) })
        router.add(
            Route("GET", "/slow") { _ in
                try? await Task.sleep(for: .milliseconds(300))
                return .json(200, ["slow": "done"])
            })
        router.add(Route("GET", "/peer") { request in .json(200, ["peer": request.peerAddress]) })
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.defaultBodyLimit = bodyLimit
        configuration.headerLimitBytes = 16 * 1024
        // libmicrohttpd notices some abandoned connections only at the idle timeout.
        configuration.connectionTimeoutSeconds = 1
        let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error, sink: MemorySink()))
        try server.start()
        do {
            try await body(server)
        } catch {
            await server.shutdown(grace: .seconds(2))
            throw error
        }
        await server.shutdown(grace: .seconds(2))
    }

    @Test func answersAnAsyncHandler() async throws {
        try await Self.withServer { server in
            let response = try await RawHTTPClient.postForm(port: server.port, "/echo", [("name", "a b")])
            #expect(response.status == 200)
            #expect(response.json?["name"] as? String == "a b")
            let peer = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/peer"))
            #expect(peer.json?["peer"] as? String == "127.0.0.1")
        }
    }

    /// A route's callback-shaped handler answers without a task: the server
    /// suspends the connection and the callback resumes it, here from a
    /// thread of its own (as SQLite's writer does after its commit), or at
    /// once; the async handler beside it is for in-process callers only.
    @Test func aDeferredRouteIsAnsweredFromItsCallback() async throws {
        var router = Router()
        let asyncHandlerRan = Locked(false)
        let limiter = FixedWindowRateLimiter(limit: 100, windowSeconds: 60) { 0 }
        let route = Route(
            "POST", "/write", throttle: limiter,
            deferred: { request, respond in
                guard request.parameters["now"] == nil else { return respond(.json(200, ["answered": "at once"])) }
                Thread { respond(.json(201, ["answered": "from another thread"])) }.start()
            },
            handler: { _ in
                asyncHandlerRan.withLock { $0 = true }
                return .empty(500)
            })
        #expect(route.middleware.isEmpty, "a throttle without shared counters is all precheck")
        router.add(route)
        let server = try startLocalServer(router)
        for _ in 0..<20 {
            let later = try await RawHTTPClient.postForm(port: server.port, "/write", [("token", "a")])
            #expect(later.status == 201 && later.json?["answered"] as? String == "from another thread")
            let now = try await RawHTTPClient.postForm(port: server.port, "/write", [("now", "1")])
            #expect(now.status == 200 && now.json?["answered"] as? String == "at once")
        }
        #expect(asyncHandlerRan.withLock { $0 } == false)
        #expect(await router.respond(to: Request(method: "POST", rawPath: "/write")).status == 500, "in process: the async handler")
        _ = await server.shutdown(grace: .seconds(2))
    }

    /// A throttle's shared-counter half is middleware, which needs a task;
    /// a throttle that is switched off (limit 0) has no such half, so its
    /// route keeps the task-free path even where instances share counters.
    @Test(arguments: [(limit: 100, shared: false, middleware: 0), (limit: 100, shared: true, middleware: 1), (limit: 0, shared: true, middleware: 0)])
    func aThrottleAddsMiddlewareOnlyWhenItCountsInSharedCounters(limit: Int, shared: Bool, middleware: Int) {
        struct Counter: SharedWindowCounter {
            func increment(key: String, windowStart: Int64, by hits: Int) async throws -> Int { hits }
            func count(key: String, windowStart: Int64) async throws -> Int { 0 }
        }
        let limiter = FixedWindowRateLimiter(limit: limit, windowSeconds: 60, shared: shared ? Counter() : nil) { 0 }
        let route = Route("POST", "/write", throttle: limiter, deferred: { _, respond in respond(.empty(204)) }, handler: { _ in .empty(204) })
        #expect(route.middleware.count == middleware)
    }

    @Test func declaredBodyOverTheCapIs413BeforeReading() async throws {
        try await Self.withServer { server in
            let response = try await RawHTTPClient.send(
                port: server.port,
                RawHTTPClient.request(
                    "POST", "/echo", headers: ["Content-Type": "application/x-www-form-urlencoded"], body: [UInt8](repeating: 0x61, count: 2000)))
            #expect(response.status == 413)
            #expect(response.json?["error"] as? String != nil)
            // A route may allow more.
            let allowed = try await RawHTTPClient.send(
                port: server.port,
                RawHTTPClient.request(
                    "POST", "/big", headers: ["Content-Type": "application/x-www-form-urlencoded"], body: [UInt8](repeating: 0x61, count: 2000)))
            #expect(allowed.status == 200)
            #expect(allowed.json?["bytes"] as? String == "2000")
        }
    }

    @Test func chunkedBodyOverTheCapIs413() async throws {
        try await Self.withServer { server in
            var request = Array(
                "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n"
                    .utf8)
            for _ in 0..<4 {
                request += Array("200\r\n".utf8) + [UInt8](repeating: 0x61, count: 512) + Array("\r\n".utf8)
            }
            request += Array("0\r\n\r\n".utf8)
            let response = try await RawHTTPClient.send(port: server.port, request)
            #expect(response.status == 413)
        }
    }

    @Test func clientThatVanishesMidBodyLeavesTheServerAnswering() async throws {
        try await Self.withServer { server in
            for _ in 0..<5 {
                var partial = RawHTTPClient.request("POST", "/echo", headers: ["Content-Type": "application/x-www-form-urlencoded"])
                partial = Array(
                    String(decoding: partial, as: UTF8.self).replacingOccurrences(of: "Content-Length: 0", with: "Content-Length: 900").utf8)
                partial += Array("name=partial".utf8)
                try await RawHTTPClient.send(port: server.port, partial, closeAfterSend: true)
            }
            let response = try await RawHTTPClient.postForm(port: server.port, "/echo", [("name", "after")])
            #expect(response.status == 200)
            #expect(response.json?["name"] as? String == "after")
            // Every abandoned request's state is freed.
            // Waited for, not timed: the minute only catches a leak.
            let freed = ContinuousClock.now + .seconds(60)
            while server.liveExchanges.load(ordering: .acquiring) > 0 && ContinuousClock.now < freed {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.liveExchanges.load(ordering: .acquiring) == 0)
        }
    }

    @Test func oversizedHeadersAreA4xxAndTheServerKeepsAnswering() async throws {
        try await Self.withServer { server in
            let query = (0..<10_000).map { "p\($0)=1" }.joined(separator: "&")
            let response = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/peer?\(query)"))
            #expect((400..<500).contains(response.status))
            let after = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/peer"))
            #expect(after.status == 200)
        }
    }

    @Test func shutdownLetsRunningRequestsFinish() async throws {
        try await Self.withServer { server in
            async let slow = RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/slow"))
            // The request under way, however long a busy machine takes to start it.
            let begun = ContinuousClock.now + .seconds(60)
            while server.requestsInFlight == 0 && ContinuousClock.now < begun { try await Task.sleep(for: .milliseconds(5)) }
            #expect(server.requestsInFlight == 1)
            // A grace far beyond the handler's 300 ms: only a stop that
            // abandoned the request would be unclean.
            let clean = await server.shutdown(grace: .seconds(60))
            #expect(clean)
            let response = try await slow
            #expect(response.status == 200)
            #expect(response.json?["slow"] as? String == "done")
            // No longer accepting.
            await #expect(throws: (any Error).self) {
                try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/peer"))
            }
        }
    }
}
