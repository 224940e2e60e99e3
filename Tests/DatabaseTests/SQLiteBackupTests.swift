import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Database

/// `sidecar backup`: a consistent copy while writers keep writing.
@Suite("SQLite online backup")
struct SQLiteBackupTests {
    @Test func aBackupTakenDuringAWriteLoadIsConsistentAndComplete() async throws {
        try await SQLiteDatabaseTests.withDatabase { database, path in
            try await database.migrate(SQLiteDatabaseTests.schema)
            let written = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
            let writer = Task {
                var index = 0
                while !stop.load(ordering: .relaxed) {
                    // Two rows per transaction: a torn copy would show an odd count.
                    let number = index
                    try await database.write { connection in
                        try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text("a\(number)")])
                        try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text("b\(number)")])
                    }
                    index += 1
                    written.store(index * 2, ordering: .relaxed)
                }
            }
            while written.load(ordering: .relaxed) < 2000 { try await Task.sleep(for: .milliseconds(5)) }
            let target = path + ".backup"
            let before = written.load(ordering: .relaxed)
            let summary = try await offPool { try SQLiteBackup.copy(from: path, to: target) }
            let after = written.load(ordering: .relaxed)
            stop.store(true, ordering: .relaxed)
            try await writer.value
            #expect(summary.pages > 0 && summary.bytes >= summary.pages * 512)
            #expect(!FileManager.default.fileExists(atPath: target + ".partial"))
            let copy = try SQLiteDatabase(path: target, synchronous: .normal)
            let (rows, verdict) = try await copy.read { connection in
                (
                    Int(try connection.queryOne("SELECT COUNT(*) AS n FROM things", [])?.optionalInt("n") ?? -1),
                    try connection.queryOne("PRAGMA integrity_check", [])?.optionalString("integrity_check")
                )
            }
            await copy.close()
            #expect(verdict == "ok")
            #expect(rows % 2 == 0, "whole transactions only")
            #expect(rows >= before && rows <= after + 2, "everything committed before the backup began: \(before) ≤ \(rows) ≤ \(after)")

            // An existing file is refused unless replacing; a missing source is an error.
            #expect(throws: DatabaseError.self) { try SQLiteBackup.copy(from: path, to: target) }
            #expect(try SQLiteBackup.copy(from: path, to: target, replace: true).pages > 0)
            #expect(throws: DatabaseError.self) { try SQLiteBackup.copy(from: path + ".missing", to: target + "2") }
            #expect(throws: DatabaseError.self) { try SQLiteBackup.copy(from: path, to: "/nonexistent-directory/backup.sqlite3") }
        }
    }
}
