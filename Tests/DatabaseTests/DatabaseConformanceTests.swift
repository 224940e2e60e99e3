import Foundation
import Testing
@testable import Database

/// What every backend behind `Database` must do alike. Runs on SQLite always
/// and on PostgreSQL when `SIDECAR_TEST_POSTGRES_URL` names a server where
/// the role may create databases (`script/test` starts one).
@Suite("Database conformance (SQLite and PostgreSQL)")
struct DatabaseConformanceTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, postgresql
        var testDescription: String { rawValue }
        static var available: [Backend] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgresql] }
    }

    static let postgresURL = ProcessInfo.processInfo.environment["SIDECAR_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// A fresh, empty database of the backend; removed afterwards.
    static func withDatabase(_ backend: Backend, _ body: (any Database) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-conformance-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let database = try SQLiteDatabase(path: directory.appendingPathComponent("db.sqlite3").path)
            do { try await body(database) } catch { await database.close(); throw error }
            await database.close()
        case .postgresql:
            let admin = try #require(postgresURL)
            let name = "c_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            try await offPool { try PostgreSQLConnection(PostgresLocation(url: admin)).run("CREATE DATABASE \(name)") }
            let slash = admin.lastIndex(of: "/")!
            let database = try await offPool { try PostgreSQLDatabase(url: admin[..<slash] + "/" + name, connections: 4) }
            do { try await body(database) } catch {
                await database.close()
                try? await offPool { try PostgreSQLConnection(PostgresLocation(url: admin)).run("DROP DATABASE \(name) WITH (FORCE)") }
                throw error
            }
            await database.close()
            try await offPool { try PostgreSQLConnection(PostgresLocation(url: admin)).run("DROP DATABASE \(name) WITH (FORCE)") }
        }
    }

    /// Blocking libpq setup off the small concurrency pool the tests share.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    static let schema = [
        Migration(version: 1, name: "things", sql: """
            CREATE TABLE things (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                score REAL,
                payload BLOB,
                claimed_until INTEGER,
                hits INTEGER NOT NULL DEFAULT 0
            )
            """),
        Migration(version: 2, name: "things index", sql: "CREATE INDEX things_claimed ON things (claimed_until)"),
    ]

    @Test(arguments: Backend.available)
    func migrationsApplyOnceInOrderAndANewerSchemaIsRefused(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            #expect(try await database.migrate(Self.schema.reversed()) == [1, 2])
            #expect(try await database.migrate(Self.schema) == [])
            await #expect(throws: DatabaseError.schemaTooNew(applied: 2, known: 1)) {
                try await database.migrate(Array(Self.schema.prefix(1)))
            }
        }
    }

    @Test(arguments: Backend.available)
    func aFailedMigrationLeavesNothingBehind(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            let broken = Self.schema + [Migration(version: 3, name: "broken", sql: "CREATE TABLE extra (x INTEGER); CREATE TABLE oops (")]
            await #expect(throws: DatabaseError.self) { try await database.migrate(broken) }
            #expect(try await database.migrate(Self.schema) == [1, 2], "nothing of the failed run was kept")
        }
    }

    @Test(arguments: Backend.available)
    func concurrentWritesCommitAndAFailedOneRollsBackAlone(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            try await database.migrate(Self.schema)
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let name = index % 50 == 49 ? "thing-0" : "thing-\(index)"
                        do {
                            try await database.write { connection in
                                try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text(name)])
                                try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text(name + "-twin")])
                            }
                            return true
                        } catch { return false }
                    }
                }
                var results: [Bool] = []
                for await outcome in group { results.append(outcome) }
                return results
            }
            let failures = outcomes.filter { !$0 }.count
            #expect(failures >= 5 && failures <= 6)
            let count = try await database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM things", [])?.optionalInt("n") }
            #expect(count == Int64((300 - failures) * 2), "a failed write leaves no half behind")
        }
    }

    @Test(arguments: Backend.available)
    func constraintViolationsAreTypedAndIDsAreAssigned(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            try await database.migrate(Self.schema)
            let first = try await database.write { try $0.queryOne("INSERT INTO things (name) VALUES ($1) RETURNING id", [.text("a")])?.optionalInt("id") }
            let second = try await database.write { try $0.queryOne("INSERT INTO things (name) VALUES ($1) RETURNING id", [.text("b")])?.optionalInt("id") }
            #expect(first != nil && second != nil && first != second)
            await #expect {
                try await database.write { try $0.execute("INSERT INTO things (name) VALUES ($1)", [.text("a")]) }
            } throws: { error in
                if case DatabaseError.constraintViolation = error { return true }
                return false
            }
        }
    }

    @Test(arguments: Backend.available)
    func valuesRoundTripAndUpsertsCount(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            try await database.migrate(Self.schema)
            try await database.write { connection in
                try connection.execute("INSERT INTO things (name, score, payload, claimed_until) VALUES ($1, $2, $3, $4)",
                                       [.text("zh-Hant ✓ 'quoted' \"x\""), .real(1.5), .blob([0, 1, 255]), .null])
            }
            let row = try await database.read { try $0.queryOne("SELECT * FROM things WHERE name = $1 OR name = $1", [.text("zh-Hant ✓ 'quoted' \"x\"")]) }
            #expect(try row?.value("score") == .real(1.5))
            #expect(try row?.value("payload") == .blob([0, 1, 255]))
            #expect(try row?.value("claimed_until") == .null)
            #expect(try row?.optionalInt("id") != nil)
            // The upsert every store uses: the existing row's column qualified.
            for expected in 1...3 {
                let hits = try await database.write { connection in
                    try connection.queryOne("""
                        INSERT INTO things (name, hits) VALUES ($1, 1)
                        ON CONFLICT (name) DO UPDATE SET hits = things.hits + 1 RETURNING hits
                        """, [.text("counter")])?.optionalInt("hits")
                }
                #expect(hits == Int64(expected))
            }
            let changed = try await database.write { try $0.execute("UPDATE things SET score = $1 WHERE score IS NULL", [.real(2)]) }
            #expect(changed == 1, "the number of rows changed")
        }
    }

    @Test(arguments: Backend.available)
    func claimsByTwoClaimersAreDisjoint(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            try await database.migrate(Self.schema)
            try await database.write { connection in
                for index in 0..<200 { try connection.execute("INSERT INTO things (name) VALUES ($1)", [.text("job-\(index)")]) }
            }
            let skipLocked = database.dialect.skipLocked
            let claimed = await withTaskGroup(of: [Int64].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var mine: [Int64] = []
                        while true {
                            let page = (try? await database.write { connection in
                                try connection.query("""
                                    UPDATE things SET claimed_until = $2 WHERE id IN (
                                        SELECT id FROM things WHERE claimed_until IS NULL ORDER BY id LIMIT $1\(skipLocked))
                                    RETURNING id
                                    """, [.integer(7), .integer(1)]).compactMap { try $0.optionalInt("id") }
                            }) ?? []
                            if page.isEmpty { return mine }
                            mine += page
                        }
                    }
                }
                var all: [[Int64]] = []
                for await ids in group { all.append(ids) }
                return all
            }
            let flat = claimed.flatMap { $0 }
            #expect(flat.count == 200)
            #expect(Set(flat).count == 200, "no row claimed twice")
        }
    }

    @Test(arguments: Backend.available)
    func writesAfterCloseFail(backend: Backend) async throws {
        try await Self.withDatabase(backend) { (database: any Database) async throws in
            await database.close()
            await #expect(throws: DatabaseError.closed) { try await database.write { _ in 1 } }
        }
    }

    @Test(.enabled(if: postgresURL != nil, "needs SIDECAR_TEST_POSTGRES_URL"))
    func anUnreachableServerIsAClearErrorNamingTheHostButNotThePassword() throws {
        do {
            _ = try PostgreSQLDatabase(url: "postgres://someone:hunter2@127.0.0.1:1/nothing", connections: 1)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.description.contains("postgres://someone@127.0.0.1:1/nothing"))
            #expect(!error.description.contains("hunter2"))
        }
        #expect(throws: DatabaseError.invalidConfiguration(
            "unknown sslmode 'sometimes' (use one of allow, disable, prefer, require, verify-ca, verify-full)")) {
            try PostgresLocation(url: "postgres://a:b@127.0.0.1:5432/x?sslmode=sometimes")
        }
        #expect(SQLDialect.postgresql.schema("CREATE TABLE t (id INTEGER PRIMARY KEY, region_id INTEGER PRIMARY KEY, x REAL, b BLOB)")
            == "CREATE TABLE t (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, region_id BIGINT PRIMARY KEY, x DOUBLE PRECISION, b BYTEA)")
    }
}
