import Core
import FoundationEssentials
import Synchronization

/// Where time comes from. Injected everywhere a rule or loop depends on the
/// time, so tests move time forward instead of sleeping.
protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
    /// Suspends until `seconds` of this clock's time have passed.
    func sleep(seconds: Double) async throws
}

extension WallClock {
    /// Runs `cycle` now and then once per `seconds` until the task is
    /// cancelled or `stop` is signalled (a cycle under way always finishes). The period counts from the start of each cycle, so a slow
    /// cycle does not push every later one back (alarms and Live Activities
    /// are promised per minute); at least `min(seconds, 1)` separates two
    /// cycles so one that overran cannot spin.
    func repeatEvery(seconds: Double, stop: StopSignal? = nil, _ cycle: () async -> Void) async {
        while !Task.isCancelled && !(stop?.isStopping ?? false) {
            let started = now()
            await cycle()
            // Clamped: a wall clock stepped backwards must not stretch the pause.
            let elapsed = min(max(now().timeIntervalSince(started), 0), seconds)
            do { try await sleep(seconds: max(seconds - elapsed, min(seconds, 1))) } catch { return }
        }
    }
}

extension WallClock {
    /// The current time as an instant in milliseconds (registrations,
    /// alarms, Live Activities, ghost-bus reports).
    var nowMillis: EpochMillis { now().instantMillis }

    /// The current time in whole seconds, rounded down (alerts, surveys,
    /// the console, API keys).
    var nowSeconds: EpochSeconds { now().instantSeconds }
}

/// The real clock.
struct SystemClock: WallClock {
    init() {}
    func now() -> Date { Date() }
    func sleep(seconds: Double) async throws {
        try await Task.sleep(for: .milliseconds(Int64(max(seconds, 0) * 1000)))
    }
}

/// A clock that only moves when told to; sleepers wake when `advance`
/// carries the time past their deadline.
final class ManualClock: WallClock {
    private struct Sleeper {
        let id: Int
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Date
        var sleepers: [Sleeper] = []
        var nextID = 0
    }
    private let state: Mutex<State>

    init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        state = Mutex(State(now: start))
    }

    func now() -> Date { state.withLock { $0.now } }

    /// Number of tasks currently sleeping on this clock.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Number of tasks sleeping until exactly `deadline`: a test names the
    /// loop it waits for by when that loop will wake next.
    func sleeperCount(until deadline: Date) -> Int {
        state.withLock { state in state.sleepers.count { $0.deadline == deadline } }
    }

    /// Sleeps until `advance` passes the deadline; a cancelled task wakes at
    /// once with `CancellationError`, as `Task.sleep` does.
    func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    let deadline = state.now.addingTimeInterval(seconds)
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline passed.
    func advance(seconds: Double) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.addingTimeInterval(seconds)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        due.forEach { $0.continuation.resume() }
    }

    /// Sets the time (only forward moves wake sleepers).
    func set(_ date: Date) {
        let delta = date.timeIntervalSince(now())
        if delta >= 0 { advance(seconds: delta) } else { state.withLock { $0.now = date } }
    }
}
