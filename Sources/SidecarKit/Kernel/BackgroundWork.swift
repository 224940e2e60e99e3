import Synchronization

/// Tells background work to stop at its next safe point: a loop finishes
/// the page it is pushing, commits it, releases what it leased and returns.
final class StopSignal: Sendable {
    private let flag = Atomic<Bool>(false)

    init() {}

    /// True once a stop was asked for.
    var isStopping: Bool { flag.load(ordering: .acquiring) }

    func stop() { flag.store(true, ordering: .releasing) }
}

/// The server's background tasks (periodic loops and alert sends) and the
/// stop signal they obey, so a graceful stop can wait for each to reach a
/// safe point before the database closes.
final class BackgroundWork: Sendable {
    let stop = StopSignal()
    private struct State {
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextID = 0
    }
    private let state = Mutex(State())

    /// Runs `body` as a tracked task; refused (false) once stopping.
    @discardableResult
    func run(_ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { state in
            guard !stop.isStopping else { return false }
            let id = state.nextID
            state.nextID += 1
            // Registered under the lock, so `finished` (which takes it too)
            // cannot run before the task is in the table.
            state.tasks[id] = Task { [self] in
                await body()
                finished(id)
            }
            return true
        }
    }

    private func finished(_ id: Int) {
        _ = state.withLock { $0.tasks.removeValue(forKey: id) }
    }

    /// Tasks still running.
    var runningCount: Int { state.withLock { $0.tasks.count } }

    /// Signals stop, wakes sleeping loops (cancellation ends their sleeps;
    /// nothing else in a cycle reacts to it), and waits until every task
    /// ended or the deadline passed. True when all ended.
    func stopAndWait(until deadline: ContinuousClock.Instant) async -> Bool {
        stop.stop()
        state.withLock { $0.tasks.values.forEach { $0.cancel() } }
        while runningCount > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return runningCount == 0
    }
}
