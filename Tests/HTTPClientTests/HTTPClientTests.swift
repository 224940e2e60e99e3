import Foundation
import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import HTTPClient

@Suite("libcurl multi HTTP client against a local server")
struct HTTPClientTests {
    final class Counter: Sendable {
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
    }

    static func withPeer(_ body: (Int, Counter) async throws -> Void) async throws {
        let counter = Counter()
        var router = Router()
        router.add(
            Route("GET", "/hello") { request in
                .json(200, ["hello": request.parameters["name"] ?? "", "ua": request.header("user-agent") ?? ""])
            })
        router.add(
            Route("POST", "/echo", parsesParameters: false) { request in
                Response.bytes(201, contentType: "application/octet-stream", request.body).adding(header: "X-Method", request.method)
                    .adding(header: "X-Type", request.header("content-type") ?? "")
            })
        router.add(
            Route("DELETE", "/echo", parsesParameters: false) { request in .bytes(200, contentType: "text/plain", Array(request.method.utf8)) })
        router.add(
            Route("GET", "/slow") { _ in
                let now = counter.running.add(1, ordering: .relaxed).newValue
                var peak = counter.peak.load(ordering: .relaxed)
                while now > peak, !counter.peak.compareExchange(expected: peak, desired: now, ordering: .relaxed).exchanged {
                    peak = counter.peak.load(ordering: .relaxed)
                }
                try? await Task.sleep(for: .milliseconds(100))
                counter.running.subtract(1, ordering: .relaxed)
                return .json(200, ["slow": "yes"])
            })
        router.add(Route("GET", "/big") { _ in .bytes(200, contentType: "text/plain", [UInt8](repeating: 0x61, count: 200_000)) })
        router.add(Route("GET", "/missing") { _ in .json(404, ["error": "nope"]) })
        let server = try startLocalServer(router)
        let port = server.port
        do { try await body(port, counter) } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    @Test func getsPostsAndReadsHeaders() async throws {
        try await Self.withPeer { port, _ in
            let client = HTTPClient.patient()
            let hello = try await client.get("http://127.0.0.1:\(port)/hello?name=a%20b")
            #expect(hello.status == 200)
            let json = try JSONSerialization.jsonObject(with: Data(hello.body)) as? [String: String]
            #expect(json?["hello"] == "a b")
            #expect(json?["ua"] == "onebusaway-sidecar")
            #expect(hello.header("Content-Type")?.hasPrefix("application/json") == true)
            let posted = try await client.send(
                HTTPClientRequest(
                    method: "POST", url: "http://127.0.0.1:\(port)/echo",
                    headers: [("Content-Type", "application/json")], body: Array(#"{"a":1}"#.utf8)))
            #expect(posted.status == 201)
            #expect(posted.body == Array(#"{"a":1}"#.utf8))
            #expect(posted.header("x-type") == "application/json")
            let emptyPost = try await client.send(HTTPClientRequest(method: "POST", url: "http://127.0.0.1:\(port)/echo"))
            #expect(emptyPost.status == 201)
            #expect(emptyPost.body.isEmpty)
            let deleted = try await client.send(HTTPClientRequest(method: "DELETE", url: "http://127.0.0.1:\(port)/echo"))
            #expect(String(decoding: deleted.body, as: UTF8.self) == "DELETE")
            #expect(try await client.get("http://127.0.0.1:\(port)/missing").status == 404)
            client.shutdown()
        }
    }

    @Test func boundsConcurrencyAndCompletesEveryRequest() async throws {
        try await Self.withPeer { port, counter in
            var configuration = HTTPClient.Configuration()
            configuration.maxConcurrentTransfers = 8
            // Only catches a hang: on two busy cores the peer's slow answers
            // have taken longer than the 10 s default.
            configuration.timeoutSeconds = HTTPClient.patientTimeoutSeconds
            let client = HTTPClient(configuration: configuration)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 { group.addTask { try await client.get("http://127.0.0.1:\(port)/slow").status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 40))
            #expect(counter.peak.load(ordering: .relaxed) <= 8)
            #expect(counter.peak.load(ordering: .relaxed) >= 2)
            client.shutdown()
        }
    }

    /// A burst of transfers wakes the driver once (`MultiDriver` writes its
    /// eventfd only when no wake-up is pending since it last took the
    /// queue); none may be left waiting for a wake-up that never comes. With
    /// the driver's idle wait at an hour, a lost wake-up hangs the test.
    @Test func everyTransferIsTakenWithoutWaitingForTheIdleTimeout() async throws {
        try await Self.withPeer { port, _ in
            var configuration = HTTPClient.Configuration()
            configuration.maxConcurrentTransfers = 4
            configuration.idleWaitMilliseconds = 3_600_000
            configuration.timeoutSeconds = 0
            let client = HTTPClient(configuration: configuration)
            for n in 0..<100 {
                #expect(try await client.get("http://127.0.0.1:\(port)/hello?name=\(n)").status == 200)
            }
            for _ in 0..<10 {
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for n in 0..<50 { group.addTask { try await client.get("http://127.0.0.1:\(port)/hello?name=\(n)").status } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: 200, count: 50))
            }
            client.shutdown()
        }
    }

    @Test func failuresAreTyped() async throws {
        try await Self.withPeer { port, _ in
            var configuration = HTTPClient.Configuration()
            configuration.maxBodyBytes = 1000
            configuration.timeoutSeconds = HTTPClient.patientTimeoutSeconds
            let client = HTTPClient(configuration: configuration)
            await #expect(throws: HTTPClientError.bodyTooLarge(limit: 1000)) { try await client.get("http://127.0.0.1:\(port)/big") }
            do {
                _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow", timeoutSeconds: 0))
            } catch { Issue.record("a zero timeout means no limit in libcurl: \(error)") }
            await #expect(throws: HTTPClientError.self) { try await client.get("http://127.0.0.1:1/refused") }
            await #expect(throws: HTTPClientError.invalidURL("ftp://x")) { try await client.get("ftp://x") }
            client.shutdown()
            await #expect(throws: HTTPClientError.shutDown) { try await client.get("http://127.0.0.1:\(port)/hello") }
        }
    }
}
