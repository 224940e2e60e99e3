import Foundation
import SidecarClient
import Testing

/// A transport answering from a script, recording every call; `hold`
/// keeps the first POST in flight until `release()`.
final class ScriptedTransport: RegistrationTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [(Int?, String?)]
    private(set) var calls: [String] = []
    private var gate: CheckedContinuation<Void, Never>?
    private var holdFirst: Bool
    private var entered: CheckedContinuation<Void, Never>?
    private var hasEntered = false

    init(answers: [(Int?, String?)] = [], holdFirst: Bool = false) {
        self.answers = answers
        self.holdFirst = holdFirst
    }

    func log() -> [String] { lock.withLock { calls } }

    func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        let hold: Bool = lock.withLock {
            calls.append("POST \(registration.token)")
            defer { holdFirst = false }
            return holdFirst
        }
        if hold {
            await withCheckedContinuation { continuation in
                lock.withLock {
                    gate = continuation
                    hasEntered = true
                    entered?.resume()
                    entered = nil
                }
            }
        }
        return lock.withLock { answers.isEmpty ? (204, nil) : answers.removeFirst() }
    }

    func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        lock.withLock { calls.append("DELETE \(registration.token)") }
        return (204, nil)
    }

    /// Waits until the held POST is in flight.
    func waitUntilHeld() async {
        await withCheckedContinuation { continuation in
            lock.withLock {
                if hasEntered { continuation.resume() } else { entered = continuation }
            }
        }
    }

    func release() {
        lock.withLock {
            gate?.resume()
            gate = nil
        }
    }
}

final class MemoryStorage: RegistrationStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var value: (RegistrationPolicy.Registration, Date)?
    func load() -> (registration: RegistrationPolicy.Registration, date: Date)? { lock.withLock { value.map { ($0.0, $0.1) } } }
    func save(_ registration: RegistrationPolicy.Registration, date: Date) { lock.withLock { value = (registration, date) } }
    func clear() { lock.withLock { value = nil } }
}

/// Time that moves only when told; sleeping records the wait and returns.
final class ManualRegistrationClock: RegistrationClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_767_225_600)
    private(set) var sleeps: [TimeInterval] = []
    func now() -> Date { lock.withLock { current } }
    func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
    func sleep(seconds: TimeInterval) async throws {
        lock.withLock {
            sleeps.append(seconds)
            current += seconds
        }
    }
    func recorded() -> [TimeInterval] { lock.withLock { sleeps } }
}

@Suite("SidecarClient registration queue")
struct RegistrationQueueTests {
    static let url = URL(string: "https://onebusaway.co")!

    static func wanted(_ token: String, locale: String = "en-US") -> RegistrationPolicy.Desired {
        RegistrationPolicy.desired(
            .init(authorization: .authorized, deviceToken: token, regionID: 1, sidecarURL: url, clientRegionID: 1, locale: locale))
    }

    @Test func dedupeSuppressesTheSecondPostUntilADayPasses() async {
        let transport = ScriptedTransport(), clock = ManualRegistrationClock()
        let queue = RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: clock)
        await queue.submit(Self.wanted("aa01"), stamp: 1)
        await queue.submit(Self.wanted("aa01"), stamp: 2)
        #expect(transport.log() == ["POST aa01"])
        clock.advance(86_400)
        await queue.submit(Self.wanted("aa01"), stamp: 3)
        #expect(transport.log() == ["POST aa01", "POST aa01"])
        guard case .registered = await queue.status else {
            Issue.record("not registered")
            return
        }
    }

    @Test func anOlderCallNeverOverridesANewerOne() async {
        let transport = ScriptedTransport()
        let queue = RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: ManualRegistrationClock())
        await queue.submit(Self.wanted("new1"), stamp: 10)
        await queue.submit(Self.wanted("old1"), stamp: 9)
        await queue.submit(.unresolved, stamp: 8)  // a cancel that arrived late
        #expect(transport.log() == ["POST new1"])
        guard case .registered(let registration) = await queue.status else {
            Issue.record("not registered")
            return
        }
        #expect(registration.token == "new1")
    }

    @Test func aTokenRotatingWhileARequestIsInFlightWinsAndTheOldOneIsDeleted() async {
        let transport = ScriptedTransport(holdFirst: true)
        let queue = RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: ManualRegistrationClock())
        let first = Task { await queue.submit(Self.wanted("aa01"), stamp: 1) }
        await transport.waitUntilHeld()
        await queue.submit(Self.wanted("bb02"), stamp: 2)  // arrives while aa01 is in flight
        transport.release()
        await first.value
        await queue.settle()
        #expect(transport.log() == ["POST aa01", "POST bb02", "DELETE aa01"])
        guard case .registered(let registration) = await queue.status else {
            Issue.record("not registered")
            return
        }
        #expect(registration.token == "bb02")
    }

    @Test func throttledThenSuccessHonoursRetryAfter() async {
        let transport = ScriptedTransport(answers: [(429, "30"), (503, nil), (204, nil)]), clock = ManualRegistrationClock()
        let queue = RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: clock, jitter: { 1 })
        await queue.submit(Self.wanted("aa01"), stamp: 1)
        #expect(transport.log() == ["POST aa01", "POST aa01", "POST aa01"])
        #expect(clock.recorded() == [30, 4])
        guard case .registered = await queue.status else {
            Issue.record("not registered")
            return
        }
    }

    @Test func aPermanentRejectionWaitsForAnInputToChange() async {
        let transport = ScriptedTransport(answers: [(422, nil)])
        let queue = RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: ManualRegistrationClock())
        await queue.submit(Self.wanted("aa01"), stamp: 1)
        #expect(await queue.status == .rejected(status: 422))
        await queue.submit(Self.wanted("aa01"), stamp: 2)
        #expect(transport.log() == ["POST aa01"], "not retried")
        await queue.submit(Self.wanted("aa01", locale: "es-MX"), stamp: 3)
        #expect(transport.log() == ["POST aa01", "POST aa01"], "an input changed")
    }

    @Test func aFailureIsNeverRecordedAsASuccess() async {
        let storage = MemoryStorage()
        let transport = ScriptedTransport(answers: Array(repeating: (500, nil), count: 3))
        let queue = RegistrationQueue(transport: transport, storage: storage, clock: ManualRegistrationClock(), maxAttempts: 3)
        await queue.submit(Self.wanted("aa01"), stamp: 1)
        #expect(storage.load() == nil)
        await queue.submit(Self.wanted("aa01"), stamp: 2)
        #expect(transport.log().count == 4, "the next trigger tries again")
    }
}
