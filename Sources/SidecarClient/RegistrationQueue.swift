import Foundation

/// Where the registration queue keeps its last success, so a relaunch does
/// not re-send what the server already holds (inject a fake in tests).
public protocol RegistrationStorage: Sendable {
    func load() -> (registration: RegistrationPolicy.Registration, date: Date)?
    func save(_ registration: RegistrationPolicy.Registration, date: Date)
    func clear()
}

/// `UserDefaults`-backed storage (the app's own defaults, or a suite).
public final class DefaultsRegistrationStorage: RegistrationStorage, @unchecked Sendable {
    let defaults: UserDefaults
    let key: String

    public init(defaults: UserDefaults = .standard, key: String = "SidecarClient.lastRegistration") {
        self.defaults = defaults
        self.key = key
    }

    struct Stored: Codable {
        var registration: RegistrationPolicy.Registration
        var date: Date
    }

    public func load() -> (registration: RegistrationPolicy.Registration, date: Date)? {
        guard let data = defaults.data(forKey: key), let stored = try? JSONDecoder().decode(Stored.self, from: data) else { return nil }
        return (stored.registration, stored.date)
    }

    public func save(_ registration: RegistrationPolicy.Registration, date: Date) {
        defaults.set(try? JSONEncoder().encode(Stored(registration: registration, date: date)), forKey: key)
        // Written through now: on Linux nothing else flushes defaults before a
        // short-lived process exits (on Apple platforms this is a cheap no-op).
        defaults.synchronize()
    }

    public func clear() {
        defaults.removeObject(forKey: key)
        defaults.synchronize()
    }
}

/// The HTTP calls the queue makes (the real one is `SidecarAPI`; tests fake it).
public protocol RegistrationTransport: Sendable {
    /// POST the registration; the answer's status (nil: no answer) and `Retry-After`.
    func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?)
    /// DELETE it.
    func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?)
}

/// The time source the queue waits on (tests use a manual one).
public protocol RegistrationClock: Sendable {
    func now() -> Date
    func sleep(seconds: TimeInterval) async throws
}

public struct SystemRegistrationClock: RegistrationClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(seconds: TimeInterval) async throws { try await Task.sleep(nanoseconds: UInt64(max(seconds, 0) * 1_000_000_000)) }
}

/// Turns desired states into the fewest requests that get the server there:
/// deduplicated against the last success (re-sent after 24 hours), one
/// request in flight at a time, the latest state always winning (an older
/// call that arrives late is ignored), failures retried with backoff unless
/// permanent, and the old registration deleted best-effort when the token or
/// region changes.
public actor RegistrationQueue {
    public enum Status: Equatable, Sendable {
        case idle
        case registered(RegistrationPolicy.Registration)
        /// Refused for good (422, unknown region): not retried until an input changes.
        case rejected(status: Int)
        case retrying(attempt: Int, after: TimeInterval)
        case optedOut
        /// The region has no sidecar; a registration held for the region the rider left was deleted.
        case noSidecar
        case unresolved
        /// Withdrawn (logout or in-app opt-out): the registration was deleted.
        case withdrawn
    }

    /// What the queue is working towards: a desired state, or a withdrawal.
    enum Target: Equatable {
        case desired(RegistrationPolicy.Desired)
        case withdraw
    }

    let transport: any RegistrationTransport
    let storage: any RegistrationStorage
    let clock: any RegistrationClock
    let jitter: @Sendable () -> Double
    let maxAttempts: Int

    public private(set) var status: Status = .idle
    /// The newest stamp seen: calls carrying an older one are ignored.
    private var newestStamp: UInt64 = 0
    private var target: Target = .desired(.unresolved)
    private var rejected: RegistrationPolicy.Registration?
    private var running: Task<Void, Never>?
    private var pendingRun = false

    public init(
        transport: any RegistrationTransport, storage: any RegistrationStorage, clock: any RegistrationClock = SystemRegistrationClock(),
        maxAttempts: Int = 8, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.transport = transport
        self.storage = storage
        self.clock = clock
        self.maxAttempts = maxAttempts
        self.jitter = jitter
    }

    /// Hands the queue a new desired state. `stamp` orders calls made from
    /// synchronous code (`RegistrationStamp.next()`): one older than the newest
    /// seen is dropped, so a late arrival never overrides a newer state.
    public func submit(_ desired: RegistrationPolicy.Desired, stamp: UInt64) async {
        await aim(at: .desired(desired), stamp: stamp)
    }

    /// Deletes the registration the server holds and forgets it: a logout,
    /// or the app's own opt-out switch (the OS's permission needs no DELETE:
    /// APNs's bounces clean those up). Stamped like `submit`, so a withdrawal
    /// that arrives after a newer login's registration is ignored rather than
    /// deleting it.
    public func withdraw(stamp: UInt64) async {
        await aim(at: .withdraw, stamp: stamp)
    }

    private func aim(at target: Target, stamp: UInt64) async {
        guard stamp > newestStamp else { return }
        newestStamp = stamp
        self.target = target
        if running != nil {
            pendingRun = true
            return
        }
        running = Task { await self.drain() }
        await running?.value
    }

    /// Waits until nothing is in flight (tests, and apps before suspending).
    public func settle() async {
        while let running { await running.value }
    }

    private func drain() async {
        repeat {
            pendingRun = false
            await work(on: target)
        } while pendingRun
        running = nil
    }

    /// Deletes the last success best-effort and forgets it.
    private func forgetLastSuccess() async {
        guard let last = storage.load() else { return }
        storage.clear()
        _ = await transport.unregister(last.registration)  // best effort: the server prunes leftovers anyway
    }

    private func work(on target: Target) async {
        switch target {
        case .withdraw:
            rejected = nil
            await forgetLastSuccess()
            status = .withdrawn
        case .desired(.unresolved): status = .unresolved
        case .desired(.optedOut): status = .optedOut
        case .desired(.noSidecar):
            // The rider moved to a region without a sidecar: what is held is
            // the old region's, whose alerts they no longer want.
            await forgetLastSuccess()
            status = .noSidecar
        case .desired(.wanted(let wanted)):
            if rejected == wanted {
                return  // refused for good; wait for an input to change
            }
            let last = storage.load()
            guard RegistrationPolicy.shouldSend(wanted, lastSuccess: last?.registration, at: last?.date, now: clock.now()) else {
                status = .registered(wanted)
                return
            }
            var attempt = 0
            while true {
                if pendingRun { return }  // a newer state arrived: work on that instead
                let answer = await transport.register(wanted)
                switch RegistrationPolicy.outcome(status: answer.status, retryAfter: answer.retryAfter) {
                case .success:
                    storage.save(wanted, date: clock.now())
                    status = .registered(wanted)
                    rejected = nil
                    if let old = RegistrationPolicy.toDelete(previous: last?.registration, wanted: wanted) {
                        _ = await transport.unregister(old)  // best effort: the server prunes leftovers anyway
                    }
                    return
                case .permanent(let code):
                    rejected = wanted
                    status = .rejected(status: code)
                    return
                case .retryable(let retryAfter):
                    guard attempt + 1 < maxAttempts else {
                        status = .retrying(attempt: attempt, after: 0)
                        return  // the next trigger tries again
                    }
                    let delay = RegistrationPolicy.retryDelay(attempt: attempt, retryAfter: retryAfter, jitter: jitter())
                    status = .retrying(attempt: attempt + 1, after: delay)
                    attempt += 1
                    do { try await clock.sleep(seconds: delay) } catch { return }
                }
            }
        }
    }
}

/// Stamps calls in the order synchronous code makes them, before they hop
/// onto the queue's actor (where unstructured tasks may arrive reordered).
public enum RegistrationStamp {
    private static let counter = Counter()

    public static func next() -> UInt64 { counter.next() }

    final class Counter: @unchecked Sendable {
        private var value: UInt64 = 0
        private let lock = NSLock()
        func next() -> UInt64 {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
