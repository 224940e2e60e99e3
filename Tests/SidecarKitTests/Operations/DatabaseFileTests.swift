import Foundation
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

/// A command or a clean stop leaves a complete main file behind; backups
/// are private; `copy-database` keeps the alert id counter.
@Suite("Operations: the database file, backups and copies", .enabled(if: TestBackend.isSQLite, "SQLite files of their own: once, on the SQLite run"))
struct DatabaseFileTests: OperatorCommandSuite {
    @Test func aCommandLeavesEveryRowInTheMainFile() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("sidecar.sqlite3").path
            #expect(try await Self.run(["apikey", "create", "--name", "ops", "--region", "all"], database: path).status == 0)
            #expect(
                try await Self.run(
                    ["region", "set", "--id", "1", "--agency-id", "1", "--timezone", "America/Los_Angeles"],
                    database: path
                ).status == 0)
            // What an operator does after `systemctl stop`: copy the main file alone.
            let copy = directory.appendingPathComponent("copy.sqlite3").path
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let opened = try SQLiteDatabase(path: copy, readers: 1)
            let keys = try await opened.read { try $0.queryOne("SELECT COUNT(*) AS n FROM api_keys", [])?.optionalInt("n") }
            let zone = try await opened.read {
                try $0.queryOne("SELECT timezone FROM region_settings WHERE region_id = 1", [])?.optionalString("timezone")
            }
            await opened.close()
            #expect(keys == 1)
            #expect(zone == "America/Los_Angeles")
        }
    }

    @Test func aCleanStopFoldsTheLogIntoTheMainFile() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("server.sqlite3").path
            let database = try SQLiteDatabase(path: path, readers: 2)
            try await database.write { try $0.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, text TEXT NOT NULL)", []) }
            for number in 0..<200 {
                try await database.write { try $0.execute("INSERT INTO rows (text) VALUES ($1)", [.text("row \(number)")]) }
            }
            // A reader that was used stays pooled until the close.
            _ = try await database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM rows", []) }
            await database.close()
            let log = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            #expect(log == 0, "the write-ahead log was folded in and emptied")
            let copy = directory.appendingPathComponent("copy.sqlite3").path
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let reopened = try SQLiteDatabase(path: copy, readers: 1)
            #expect(try await reopened.read { try $0.queryOne("SELECT COUNT(*) AS n FROM rows", [])?.optionalInt("n") } == 200)
            await reopened.close()
        }
    }

    @Test func backupsAreReadableByTheirOwnerOnly() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("live.sqlite3").path
            #expect(try await Self.run(["apikey", "create", "--name", "ops", "--region", "all"], database: path).status == 0)
            let target = directory.appendingPathComponent("backup.sqlite3").path
            _ = try SQLiteBackup.copy(from: path, to: target)
            let mode = try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int
            #expect(mode == 0o600, "mode \(String(mode ?? 0, radix: 8))")
        }
    }

    @Test func copyDatabaseCarriesTheAlertIDCounterIntoAFreshTarget() async throws {
        try await Self.inDirectory { directory in
            let source = directory.appendingPathComponent("source.sqlite3").path
            #expect(try await Self.run(["region", "set", "--id", "1", "--agency-id", "1"], database: source).status == 0)
            for header in ["First", "Second", "Third"] {
                #expect(
                    try await Self.run(
                        ["alert", "create", "--region", "1", "--header", header, "--start", "2026-12-01T08:00:00Z"],
                        database: source
                    ).status == 0)
            }
            #expect(try await Self.run(["alert", "delete", "3"], database: source).status == 0)
            var from = SidecarConfiguration()
            from.database = source
            var to = SidecarConfiguration()
            to.database = directory.appendingPathComponent("target.sqlite3").path
            let sourceDatabase = try await from.openMigrated(readsOnly: true) { _ in }.database
            let targetDatabase = try await to.openMigrated { _ in }.database
            let counts = try await DatabaseCopy.run(from: sourceDatabase, to: targetDatabase, replace: false) { _ in }
            await sourceDatabase.close()
            await targetDatabase.close()
            #expect(counts.first { $0.table == "alerts" }?.rows == 2)
            let created = try await Self.run(
                ["alert", "create", "--region", "1", "--header", "Fourth", "--start", "2026-12-01T08:00:00Z"],
                database: to.database)
            #expect(
                created.output.first?.hasPrefix("created alert 4 ") == true, "a deleted alert's id is never reused after a copy: \(created.output)")
        }
    }
}
