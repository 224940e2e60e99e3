import CPostgres
import Dispatch
import FoundationEssentials
import PlatformThreads
import Synchronization

/// PostgreSQL behind the same interface as SQLite, for several sidecar
/// instances sharing one database.
///
/// A fixed pool of worker threads each owns one connection (libpq calls
/// block, so they stay off the shared concurrency pool). A read runs alone on
/// a worker; writes queued together are committed by one worker in one
/// transaction, so a burst of writes shares commits (see `run` for how one
/// failing write is kept from taking the others with it). While PostgreSQL cannot be reached every
/// call fails at once with `DatabaseError.unavailable` (one worker tries to
/// reconnect, at most every 250 ms), so nothing queues up; the pool recovers by itself
/// when the server is back. A write's caller resumes only after `COMMIT`.
public final class PostgreSQLDatabase: Database {
    public let location: PostgresLocation
    public var dialect: SQLDialect { .postgresql }
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let workerCount: Int
    /// The workers, joined on close: a worker's thread-local cleanup
    /// (OpenSSL's, after its last TLS connection) must end before the process
    /// exits, or exit-time cleanup frees the same memory twice.
    private let workers = Mutex<[PlatformThread.Joinable]>([])
    /// When a connection attempt last failed (monotonic ns), and why.
    private let lastFailure = Mutex<(at: UInt64, reason: String)?>(nil)
    /// One worker at a time tries to reconnect; the others fail their calls
    /// at once meanwhile instead of each waiting out the connect timeout.
    private let reconnecting = Atomic<Bool>(false)
    /// How long a statement may wait for PostgreSQL (`--database-timeout`).
    public let statementTimeoutSeconds: Double

    struct State {
        var jobs: [PostgresJob] = []
        var closing = false
        /// Keys named by the writes of batches running now, with how many
        /// of them name each. A write naming one of these waits in the queue.
        var held: [String: Int] = [:]
        /// Workers asleep on the semaphore, and wake-ups sent to them that
        /// no worker has taken yet.
        var sleeping = 0
        var wakesPending = 0

        /// Queues a call; true when a sleeping worker is to be woken for it.
        /// A worker that finishes a batch looks for more before it sleeps,
        /// and a woken worker takes up to a batch, so one wake-up stands for
        /// up to `batchLimit` queued calls: waking a worker per call made
        /// most of them find the queue already taken (a context switch and a
        /// contended lock each) and cut the batches short.
        mutating func enqueue(_ job: PostgresJob, batchLimit: Int) -> Bool {
            jobs.append(job)
            return wakeAnother(batchLimit: batchLimit)
        }

        /// Whether a sleeping worker is to be woken for the calls queued:
        /// one per `batchLimit` of them beyond those already woken for.
        mutating func wakeAnother(batchLimit: Int) -> Bool {
            guard !jobs.isEmpty, wakesPending < sleeping, jobs.count > wakesPending * batchLimit else { return false }
            wakesPending += 1
            return true
        }

        /// What a worker does next, after the batch it ran (its keys given
        /// back) or after a wake-up: run `jobs` (waking another worker first
        /// when calls are left behind, so a long read never holds up the
        /// writes queued behind it), sleep (`jobs` empty: it is counted
        /// asleep before it leaves the lock, so a call queued from then on
        /// wakes it), or end (`exit`: closing and nothing left).
        mutating func take(
            after finished: [PostgresJob], woken: Bool, batchLimit: Int
        ) -> (jobs: [PostgresJob], wakeAnother: Bool, exit: Bool) {
            if woken {
                sleeping -= 1
                wakesPending = max(wakesPending - 1, 0)
            }
            release(finished)
            let batch = next(batchLimit: batchLimit)
            if !batch.isEmpty { return (batch, wakeAnother(batchLimit: batchLimit), false) }
            if closing && jobs.isEmpty { return ([], false, true) }
            sleeping += 1
            return ([], false, false)
        }

        /// Takes the next call to run: a read alone, or every queued write
        /// up to the batch limit whose keys no running batch holds, this one
        /// included: two writes of one row never share a batch, whose rows
        /// of one insert go out as one statement (`RowInsert`), and
        /// PostgreSQL refuses a statement that upserts one row twice.
        mutating func next(batchLimit: Int) -> [PostgresJob] {
            var batch: [PostgresJob] = []
            var index = 0
            while index < jobs.count && batch.count < batchLimit {
                let job = jobs[index]
                if !job.isWrite {
                    if batch.isEmpty {
                        jobs.remove(at: index)
                        return [job]
                    }
                    index += 1
                } else if job.keys.contains(where: { held[$0] != nil }) {
                    index += 1
                } else {
                    for key in job.keys { held[key, default: 0] += 1 }
                    batch.append(jobs.remove(at: index))
                }
            }
            return batch
        }

        /// Gives back a finished batch's keys (a read names none).
        mutating func release(_ batch: [PostgresJob]) {
            for job in batch {
                for key in job.keys {
                    if let count = held[key], count > 1 { held[key] = count - 1 } else { held[key] = nil }
                }
            }
        }
    }

    /// Writes one worker commits together, at most: small batches keep the
    /// other workers busy (PostgreSQL runs connections in parallel and
    /// coalesces their commits itself); measured best between 4 and 16.
    /// 16 again with one wake-up per batch: faster for new rows, slower
    /// when apps register the same tokens again (more rows held per batch
    /// for other writes to wait on), so 8 stays.
    static let batchLimit = 8

    /// Checks the URL, connects once (so a wrong host, password or database
    /// is reported at start, naming the host and never the password), and
    /// starts `connections` workers.
    public init(url: String, connections: Int, statementTimeoutSeconds: Double = 5) throws(DatabaseError) {
        location = try PostgresLocation(url: url)
        self.statementTimeoutSeconds = statementTimeoutSeconds
        _ = try PostgreSQLConnection(location)
        workerCount = max(connections, 1)
        for number in 0..<workerCount {
            let worker = PlatformThread.start(name: "postgres-\(number)") { [self] in workerLoop() }
            workers.withLock { $0.append(worker) }
        }
    }

    // MARK: The interface

    public func read<T: Sendable>(_ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await submit(isWrite: false, keys: [], work)
    }

    @discardableResult
    public func write<T: Sendable>(locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await submit(isWrite: true, keys: keys, work)
    }

    private func submit<T: Sendable>(
        isWrite: Bool, keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let result = PostgresResultBox<T>()
            let job = PostgresJob(
                isWrite: isWrite, keys: keys, run: { connection in result.value = try work(connection) },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let value = result.value {
                        continuation.resume(returning: value)
                    } else {
                        continuation.resume(throwing: DatabaseError.failed(code: 0, message: "the database call produced no value"))
                    }
                })
            enqueue(job)
        }
    }

    /// The worker runs `work` in its next batch and calls `completion`
    /// itself after the `COMMIT`: no task and no continuation, so a request
    /// answered from the HTTP server's thread costs no hop through the
    /// concurrency pool (a task per registration cost about a fifth of the
    /// sidecar's CPU on this path).
    public func submitWrite(
        locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> Void,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        enqueue(PostgresJob(isWrite: true, keys: keys, run: { connection in try work(connection) }, finish: completion))
    }

    /// Queues a call for the workers, waking one when the queue needs it;
    /// refused at once while closing.
    private func enqueue(_ job: PostgresJob) {
        // nil: closing, the call is refused; else whether to wake a worker.
        let wakes = state.withLock { state -> Bool? in
            state.closing ? nil : state.enqueue(job, batchLimit: Self.batchLimit)
        }
        guard let wakes else { return job.finish(DatabaseError.closed) }
        if wakes { wake.signal() }
    }

    @discardableResult
    public func migrate(_ migrations: [Migration]) async throws -> [Int] {
        try await write { connection in
            guard let postgres = connection as? PostgreSQLConnection else { return [] }
            // A migration may rewrite large tables: no statement deadline.
            let timeout = postgres.statementTimeoutSeconds
            postgres.statementTimeoutSeconds = nil
            defer { postgres.statementTimeoutSeconds = timeout }
            // Instances starting together migrate one at a time.
            _ = try postgres.query("SELECT pg_advisory_xact_lock(727161010)", [])
            return try Migrator.apply(migrations, on: postgres)
        }
    }

    /// Reachable, answering a read, and committing a write.
    public func healthProblems() async -> [HealthProblem] {
        do {
            try await write { connection in
                try connection.execute(
                    """
                    CREATE TABLE IF NOT EXISTS sidecar_health (id BIGINT PRIMARY KEY CHECK (id = 1), checked_at BIGINT NOT NULL)
                    """, [])
                try connection.execute(
                    """
                    INSERT INTO sidecar_health (id, checked_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at
                    """, [.integer(Int64(Date.now.timeIntervalSince1970))])
            }
            _ = try await read { connection in try connection.query("SELECT checked_at FROM sidecar_health", []) }
            return []
        } catch {
            return [HealthProblem(check: "database", detail: "\(error)")]
        }
    }

    public func close() async {
        let alreadyClosing = state.withLock { state -> Bool in
            defer { state.closing = true }
            return state.closing
        }
        guard !alreadyClosing else { return }
        for _ in 0..<workerCount { wake.signal() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let workers = workers.withLock { $0 }
            PlatformThread.detach(name: "postgres-close") {
                for worker in workers { worker.join() }
                continuation.resume()
            }
        }
    }

    /// Calls waiting in the queue (for tests: a write held back by a running
    /// batch's keys stays here).
    var queuedCalls: Int { state.withLock { $0.jobs.count } }

    // MARK: Workers

    private func workerLoop() {
        var connection: PostgreSQLConnection?
        var finished: [PostgresJob] = []
        var woken = false
        while true {
            let (jobs, wakeAnother, exit) = state.withLock { state in
                state.take(after: finished, woken: woken, batchLimit: Self.batchLimit)
            }
            finished = []
            if exit {
                wake.signal()  // passed on, so every worker sees the close
                break
            }
            if jobs.isEmpty {
                // Nothing queued, or only writes waiting for a running
                // batch's keys (the worker that ends it takes them).
                wake.wait()
                woken = true
                continue
            }
            woken = false
            if wakeAnother { wake.signal() }
            do {
                if connection?.isUsable != true { connection = try connect() }
                if let connection { run(jobs, on: connection) }
            } catch {
                jobs.forEach { $0.finish(error) }
            }
            finished = jobs
        }
        connection = nil
    }

    /// How soon after a failed connection attempt the next is made: short,
    /// so writes come back within a fraction of a second of PostgreSQL
    /// accepting connections again (a restart's recovery ends with a burst of
    /// "not yet accepting" refusals), yet one attempt per interval costs
    /// nothing while it is down.
    static let reconnectIntervalNanoseconds: UInt64 = 250_000_000

    /// A new connection, unless one failed within the last interval (then
    /// the last reason again: callers fail fast while the server is down).
    private func connect() throws -> PostgreSQLConnection {
        let now = DispatchTime.now().uptimeNanoseconds
        if let failure = lastFailure.withLock({ $0 }), now - failure.at < Self.reconnectIntervalNanoseconds {
            throw DatabaseError.unavailable(failure.reason)
        }
        // While the server is known to be failing, one worker probes it;
        // when all is well, workers open their connections side by side.
        var probing = false
        if let failure = lastFailure.withLock({ $0 }) {
            guard reconnecting.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
                throw DatabaseError.unavailable(failure.reason)
            }
            probing = true
        }
        defer { if probing { reconnecting.store(false, ordering: .releasing) } }
        do {
            let connection = try PostgreSQLConnection(location, statementTimeoutSeconds: statementTimeoutSeconds)
            lastFailure.withLock { $0 = nil }
            return connection
        } catch {
            lastFailure.withLock { $0 = (DispatchTime.now().uptimeNanoseconds, error.description) }
            throw error
        }
    }

    private func run(_ jobs: [PostgresJob], on connection: PostgreSQLConnection) {
        guard jobs.first?.isWrite == true else {
            // A read: each statement on its own (no transaction to open).
            for job in jobs {
                do {
                    try job.run(connection)
                    job.finish(nil)
                } catch { job.finish(error) }
            }
            return
        }
        // Optimistic group commit: the batch in one pipelined transaction
        // with no savepoints (each would cost more round trips per write).
        // If any write fails, the transaction is rolled back and each write
        // is run again in a transaction of its own, so one failure never
        // takes the others down and never leaves half of itself behind.
        if jobs.count > 1 {
            do {
                try transaction(on: connection) { for job in jobs { try job.run(connection) } }
                jobs.forEach { $0.finish(nil) }
                return
            } catch {
                if connection.broken {
                    jobs.forEach { $0.finish(error) }
                    return
                }
            }
        }
        for job in jobs {
            do {
                try transaction(on: connection) { try job.run(connection) }
                job.finish(nil)
            } catch {
                job.finish(error)
            }
        }
    }

    /// `BEGIN`, the work, `COMMIT`; rolled back when anything fails.
    private func transaction(on connection: PostgreSQLConnection, _ work: () throws -> Void) throws {
        do {
            try connection.beginTransaction()
            try work()
            try connection.commitTransaction()
        } catch {
            connection.rollbackTransaction()
            throw error
        }
    }
}

/// A queued call: `run` executes on a worker's connection; `finish`
/// resumes the caller once the outcome is final.
final class PostgresJob: @unchecked Sendable {
    // Created by the caller, then used only by the worker that takes it
    // from the queue (under the queue's lock).
    let isWrite: Bool
    /// The rows a write names (`Database.write(locking:)`).
    let keys: [String]
    let run: (PostgreSQLConnection) throws -> Void
    let finish: ((any Error)?) -> Void
    init(
        isWrite: Bool, keys: [String], run: @escaping (PostgreSQLConnection) throws -> Void, finish: @escaping ((any Error)?) -> Void
    ) {
        self.isWrite = isWrite
        self.keys = keys
        self.run = run
        self.finish = finish
    }
}

final class PostgresResultBox<T>: @unchecked Sendable {
    // Written by the worker before `finish`, read inside `finish` on the same thread.
    var value: T?
}
