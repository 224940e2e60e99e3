import Foundation
import TestSupport
import Testing

@testable import Database

@Suite("SQLite database")
struct SQLiteDatabaseTests {
    static func withDatabase(synchronous: SQLiteDatabase.Synchronous = .normal, _ body: (SQLiteDatabase, String) async throws -> Void) async throws {
        try await TemporaryDirectory.run("sidecar-db") { directory in
            let path = directory.appendingPathComponent("test.sqlite3").path
            let database = try SQLiteDatabase(path: path, synchronous: synchronous)
            do { try await body(database, path) } catch {
                await database.close()
                throw error
            }
            await database.close()
        }
    }

    static let schema = [
        Migration(version: 1, name: "things", owners: ["test"], statements: [.table("things", withID: true, "name TEXT NOT NULL UNIQUE")]),
        Migration(version: 2, name: "things index", owners: ["test"], statements: [.same("CREATE INDEX things_name ON things (name)")]),
    ]

    /// The checkpoint rule after each commit: ask the checkpointer once a
    /// checkpoint's worth of log waits, fold in here past the bound.
    @Test(
        arguments: [
            (999, 0, SQLiteCheckpointer.Step.nothing), (1000, 0, .ask), (1500, 1000, .nothing), (2000, 1000, .ask),
            (16_383, 16_000, .nothing), (16_384, 16_000, .foldHere), (20_000, 0, .foldHere),
            // The log started over after the last checkpoint folded 5,000 pages.
            (300, 5000, .nothing), (1200, 5000, .ask),
        ] as [(Int, Int, SQLiteCheckpointer.Step)])
    func checkpointStep(pages: Int, folded: Int, step: SQLiteCheckpointer.Step) {
        #expect(SQLiteCheckpointer.step(pages: pages, folded: folded, interval: 1000, writerBound: 16_384) == step)
    }

    /// Writes that fill more than a checkpoint's worth of log get it folded
    /// in on the checkpointer's thread; every row is there, and after the
    /// close the file alone holds them.
    @Test func theLogIsFoldedInOffTheWritersThread() async throws {
        try await TemporaryDirectory.run("sidecar-db") { directory in
            let path = directory.appendingPathComponent("test.sqlite3").path
            let database = try SQLiteDatabase(path: path)
            try await database.migrate(Self.schema)
            let checkpointer = try #require(database.checkpointer)
            // Each row is about 4 KB in the table and again in its index.
            for index in 0..<600 {
                let name = "\(index)-" + String(repeating: "x", count: 4000)
                try await database.write { try $0.execute("INSERT INTO things (name) VALUES ($1)", [.text(name)]) }
            }
            let deadline = ContinuousClock.now + .seconds(120)  // only catches a hang
            while checkpointer.completed == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(checkpointer.completed > 0)
            let count = try await database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM things", [])?.optionalInt("n") }
            #expect(count == 600)
            await database.close()
            let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            #expect(wal == 0, "the closing checkpoint leaves an empty log")
            let reopened = try SQLiteDatabase(path: path)
            let again = try await reopened.read { try $0.queryOne("SELECT COUNT(*) AS n FROM things", [])?.optionalInt("n") }
            #expect(again == 600)
            await reopened.close()
        }
    }

    @Test func migrationsApplyOnceAndInOrder() async throws {
        try await Self.withDatabase { database, _ in
            #expect(try await database.migrate(Self.schema.reversed()) == [1, 2])
            #expect(try await database.migrate(Self.schema) == [])
            let versions = try await database.read {
                try $0.query("SELECT version FROM schema_migrations ORDER BY version", []).compactMap { try $0.optionalInt("version") }
            }
            #expect(versions == [1, 2])
        }
    }

    @Test func aFailedMigrationLeavesTheDatabaseAsItWas() async throws {
        try await Self.withDatabase { database, _ in
            let broken =
                Self.schema + [
                    Migration(
                        version: 3, name: "broken", owners: ["test"],
                        statements: [.same("CREATE TABLE extra (x BIGINT)"), .same("CREATE TABLE oops (")])
                ]
            await #expect(throws: DatabaseError.self) { try await database.migrate(broken) }
            let tables = try await database.read { connection in
                try connection.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", []).compactMap {
                    try $0.optionalString("name")
                }
            }
            #expect(!tables.contains("things"), "version 1 and 2 ran in the same transaction and were rolled back")
            #expect(!tables.contains("extra"))
            // The good migrations still apply afterwards.
            #expect(try await database.migrate(Self.schema) == [1, 2])
        }
    }

    @Test func aNewerSchemaIsRefused() async throws {
        try await Self.withDatabase { database, _ in
            try await database.migrate(Self.schema)
            await #expect(throws: DatabaseError.schemaTooNew(applied: 2, known: 1)) {
                try await database.migrate(Array(Self.schema.prefix(1)))
            }
        }
    }

    @Test func concurrentWritesAllCommitAndAFailedOneRollsBackAlone() async throws {
        try await Self.withDatabase { database, _ in
            try await database.migrate(Self.schema)
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<500 {
                    group.addTask {
                        // Every 50th write collides with an earlier name and must fail alone.
                        let name = index % 50 == 49 ? "thing-0" : "thing-\(index)"
                        do {
                            try await database.write { connection in
                                try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text(name)])
                                try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text(name + "-twin")])
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                var results: [Bool] = []
                for await outcome in group { results.append(outcome) }
                return results
            }
            let failures = outcomes.filter { !$0 }.count
            #expect(failures >= 9 && failures <= 10)
            let count = try await database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM things", [])?.optionalInt("n") }
            #expect(count == Int64((500 - failures) * 2), "a failed write leaves no half behind")
        }
    }

    @Test func constraintViolationsAreTyped() async throws {
        try await Self.withDatabase { database, _ in
            try await database.migrate(Self.schema)
            try await database.write { try $0.execute("INSERT INTO things (name) VALUES ($1)", [.text("a")]) }
            await #expect {
                try await database.write { try $0.execute("INSERT INTO things (name) VALUES ($1)", [.text("a")]) }
            } throws: { error in
                if case DatabaseError.constraintViolation = error { return true }
                return false
            }
        }
    }

    @Test func valuesRoundTripAndPlaceholdersMayRepeat() async throws {
        try await Self.withDatabase { database, _ in
            try await database.migrate([
                Migration(
                    version: 1, name: "v", owners: ["test"],
                    statements: [.same("CREATE TABLE v (i INTEGER, r REAL, t TEXT, b BLOB, n TEXT)")])
            ])
            try await database.write { connection in
                try connection.execute(
                    "INSERT INTO v VALUES ($1, $2, $3, $4, $5)",
                    [.integer(1_754_809_200_000), .real(1.5), .text("zh-Hant ✓ \u{0}x"), .blob([0, 1, 255]), .null])
            }
            let row = try await database.read { try $0.queryOne("SELECT * FROM v WHERE i = $1 OR i = $1", [.integer(1_754_809_200_000)]) }
            #expect(try row?.value("i") == .integer(1_754_809_200_000))
            #expect(try row?.value("r") == .real(1.5))
            #expect(try row?.value("t") == .text("zh-Hant ✓ \u{0}x"))
            #expect(try row?.value("b") == .blob([0, 1, 255]))
            #expect(try row?.value("n") == .null)
        }
    }

    @Test("synchronous is set on every connection", arguments: [(SQLiteDatabase.Synchronous.normal, Int64(1)), (.full, 2)])
    func synchronousPragma(mode: SQLiteDatabase.Synchronous, expected: Int64) async throws {
        try await Self.withDatabase(synchronous: mode) { database, _ in
            let reader = try await database.read { try $0.queryOne("PRAGMA synchronous", [])?.optionalInt("synchronous") }
            let writer = try await database.write { try $0.queryOne("PRAGMA synchronous", [])?.optionalInt("synchronous") }
            let journal = try await database.write { try $0.queryOne("PRAGMA journal_mode", [])?.optionalString("journal_mode") }
            #expect(reader == expected)
            #expect(writer == expected)
            #expect(journal == "wal")
        }
    }

    @Test func writesAfterCloseFail() async throws {
        try await Self.withDatabase { database, _ in
            await database.close()
            await #expect(throws: DatabaseError.closed) { try await database.write { _ in 1 } }
        }
    }
}
