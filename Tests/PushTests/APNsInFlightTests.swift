import Core
import Crypto
import HTTPClient
import HTTPServer
import TestSupport
import Testing

@testable import Push

/// A provider that holds each push until the test lets it go, counting how
/// many it holds at once.
final class HoldingProvider: Sendable {
    struct State {
        var holding = true
        var held: [CheckedContinuation<Void, Never>] = []
        var inside = 0
        var mostInside = 0
        var answered = 0
    }
    let state = Locked(State())
    let server: HTTPServer

    init() throws {
        var router = Router()
        let state = self.state
        router.add(
            Route("POST", "/3/device/:token", parsesParameters: false) { _ in
                state.withLock {
                    $0.inside += 1
                    $0.mostInside = max($0.mostInside, $0.inside)
                }
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let wait = state.withLock { state -> Bool in
                        if state.holding { state.held.append(continuation) }
                        return state.holding
                    }
                    if !wait { continuation.resume() }
                }
                state.withLock {
                    $0.inside -= 1
                    $0.answered += 1
                }
                return .bytes(200, contentType: "application/json", Array("{}".utf8))
            })
        server = try startLocalServer(router)
    }

    /// Lets every held push go and holds no more.
    func release() {
        let held = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }
}

@Suite("APNs: pushes in flight")
struct APNsInFlightTests {
    /// A relay answers many sends at once over one set of APNs connections:
    /// the transport's bound holds over every call together, not per call.
    @Test func concurrentSendsShareOneBoundOfPushesInFlight() async throws {
        let provider = try HoldingProvider()
        var configuration = APNsTransport.Configuration(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "org.onebusaway.iphone")
        configuration.productionURL = "http://127.0.0.1:\(provider.server.port)"
        let transport = APNsTransport(
            configuration: configuration, key: try PrivateKey(pem: TestKeys.ecPrivate), connections: [HTTPClient.patient()], concurrency: 3,
            boundAcrossCalls: true,
            sleep: { _ in })
        let first = (0..<5).map { PushMessage(token: "0" + String($0, radix: 16), platform: .ios, title: "A", body: "first") }
        let second = (5..<10).map { PushMessage(token: "0" + String($0, radix: 16), platform: .ios, title: "B", body: "second") }
        async let firstOutcomes = transport.send(first)
        async let secondOutcomes = transport.send(second)
        // Each call starts 3 pushes (its own bound): 6 in all, of which the
        // shared bound lets 3 reach the provider while 3 wait their turn.
        // The deadline only catches a hang.
        let deadline = ContinuousClock.now + .seconds(120)
        while provider.state.value.held.count + (transport.inFlight?.waiting ?? 0) < 6, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(provider.state.value.held.count == 3)
        #expect((transport.inFlight?.waiting ?? 0) == 3)
        provider.release()
        let outcomes = await firstOutcomes + secondOutcomes
        #expect(outcomes == Array(repeating: .delivered, count: 10))
        #expect(provider.state.value.answered == 10)
        #expect(provider.state.value.mostInside == 3)
        _ = await provider.server.shutdown(grace: .seconds(1))
    }
}

@Suite("A gate for work in flight")
struct ConcurrencyGateTests {
    /// Places pass to waiters first come first served, never more than the limit inside.
    @Test func waitersEnterInTurnAndNeverMoreThanTheLimit() async throws {
        let gate = ConcurrencyGate(limit: 2)
        let inside = Locked((now: 0, most: 0))
        let held = Locked([Int: CheckedContinuation<Void, Never>]())
        let tasks = (0..<5).map { index in
            Task {
                await gate.withPlace {
                    inside.withLock {
                        $0.now += 1
                        $0.most = max($0.most, $0.now)
                    }
                    await withCheckedContinuation { continuation in held.withLock { $0[index] = continuation } }
                    inside.withLock { $0.now -= 1 }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        func settle(held count: Int, waiting: Int) async throws {
            while held.value.count != count || gate.waiting != waiting, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        try await settle(held: 2, waiting: 3)
        #expect(inside.value.now == 2)
        // Free places one by one: each passes straight to a waiter.
        var released = Set<Int>()
        while released.count < 5 {
            let next = try #require(held.value.keys.filter { !released.contains($0) }.min())
            released.insert(next)
            held.withLock { $0[next] }?.resume()
            try await settle(held: min(released.count + 2, 5), waiting: max(3 - released.count, 0))
        }
        for task in tasks { await task.value }
        #expect(inside.value.most == 2)
        #expect(inside.value.now == 0)
        #expect(gate.waiting == 0)
    }
}
