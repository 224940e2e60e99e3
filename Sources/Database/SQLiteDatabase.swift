import CSQLite
import Dispatch
import FoundationEssentials
import PlatformThreads
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// SQLite in WAL mode: one writer connection on its own thread, which commits
/// queued writes in groups, and a pool of reader connections.
///
/// Writes queue to the writer thread; it takes every write waiting, runs them
/// inside one transaction and commits once, so a burst of registrations costs
/// one commit (and with `synchronous=FULL` one fsync) instead of one each.
/// When a write fails, the batch is rolled back and run again with a
/// savepoint around each write, so the failed one rolls back alone. A caller
/// is resumed only after the commit succeeded.
public final class SQLiteDatabase: Database {
    /// `PRAGMA synchronous` for every connection: NORMAL is durable against a
    /// process crash; FULL also against power loss, at a cost per commit.
    public enum Synchronous: String, Sendable, CaseIterable {
        case normal, full
    }

    public let path: String
    public let synchronous: Synchronous
    public var dialect: SQLDialect { .sqlite }
    private let readerLimit: Int
    /// The file opened at start (device and inode), to notice it being
    /// deleted or replaced under the running server; nil for in-memory.
    private let openedFile: FileIdentity?
    private let queue = Mutex(WriteQueue())
    private let wakeWriter = DispatchSemaphore(value: 0)
    private let readers = Mutex<[ReaderSlot]>([])
    private let writerStopped = DispatchSemaphore(value: 0)
    /// Folds the log into the file off the writer's thread (nil in memory).
    let checkpointer: SQLiteCheckpointer?

    private struct WriteQueue {
        var jobs: [WriteJob] = []
        var closing = false
    }

    /// Opens (creating if needed) the database file and starts the writer.
    /// - Parameters:
    ///   - readers: reader connections kept open for reuse.
    public init(path: String, synchronous: Synchronous = .normal, readers: Int = 4) throws {
        self.path = path
        self.synchronous = synchronous
        self.readerLimit = max(readers, 1)
        let writer = try SQLiteConnection(path: path, readOnly: false, synchronous: synchronous)
        openedFile = FileIdentity(path: path)
        // A database in memory has no log to fold in (and a second
        // connection would open another database).
        if openedFile != nil {
            let checkpointer = SQLiteCheckpointer(connection: try SQLiteConnection(path: path, readOnly: false, synchronous: synchronous))
            checkpointer.watch(writer)
            self.checkpointer = checkpointer
        } else {
            checkpointer = nil
        }
        let box = WriterBox(connection: writer)
        PlatformThread.detach(name: "sqlite-writer") { [self] in self.writerLoop(box) }
    }

    // MARK: Reads

    public func read<T: Sendable>(_ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        // Reads run on the calling thread: a WAL reader never waits for the
        // writer, so a point read costs microseconds and needs no hop.
        let slot = try checkoutReader()
        defer { checkinReader(slot) }
        try slot.connection.execute("BEGIN", [])
        do {
            let value = try work(slot.connection)
            try slot.connection.execute("COMMIT", [])
            return value
        } catch {
            try? slot.connection.run("ROLLBACK")
            throw error
        }
    }

    private func checkoutReader() throws -> ReaderSlot {
        if let slot = readers.withLock({ $0.popLast() }) { return slot }
        if queue.withLock({ $0.closing }) { throw DatabaseError.closed }
        return ReaderSlot(connection: try SQLiteConnection(path: path, readOnly: true, synchronous: synchronous))
    }

    private func checkinReader(_ slot: ReaderSlot) {
        readers.withLock { pool in
            if pool.count < readerLimit { pool.append(slot) }
        }
    }

    // MARK: Writes

    /// One writer thread runs every write, so no two hold rows at once:
    /// `keys` need no scheduling here.
    @discardableResult
    public func write<T: Sendable>(locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let result = ResultBox<T>()
            let job = WriteJob(
                run: { connection in result.value = try work(connection) },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let value = result.value {
                        continuation.resume(returning: value)
                    } else {
                        continuation.resume(throwing: DatabaseError.failed(code: SQLITE_MISUSE, message: "write produced no value"))
                    }
                })
            enqueue(job)
        }
    }

    /// The writer thread runs `work` in its next batch and calls
    /// `completion` itself after the commit: no task, no continuation.
    public func submitWrite(
        locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> Void,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        enqueue(WriteJob(run: { connection in try work(connection) }, finish: completion))
    }

    private func enqueue(_ job: WriteJob) {
        let accepted = queue.withLock { state -> Bool in
            guard !state.closing else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wakeWriter.signal() } else { job.finish(DatabaseError.closed) }
    }

    private func writerLoop(_ box: WriterBox) {
        if let connection = box.connection {
            commitUntilClosed(on: connection)
            checkpointer?.stop()
            // Fold the write-ahead log into the main file before closing, so
            // that the file alone is the whole database after a clean stop
            // (an operator copying only sidecar.sqlite3 gets every row). A
            // reader still inside a transaction makes this partial; SQLite
            // finishes it when the last connection closes.
            try? connection.run("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        box.connection = nil
        writerStopped.signal()
    }

    private func commitUntilClosed(on connection: SQLiteConnection) {
        while true {
            wakeWriter.wait()
            let (batch, closing) = queue.withLock { state -> ([WriteJob], Bool) in
                let batch = Array(state.jobs.prefix(512))
                state.jobs.removeFirst(batch.count)
                return (batch, state.closing)
            }
            if !batch.isEmpty { commit(batch, on: connection) }
            if closing && queue.withLock({ $0.jobs.isEmpty }) { return }
        }
    }

    private func commit(_ batch: [WriteJob], on connection: SQLiteConnection) {
        // A write to a file no longer at its path would be acknowledged and
        // then lost (nothing reads it back after a restart): refuse instead.
        if let problem = fileProblem() {
            batch.forEach { $0.finish(DatabaseError.unavailable(problem)) }
            return
        }
        if commitTogether(batch, on: connection) { return }
        do {
            try connection.execute("BEGIN IMMEDIATE", [])
        } catch {
            batch.forEach { $0.finish(error) }
            return
        }
        var outcomes: [(any Error)?] = []
        outcomes.reserveCapacity(batch.count)
        for job in batch {
            do {
                try connection.execute("SAVEPOINT job", [])
                do {
                    try job.run(connection)
                    try connection.execute("RELEASE job", [])
                    outcomes.append(nil)
                } catch {
                    try connection.execute("ROLLBACK TO job", [])
                    try connection.execute("RELEASE job", [])
                    outcomes.append(error)
                }
            } catch {
                // The savepoint machinery itself failed: give up on the batch.
                try? connection.run("ROLLBACK")
                batch.forEach { $0.finish(error) }
                return
            }
        }
        do {
            try connection.execute("COMMIT", [])
        } catch {
            try? connection.run("ROLLBACK")
            batch.forEach { $0.finish(error) }
            return
        }
        for (job, outcome) in zip(batch, outcomes) { job.finish(outcome) }
    }

    /// Optimistic group commit, as on PostgreSQL: the whole batch in one
    /// transaction with no savepoints (a savepoint around each job costs two
    /// statements and a copy of every page the job touches that the batch
    /// already changed). True when every job has its outcome (a write alone
    /// that failed has its error); false when a job of several failed, after
    /// rolling back, so the caller runs the batch again with a savepoint
    /// around each job and one failure never takes the others down (jobs may
    /// run twice, as the `write` contract says).
    private func commitTogether(_ batch: [WriteJob], on connection: SQLiteConnection) -> Bool {
        do {
            try connection.execute("BEGIN IMMEDIATE", [])
        } catch {
            batch.forEach { $0.finish(error) }
            return true
        }
        for job in batch {
            do {
                try job.run(connection)
            } catch {
                try? connection.run("ROLLBACK")
                guard batch.count == 1 else { return false }
                job.finish(error)
                return true
            }
        }
        do {
            try connection.execute("COMMIT", [])
        } catch {
            try? connection.run("ROLLBACK")
            batch.forEach { $0.finish(error) }
            return true
        }
        batch.forEach { $0.finish(nil) }
        return true
    }

    // MARK: Migrations

    @discardableResult
    public func migrate(_ migrations: [Migration]) async throws -> [Int] {
        try await write { connection in
            guard let sqlite = connection as? SQLiteConnection else { return [] }
            return try Migrator.apply(migrations, on: sqlite)
        }
    }

    // MARK: Health

    /// Databases up to this size get a whole `quick_check` in each health check.
    static let wholeCheckBytes: Int64 = 8 << 20

    /// Why the file at `path` is not the database this object has open:
    /// deleted, or replaced by another file. Nil when it still is.
    func fileProblem() -> String? {
        guard let openedFile else { return nil }
        guard let current = FileIdentity(path: path) else {
            return "the database file \(path) was deleted while the server was running"
        }
        return current == openedFile ? nil : "the database file \(path) was replaced while the server was running"
    }

    /// Checks storage for real: the file is still the one open; a fresh
    /// connection (no cached pages) reads the first page of every table; a
    /// row is written and committed; the disk has room.
    public func healthProblems() async -> [HealthProblem] {
        if let problem = fileProblem() { return [HealthProblem(check: "database file", detail: problem)] }
        var problems: [HealthProblem] = []
        do {
            let connection = try SQLiteConnection(path: path, readOnly: true, synchronous: synchronous)
            try connection.execute("BEGIN", [])
            for table in try connection.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", []) {
                guard let name = try table.optionalString("name"), !name.contains("\"") else { continue }
                _ = try connection.query("SELECT * FROM \"\(name)\" LIMIT 1", [])
            }
            // A small database is checked whole (a few milliseconds); a large
            // one only by the reads above, so a probe never stalls.
            let pages = try connection.queryOne("PRAGMA page_count", [])?.optionalInt("page_count") ?? 0
            let pageSize = try connection.queryOne("PRAGMA page_size", [])?.optionalInt("page_size") ?? 4096
            if pages * pageSize <= Self.wholeCheckBytes,
                let verdict = try connection.queryOne("PRAGMA quick_check(1)", [])?.optionalString("quick_check"), verdict != "ok"
            {
                problems.append(HealthProblem(check: "integrity", detail: "the database is corrupt: \(verdict)"))
            }
            try connection.execute("COMMIT", [])
        } catch {
            problems.append(HealthProblem(check: "read", detail: "reading the database failed: \(error)"))
        }
        do {
            let now = Int64(Date.now.timeIntervalSince1970)
            try await write { connection in
                try connection.execute(
                    "CREATE TABLE IF NOT EXISTS sidecar_health (id INTEGER PRIMARY KEY CHECK (id = 1), checked_at INTEGER NOT NULL)", [])
                try connection.execute(
                    """
                    INSERT INTO sidecar_health (id, checked_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at
                    """, [.integer(now)])
            }
        } catch {
            problems.append(HealthProblem(check: "write", detail: "writing to the database failed: \(error)"))
        }
        if openedFile != nil, access(path, W_OK) != 0 {
            problems.append(
                HealthProblem(
                    check: "permissions",
                    detail: "the database file \(path) is not writable (\(String(cString: strerror(errno))))"))
        }
        if let space = DiskSpace(path: path), space.isLow {
            problems.append(HealthProblem(check: "disk space", detail: "the disk holding the database is full (\(space.availableBytes) bytes free)"))
        }
        return problems
    }

    // MARK: Closing

    public func close() async {
        let alreadyClosing = queue.withLock { state -> Bool in
            defer { state.closing = true }
            return state.closing
        }
        guard !alreadyClosing else { return }
        // Idle readers go first: the writer's closing checkpoint must not
        // wait for them.
        readers.withLock { $0.removeAll() }
        wakeWriter.signal()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Wait for the writer to drain on a plain thread, not the shared pool.
            let stopped = writerStopped
            PlatformThread.detach(name: "sqlite-close") {
                stopped.wait()
                continuation.resume()
            }
        }
        readers.withLock { $0.removeAll() }
    }
}

/// A queued write: `run` executes inside the transaction on the writer
/// thread; `finish` resumes the caller once the outcome is final.
final class WriteJob: @unchecked Sendable {
    // Created by the caller, then touched only by the writer thread.
    let run: (SQLiteConnection) throws -> Void
    let finish: ((any Error)?) -> Void
    init(run: @escaping (SQLiteConnection) throws -> Void, finish: @escaping ((any Error)?) -> Void) {
        self.run = run
        self.finish = finish
    }
}

final class ResultBox<T>: @unchecked Sendable {
    // Written by the writer thread before `finish`, read inside `finish` on the same thread.
    var value: T?
}

final class ReaderSlot: @unchecked Sendable {
    // A reader connection is used by one borrower at a time (checked out under a mutex).
    let connection: SQLiteConnection
    init(connection: SQLiteConnection) { self.connection = connection }
}

final class WriterBox: @unchecked Sendable {
    // Handed once to the writer thread, which is its only user; it lets go
    // of the connection (closing it) before it reports having stopped.
    var connection: SQLiteConnection?
    init(connection: SQLiteConnection) { self.connection = connection }
}

/// A file's device and inode: equal for the same file, different for a
/// new file at the same path.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        guard path != ":memory:", !path.isEmpty else { return nil }
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// Free space on the file system holding a path.
struct DiskSpace {
    let availableBytes: UInt64
    let totalBytes: UInt64

    init?(path: String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        availableBytes = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        totalBytes = UInt64(info.f_blocks) * UInt64(info.f_frsize)
    }

    /// Under 16 MiB, or under 5% of a small file system: writes are about
    /// to fail (SQLite needs room to grow its journal).
    var isLow: Bool { availableBytes < min(16 << 20, totalBytes / 20) }
}
