import CSQLite
import Dispatch
import PlatformThreads
import Synchronization

/// Folds SQLite's write-ahead log into the database file on a connection and
/// thread of its own, so the writer does not stop for it. SQLite's default,
/// a checkpoint inside the commit that finds 1,000 pages of log, held every
/// waiting write through its copy and its two fsyncs, dozens of times a
/// second under load.
///
/// The writer's commit hook (`logGrew`) asks for a checkpoint once the log
/// holds `interval` pages not yet folded in. A checkpoint beside continuous
/// writes rarely reaches the log's end, and the log starts over only after
/// one has; so past `writerBound` pages the writer folds in the short rest
/// itself, and the log starts over at its next commit.
final class SQLiteCheckpointer: @unchecked Sendable {
    // `connection` is touched only by the checkpointer's thread; the rest
    // are atomics and semaphores.
    private var connection: SQLiteConnection?
    private let wanted = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let asked = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    /// Log frames folded in by the last checkpoint (0 after the log started over).
    private let folded = Atomic<Int>(0)
    private let completedCount = Atomic<Int>(0)
    let interval: Int
    let writerBound: Int

    /// Checkpoints finished on the checkpointer's thread (for tests and figures).
    var completed: Int { completedCount.load(ordering: .acquiring) }

    init(connection: SQLiteConnection, interval: Int = 1000, writerBound: Int = 16_384) {
        self.connection = connection
        self.interval = interval
        self.writerBound = writerBound
        PlatformThread.detach(name: "sqlite-ckpt") { [self] in run() }
    }

    /// Installs the commit hook on the writer's connection (which replaces
    /// SQLite's own checkpoint at commit). The checkpointer must outlive it.
    func watch(_ writer: SQLiteConnection) {
        let hook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
            context, database, _, pages in
            guard let context, let database else { return SQLITE_OK }
            Unmanaged<SQLiteCheckpointer>.fromOpaque(context).takeUnretainedValue().logGrew(to: Int(pages), writer: database)
            return SQLITE_OK
        }
        sqlite3_wal_hook(writer.handle, hook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// What a commit that leaves `pages` of log, `folded` of them already in
    /// the file, calls for.
    enum Step: Equatable {
        case nothing
        /// Ask the checkpointer's thread.
        case ask
        /// The writer folds in the rest itself, now.
        case foldHere
    }

    static func step(pages: Int, folded: Int, interval: Int, writerBound: Int) -> Step {
        if pages >= writerBound { return .foldHere }
        // Fewer pages than were folded: the log started over since.
        let waiting = pages < folded ? pages : pages - folded
        return waiting >= interval ? .ask : .nothing
    }

    /// After each commit, on the writer's thread: the log now holds `pages`.
    func logGrew(to pages: Int, writer: OpaquePointer) {
        let done = folded.load(ordering: .relaxed)
        if pages < done { folded.store(0, ordering: .relaxed) }
        switch Self.step(pages: pages, folded: done, interval: interval, writerBound: writerBound) {
        case .foldHere:
            _ = sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        case .ask:
            if !asked.exchange(true, ordering: .acquiringAndReleasing) { wanted.signal() }
        case .nothing:
            break
        }
    }

    /// Ends the thread after any checkpoint it is running; closes its connection.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wanted.signal()
        stopped.wait()
    }

    private func run() {
        while true {
            wanted.wait()
            if stopping.load(ordering: .acquiring) { break }
            asked.store(false, ordering: .releasing)
            guard let handle = connection?.handle else { break }
            var frames: Int32 = 0
            var backfilled: Int32 = 0
            if sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &frames, &backfilled) == SQLITE_OK {
                folded.store(Int(backfilled), ordering: .relaxed)
            }
            completedCount.add(1, ordering: .releasing)
        }
        connection = nil
        stopped.signal()
    }
}
