import CSQLite

#if canImport(Glibc)
import Glibc
#endif

/// A consistent copy of a live SQLite database, made with SQLite's online
/// backup API while servers keep writing to it (in WAL mode a reader blocks
/// no writer), written beside the target and renamed into place only once
/// it is complete, synced and passes `PRAGMA integrity_check`.
public enum SQLiteBackup {
    /// What a backup copied.
    public struct Summary: Sendable {
        public let pages: Int
        public let bytes: Int
    }

    /// Copies the database at `source` to `target`.
    /// - Parameter replace: overwrite an existing `target` (otherwise refused).
    public static func copy(from source: String, to target: String, replace: Bool = false) throws(DatabaseError) -> Summary {
        guard access(source, F_OK) == 0 else { throw .openFailed(path: source, message: "no such file") }
        if !replace && access(target, F_OK) == 0 {
            throw .failed(code: SQLITE_CANTOPEN, message: "\(target) already exists (--replace overwrites it)")
        }
        let partial = target + ".partial"
        unlink(partial)
        // The copy holds everything the database does (registrations, key
        // hashes): created readable by its owner only before a byte is
        // written. SQLite gives its -wal and -shm files the same mode.
        let created = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard created >= 0 else {
            throw .failed(code: SQLITE_CANTOPEN, message: "cannot create \(partial): \(String(cString: strerror(errno)))")
        }
        close(created)
        let from = try SQLiteConnection(path: source, readOnly: true, synchronous: .normal)
        var summary = Summary(pages: 0, bytes: 0)
        do throws(DatabaseError) {
            do {
                let to = try SQLiteConnection(path: partial, readOnly: false, synchronous: .full)
                guard let backup = sqlite3_backup_init(to.handle, "main", from.handle, "main") else {
                    throw SQLiteConnection.error(code: sqlite3_errcode(to.handle), message: String(cString: sqlite3_errmsg(to.handle)))
                }
                // One step copies everything inside one read transaction of
                // the source: a snapshot, however much is written meanwhile.
                var code = sqlite3_backup_step(backup, -1)
                var waited = 0
                while (code == SQLITE_BUSY || code == SQLITE_LOCKED) && waited < 100 {
                    usleep(50_000)
                    waited += 1
                    code = sqlite3_backup_step(backup, -1)
                }
                let pages = Int(sqlite3_backup_pagecount(backup))
                let finished = sqlite3_backup_finish(backup)
                guard code == SQLITE_DONE, finished == SQLITE_OK else {
                    throw SQLiteConnection.error(code: code == SQLITE_DONE ? finished : code, message: String(cString: sqlite3_errmsg(to.handle)))
                }
                let verdict = try to.query("PRAGMA integrity_check", []).first?.optionalString("integrity_check") ?? "no answer"
                guard verdict == "ok" else {
                    throw DatabaseError.failed(code: SQLITE_CORRUPT, message: "the copy failed integrity_check: \(verdict)")
                }
                // Fold the copy's WAL back into its file: the result is one
                // self-contained file.
                try to.run("PRAGMA wal_checkpoint(TRUNCATE)")
                summary = Summary(pages: pages, bytes: pages * Int(try to.query("PRAGMA page_size", []).first?.optionalInt("page_size") ?? 4096))
            }
            try syncFile(partial)
            unlink(partial + "-wal")
            unlink(partial + "-shm")
            guard rename(partial, target) == 0 else {
                throw DatabaseError.failed(code: SQLITE_CANTOPEN, message: "cannot move the copy to \(target): \(String(cString: strerror(errno)))")
            }
            try syncDirectory(of: target)
        } catch {
            for leftover in [partial, partial + "-wal", partial + "-shm"] { unlink(leftover) }
            throw error
        }
        return summary
    }

    static func syncFile(_ path: String) throws(DatabaseError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0, fsync(descriptor) == 0 else {
            if descriptor >= 0 { close(descriptor) }
            throw .failed(code: SQLITE_IOERR, message: "cannot sync \(path): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
    }

    static func syncDirectory(of path: String) throws(DatabaseError) {
        var directory = "."
        if let slash = path.lastIndex(of: "/") { directory = slash == path.startIndex ? "/" : String(path[..<slash]) }
        try syncFile(directory)
    }
}
