import Synchronization

/// At most `limit` callers inside at once, however many tasks ask: the rest
/// wait, first come first served. `boundedMap` bounds one call's fan-out;
/// a gate bounds every call sharing it, as a relay's concurrent sends
/// sharing one set of APNs connections.
///
/// A waiter is not cancellable: what it guards (a push, a lookup) is short,
/// and giving up a place in line would make the order depend on timing.
public final class ConcurrencyGate: Sendable {
    private struct State {
        var available: Int
        var waiters = FIFOQueue<CheckedContinuation<Void, Never>>()
    }

    private let state: Mutex<State>

    /// A gate letting `limit` callers (at least one) in at once.
    public init(limit: Int) {
        state = Mutex(State(available: max(limit, 1)))
    }

    /// Runs `body` once a place is free, and frees it afterwards.
    public func withPlace<Result: Sendable>(_ body: () async -> Result) async -> Result {
        await enter()
        defer { leave() }
        return await body()
    }

    /// Callers waiting for a place (for tests and metrics).
    public var waiting: Int { state.withLock { $0.waiters.count } }

    private func enter() async {
        let admitted = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if admitted { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                // A place may have been freed between the two locks.
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // The place passes straight to the next waiter, if any.
            guard let waiter = state.waiters.popFirst() else {
                state.available += 1
                return nil
            }
            return waiter
        }
        next?.resume()
    }
}
