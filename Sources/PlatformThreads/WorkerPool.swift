import Core
import Dispatch
import Synchronization

/// A fixed number of OS threads for blocking, costly work (password
/// hashing), with a short queue: a job beyond the threads and the queue is
/// refused at once, without being run, so a flood costs a refusal each and
/// memory stays at what the threads use. Threads start on first use and
/// live as long as the process.
public final class WorkerPool: Sendable {
    public let name: String
    public let threads: Int
    public let queueCapacity: Int
    private struct State {
        var jobs = FIFOQueue<@Sendable () -> Void>()
        /// Jobs accepted and not yet finished (running or waiting).
        var admitted = 0
        var started = false
    }
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    public init(name: String, threads: Int, queueCapacity: Int) {
        self.name = name
        self.threads = max(threads, 1)
        self.queueCapacity = max(queueCapacity, 0)
    }

    /// Jobs running or waiting now.
    public var admitted: Int { state.withLock { $0.admitted } }

    /// Runs `work` on one of the pool's threads; nil, at once and without
    /// running it, when every thread is busy and the queue is full.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        let (accepted, start) = state.withLock { state -> (Bool, Bool) in
            guard state.admitted < threads + queueCapacity else { return (false, false) }
            state.admitted += 1
            defer { state.started = true }
            return (true, !state.started)
        }
        guard accepted else { return nil }
        if start {
            for index in 0..<threads { PlatformThread.detach(name: "\(name)-\(index)") { [self] in workLoop() } }
        }
        return await withCheckedContinuation { continuation in
            state.withLock { $0.jobs.append { continuation.resume(returning: work()) } }
            available.signal()
        }
    }

    private func workLoop() {
        while true {
            available.wait()
            let job = state.withLock { $0.jobs.popFirst() }
            job?()
            if job != nil { state.withLock { $0.admitted -= 1 } }
        }
    }
}
