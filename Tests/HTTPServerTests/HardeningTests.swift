import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// What an attacker on the open internet tries against the server itself:
/// smuggling-shaped framing, slow and idle clients, one client hoarding
/// connections, and stops under load.
@Suite("HTTP server hardening over real sockets")
struct HardeningTests {
    static func withServer(
        _ configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (HTTPServer) async throws -> Void
    ) async throws {
        var router = Router()
        router.add(Route("POST", "/echo") { request in .json(200, ["bytes": String(request.body.count)]) })
        router.add(Route("GET", "/hello") { _ in .json(200, ["hello": "world"]) })
        router.add(
            Route("GET", "/slow") { _ in
                try? await Task.sleep(for: .milliseconds(200))
                return .json(200, ["slow": "done"])
            })
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.headerTimeoutSeconds = 1
        // Longer than any wait below: a connection closed within one was
        // closed by the rule under test, never by the keep-alive limit.
        configuration.connectionTimeoutSeconds = 120
        configure(&configuration)
        let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error, sink: MemorySink()))
        try server.start()
        do { try await body(server) } catch {
            await server.shutdown(grace: .seconds(2))
            throw error
        }
        await server.shutdown(grace: .seconds(2))
    }

    /// Sends raw bytes on a kept-alive connection and reads the answer.
    static func exchange(_ port: Int, _ request: String) async throws -> (status: Int?, closedPromptly: Bool, response: RawResponse?) {
        let socket = try RawSocket(port: port)
        socket.send(Array(request.utf8))
        // A generous wait: a busy machine (every suite starting at once on
        // two cores) can hold the answer back for seconds. A close within it
        // is the server's answer to the request, well before the 120 s
        // keep-alive limit these servers are given.
        let (response, closed) = await socket.response(timeoutSeconds: 60)
        return (response?.status, closed, response)
    }

    static let framingCases: [(name: String, request: String)] = [
        ("two different Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef"),
        (
            "Content-Length with Transfer-Encoding",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        ("a coding besides chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
        ("an unknown coding", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n"),
        ("chunked with trailing space", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \r\n\r\n0\r\n\r\n"),
        (
            "two Transfer-Encoding headers",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        ("chunked on HTTP/1.0", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("a Content-Length that is not a number", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: +5\r\n\r\nabcde"),
        ("NUL in the path", "GET /hel\u{0}lo HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("NUL in the method", "GE\u{0}T /hello HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("NUL inside a header value", "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: ab\u{0}cd\r\n\r\n"),
        ("NUL ending the last header value", "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: ab\u{0}\r\n\r\n"),
        ("NUL ending a header value", "GET /hello HTTP/1.1\r\nX-A: ab\u{0}\r\nHost: x\r\n\r\n"),
        ("bare CR in a header value", "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: ab\rcd\r\n\r\n"),
        ("bare CR in the path", "GET /hel\rlo HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("a folded header line", "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: ab\r\n cd\r\n\r\n"),
        ("a control byte in a header value", "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: a\u{1}b\r\n\r\n"),
        ("a header name that is not a token", "GET /hello HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n"),
    ]

    @Test func malformedFramingIsA400AndTheConnectionCloses() async throws {
        try await Self.withServer { server in
            for (name, request) in Self.framingCases {
                let (status, closedPromptly, response) = try await Self.exchange(server.port, request)
                #expect(status == 400, "\(name)")
                #expect(closedPromptly, "\(name): the connection closes at once")
                #expect(response?.header("Connection")?.lowercased() == "close", "\(name)")
            }
            // Still answering, and clean requests of the same shapes pass.
            let clean: [String] = [
                "GET /hello HTTP/1.1\r\nHost: x\r\nX-A:\r\nX-B:   spaced  \r\nConnection: close\r\n\r\n",
                "GET /hello HTTP/1.1\nHost: x\nConnection: close\n\n",
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                "GET /hello?x=%20y&a=b HTTP/1.1\r\nHost: x\r\nCookie: a=b; c=d\r\nConnection: close\r\n\r\n",
            ]
            for request in clean {
                #expect(try await Self.exchange(server.port, request).status == 200, "\(request.debugDescription)")
            }
        }
    }

    @Test func headWorksWhereverGetDoes() async throws {
        try await Self.withServer { server in
            let socket = try RawSocket(port: server.port)
            socket.send(Array("HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            // Reading stops at the server's close, so a long limit costs nothing.
            let (bytes, _) = await socket.readOffPool(timeoutSeconds: 300)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.contains("Content-Length: 17"), "the length GET would send")
            #expect(text.hasSuffix("\r\n\r\n"), "no body")
            let post = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("HEAD", "/echo"))
            #expect(post.status == 405)
            let allowed = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("DELETE", "/hello"))
            #expect(allowed.header("Allow")?.contains("HEAD") == true)
        }
    }

    @Test func aQueryOfHundredsOfParametersIsAnsweredAndLeavesNothingBehind() async throws {
        // 400 parameters (2.7 KB) once exhausted libmicrohttpd's connection
        // pool while it parsed them for itself: never answered, and still
        // counted at the next stop, which then waited out its deadline.
        var router = Router()
        router.add(Route("GET", "/hello", parsesParameters: false) { _ in .json(200, ["hello": "world"]) })
        router.add(Route("GET", "/params") { request in .json(200, ["p399": request.parameters["p399"] ?? "none"]) })
        let server = try startLocalServer(router)
        for (count, path, status) in [(400, "/hello", 200), (400, "/params", 200), (1001, "/params", 422), (3000, "/hello", 414)] {
            let query = (0..<count).map { "p\($0)=1" }.joined(separator: "&")
            let response = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "\(path)?\(query)"))
            #expect(response.status == status, "\(count) parameters on \(path)")
        }
        #expect(await Self.waitFor { server.liveExchanges.load(ordering: .acquiring) == 0 }, "no request stays counted once answered")
        // A stop that waited out its deadline would take the whole minute;
        // half of it only catches that, however busy the machine.
        let started = ContinuousClock.now
        #expect(await server.shutdown(grace: .seconds(60)), "a clean stop")
        #expect(ContinuousClock.now - started < .seconds(30), "without waiting out the deadline")
    }

    /// Waits for a condition (checked every 10 ms); false only after a
    /// minute, which catches a hang and never a busy machine.
    static func waitFor(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    @Test func aSlowlorisFromOneAddressDoesNotDelayAnother() async throws {
        // Judged by events, not by the clock: 127.0.0.1 is answered while the
        // attacker's admitted sockets are all still open (their head timeout
        // is a minute away), so the answer was not queued behind them.
        try await Self.withServer({
            $0.connectionsPerClient = 16
            $0.headerTimeoutSeconds = 60
        }) { server in
            // 200 sockets from 127.0.0.2, each trickling a head that never ends.
            var slow: [RawSocket] = []
            for _ in 0..<200 {
                guard let socket = try? RawSocket(port: server.port, source: "127.0.0.2") else { continue }
                socket.send(Array("GET /hello HTTP/1.1\r\nHost: x\r\n".utf8))
                slow.append(socket)
            }
            // The sockets over the cap are closed at once; the client sees it a little later.
            #expect(
                await Self.waitFor { server.openConnections <= 16 && slow.filter { !$0.isClosedByServer }.count <= 16 },
                "127.0.0.2 holds at most its share")
            let admitted = slow.filter { !$0.isClosedByServer }
            #expect(!admitted.isEmpty)
            let response = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/hello"), source: "127.0.0.1")
            #expect(response.status == 200)
            #expect(admitted.allSatisfy { !$0.isClosedByServer }, "127.0.0.1 was served while every slow head was still open")
        }
    }

    @Test func aHeadTrickledLineByLineIsStillCutOffAtItsTimeout() async throws {
        // Another header line every quarter second does not keep a head
        // alive: it must be complete within the timeout of its beginning.
        try await Self.withServer({ $0.headerTimeoutSeconds = 2 }) { server in
            let slow = (0..<5).compactMap { _ in try? RawSocket(port: server.port, source: "127.0.0.2") }
            slow.forEach { $0.send(Array("GET /hello HTTP/1.1\r\nHost: x\r\n".utf8)) }
            let deadline = ContinuousClock.now + .seconds(60)  // only catches a head kept alive forever
            while !slow.allSatisfy(\.isClosedByServer) && ContinuousClock.now < deadline {
                slow.forEach { $0.send(Array("X-Slow: 1\r\n".utf8)) }
                try await Task.sleep(for: .milliseconds(250))
            }
            #expect(slow.allSatisfy { $0.isClosedByServer }, "every slow head was cut off")
            #expect(await Self.waitFor { server.openConnections == 0 })
        }
    }

    @Test func aSlowBodyIsCutOffAndAVanishedClientIsNoticed() async throws {
        try await Self.withServer({ $0.minimumBodyBytesPerSecond = 1000 }) { server in
            let slow = try RawSocket(port: server.port)
            slow.send(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n".utf8))
            let deadline = ContinuousClock.now + .seconds(60)  // only catches a body kept alive forever
            while !slow.isClosedByServer && ContinuousClock.now < deadline {
                slow.send([0x61])
                try await Task.sleep(for: .milliseconds(250))
            }
            #expect(slow.isClosedByServer, "a body of a few bytes a second is cut off after the grace")
        }
    }

    @Test func aClientThatVanishesMidBodyIsFreedAtOnce() async throws {
        // Its own server, whose body-rate rule (a grace of the 100 s head
        // timeout, then 1 byte a second) cuts this client only after the
        // minute waited below: what frees it is noticing the hang-up,
        // however long a busy machine takes to look.
        try await Self.withServer({
            $0.minimumBodyBytesPerSecond = 1
            $0.headerTimeoutSeconds = 100
        }) { server in
            let gone = try RawSocket(port: server.port)
            gone.send(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\nabc".utf8))
            #expect(await Self.waitFor { server.liveExchanges.load(ordering: .acquiring) == 1 })
            shutdown(gone.fd, Int32(SHUT_WR))
            // Freed at once, not at the 120 s idle timeout.
            #expect(await Self.waitFor { server.liveExchanges.load(ordering: .acquiring) == 0 })
        }
    }

    @Test func idleConnectionsGiveWayNearTheLimit() async throws {
        try await Self.withServer({
            $0.connectionLimit = 40
            $0.connectionsPerClient = 0
            $0.threads = 1
        }) { server in
            var idle: [RawSocket] = []
            for _ in 0..<40 { if let socket = try? RawSocket(port: server.port, source: "127.0.0.3") { idle.append(socket) } }
            #expect(await Self.waitFor { server.openConnections <= 36 }, "the longest-idle ones were closed to keep room")
            let response = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/hello"))
            #expect(response.status == 200)
        }
    }

    @Test func aRequestJustBegunOutlivesLongIdleConnectionsNearTheLimit() async throws {
        // A large region's busiest hour: phones' keep-alive connections fill
        // the server and a rider's request arrives as the limit is neared.
        // The connections idle longest give way, not the request under way.
        try await Self.withServer({
            $0.connectionLimit = 40
            $0.connectionsPerClient = 0
            $0.threads = 1
            // The rider's head stays open on purpose: the head timeout
            // (1 s elsewhere in this suite) would cut it on a busy machine
            // before eviction is reached, which is what first failed on CI.
            $0.headerTimeoutSeconds = 120
        }) { server in
            var idle: [RawSocket] = []
            for _ in 0..<30 { if let socket = try? RawSocket(port: server.port, source: "127.0.0.3") { idle.append(socket) } }
            #expect(await Self.waitFor { server.openConnections == 30 })
            let rider = try RawSocket(port: server.port, source: "127.0.0.4")
            #expect(await Self.waitFor { server.openConnections == 31 })
            #expect(rider.send(Array("GET /hello HTTP/1.1\r\nHost: x\r\n".utf8)))
            #expect(await Self.waitFor { server.connectionGuard.requestsUnderWay == 1 }, "the rider's request line was read")
            for _ in 0..<10 { if let socket = try? RawSocket(port: server.port, source: "127.0.0.5") { idle.append(socket) } }
            #expect(await Self.waitFor { server.connectionsClosedByGuard >= 5 }, "room was made near the limit")
            #expect(!rider.isClosedByServer, "the request under way was spared")
            #expect(rider.send(Array("Connection: close\r\n\r\n".utf8)))
            // Reading stops at the server's close, so a long limit costs nothing.
            let answer = await rider.response(timeoutSeconds: 30)
            #expect(answer.response?.status == 200)
            withExtendedLifetime(idle) {}
        }
    }

    @Test func slowHeadsFromManyAddressesDoNotCrowdOutABystander() async throws {
        // 6 addresses x 30 half-sent requests, each address under its cap of
        // 32, against a limit of 120: past the budget for requests under
        // way (60) the slowest are cut, and near the limit they give way
        // before any newcomer does.
        try await Self.withServer({
            $0.connectionLimit = 120
            $0.connectionsPerClient = 32
            $0.headerTimeoutSeconds = 30
        }) { server in
            var slow: [(address: Int, socket: RawSocket)] = []
            func attack(from address: Int) {
                guard let socket = try? RawSocket(port: server.port, source: "127.0.1.\(address)") else { return }
                socket.send(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-".utf8))
                slow.append((address, socket))
            }
            for address in 2...7 { for _ in 0..<30 { attack(from: address) } }
            var statuses: [Int] = []
            for _ in 0..<30 {
                let response = try? await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/hello"), source: "127.0.0.1")
                statuses.append(response?.status ?? 0)
                // The attackers come back for every slot they lost.
                let lost = slow.filter { $0.socket.isClosedByServer }
                slow.removeAll { $0.socket.isClosedByServer }
                for (address, _) in lost { attack(from: address) }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "the bystander's success rate: \(statuses.filter { $0 == 200 }.count) of 30")
            #expect(server.liveConnections <= 120, "the limit holds for what is served")
            // Connections cut are counted until libmicrohttpd lets them go,
            // later on a busy machine: waited for, not timed.
            var settled = false
            for _ in 0..<600 where !settled {
                settled = server.openConnections <= 120
                if !settled { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(settled, "\(server.openConnections) open 30 s later")
            withExtendedLifetime(slow) {}
        }
    }

    @Test func aStopUnderKeepAliveLoadAnswersEveryRequestAndNeverAborts() async throws {
        for _ in 0..<5 {
            var router = Router()
            let started = Locked(0)
            router.add(
                Route("GET", "/slow") { _ in
                    started.withLock { $0 += 1 }
                    try? await Task.sleep(for: .milliseconds(30))
                    return .json(200, ["slow": "done"])
                })
            var configuration = ServerConfiguration()
            configuration.host = "127.0.0.1"
            configuration.port = 0
            let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error, sink: MemorySink()))
            try server.start()
            let port = server.port
            let answered = Locked(0)
            let broken = Locked<[String]>([])
            // 50 keep-alive clients, each sending request after request.
            let clients = (0..<50).map { _ in
                Thread.detachedLoop {
                    guard let socket = try? RawSocket(port: port) else { return }
                    while true {
                        guard socket.send(Array("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) else { return }
                        let (bytes, closed) = socket.read(timeoutSeconds: 0.5)
                        let text = String(decoding: bytes, as: UTF8.self)
                        if text.hasPrefix("HTTP/1.1 200") && text.hasSuffix(#"{"slow":"done"}"#) {
                            answered.withLock { $0 += 1 }
                        } else if text.hasPrefix("HTTP/1.1 503") && text.contains("shutting down") {
                            // Arrived after the gate closed (a loaded machine starts
                            // these threads late): refused in full, which is fine.
                        } else if !text.isEmpty {
                            broken.withLock { $0.append(text) }
                        }
                        if closed || text.lowercased().contains("connection: close") { return }
                    }
                }
            }
            // Stop while requests are being handled: once the first has begun
            // (a fixed wait is too short when the machine is busy), plus a little.
            let begun = ContinuousClock.now + .seconds(10)
            while started.value == 0 && ContinuousClock.now < begun { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(50))
            // The grace only catches a hang: on a busy machine the requests
            // begun may wait seconds for the pool before they finish.
            let clean = await server.shutdown(grace: .seconds(120))
            clients.forEach { $0.wait() }
            #expect(clean)
            #expect(server.requestsInFlight == 0)
            #expect(answered.value > 0)
            #expect(broken.value.isEmpty, "every request begun was answered in full: \(broken.value.prefix(2))")
        }
    }
}

extension Thread {
    /// Runs `body` on a new thread; `wait()` on the result joins it.
    static func detachedLoop(_ body: @escaping @Sendable () -> Void) -> Joinable {
        let joinable = Joinable()
        Thread {
            body()
            joinable.done.signal()
        }.start()
        return joinable
    }

    final class Joinable: Sendable {
        let done = DispatchSemaphore(value: 0)
        func wait() { done.wait() }
    }
}
