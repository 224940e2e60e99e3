import Database
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// `copy-database` against the migration list: a row in every table it
/// knows, copied there and back (SQLite → PostgreSQL → SQLite when the suite
/// runs on PostgreSQL, SQLite → SQLite → SQLite otherwise), arrives whole.
@Suite("Operations: copy-database carries every table")
struct DatabaseCopyTests {
    /// One row per table, by the migration list's names: a table added
    /// later fails `everyTableIsCopiedThereAndBack` until it has one here.
    static let rows: [String: [(String, SQLValue)]] = [
        "push_registrations": [
            ("id", 7), ("region_id", 1), ("token", "tok-ios-1"), ("operating_system", "ios"), ("locale", "es"), ("raw_locale", "es-MX"),
            ("apns_sandbox", 1), ("test_device", 1), ("description", "phone"), ("created_at", 100), ("last_seen_at", 200),
        ],
        "alarms": [
            ("id", 3), ("token", "alarm-token"), ("region_id", 1), ("api_version", 2), ("user_push_id", "push-1"), ("operating_system", "android"),
            ("stop_id", "1_75403"), ("trip_id", "t1"), ("service_date", 1_796_000_000_000), ("seconds_before", 300), ("message", "Bus soon"),
            ("next_check_at", 1_796_000_000), ("created_at", 1_795_999_000),
        ],
        "region_settings": [("region_id", 1), ("agency_id", "1"), ("timezone", "America/Los_Angeles")],
        "alerts": [
            ("id", 11), ("region_id", 1), ("agency_id", "1"), ("header", "Detour"), ("description", "Skips 45th"), ("cause", "CONSTRUCTION"),
            ("effect", "DETOUR"), ("severity", "WARNING"), ("starts_at", 1_796_000_000), ("published", 1), ("created_at", 1), ("updated_at", 2),
            ("source_id", 5), ("source_entity", "e-1"), ("source_alert", .blob([0x0A, 0x01, 0x01])), ("in_feed", 1),
        ],
        "alert_translations": [("alert_id", 11), ("language", "es"), ("header", "Desvío"), ("source_version", 1), ("source_header", "Detour")],
        "alert_feed_versions": [("region_id", 1), ("version", 9), ("changed_at", 1_796_000_000)],
        "alert_schedules": [
            ("id", 3), ("alert_id", 11), ("region_id", 1), ("audience", "all"), ("at_start", 1), ("run_at", 1_796_000_000), ("if_changed", "hold"),
            ("alert_fingerprint", "ab12"), ("status", "scheduled"), ("created_by", "cli:ops"), ("created_at", 1), ("updated_at", 1),
        ],
        "approval_requests": [
            ("id", 2), ("region_id", 1), ("alert_id", 11), ("action", "publish"), ("requested_by", "user:ann@agency.org"), ("requested_at", 5),
            ("status", "approved"), ("decided_by", "cli:bob"), ("decided_at", 6),
        ],
        "alert_sends": [("id", 4), ("alert_id", 11), ("audience", "all"), ("status", "done"), ("started_at", 10), ("messages", #"{"en":{}}"#)],
        "api_keys": [
            ("id", 2), ("name", "ops"), ("prefix", "sidecar_abc"), ("key_hash", "f00d"), ("created_at", 1), ("regions", "1"), ("can_push", 1),
            ("can_manage_sources", 1),
        ],
        "ghost_bus_reports": [
            ("id", 6), ("public_id", "g-1"), ("region_id", 1), ("user_identifier", "u"), ("trip_identifier", "t1"), ("service_date", 1),
            ("wait_duration_minutes", 5), ("user_latitude", .real(47.6)), ("created_at", 3),
        ],
        "studies": [("id", 8), ("region_id", 1), ("name", "Rider survey"), ("created_at", 1)],
        "surveys": [("id", 9), ("region_id", 1), ("study_id", 8), ("name", "Q4"), ("show_on_map", 1), ("created_at", 1), ("updated_at", 1)],
        "survey_questions": [("id", 12), ("survey_id", 9), ("position", 0), ("content", #"{"type":"text"}"#)],
        "survey_responses": [
            ("id", 13), ("public_id", "r-1"), ("survey_id", 9), ("user_identifier", "u"), ("responses", "[]"), ("created_at", 1), ("updated_at", 1),
        ],
        "live_activities": [
            ("id", 14), ("token", "la"), ("region_id", 1), ("activity_id", "act"), ("push_token", "pt-1"), ("stop_id", "s"),
            ("route_short_name", "44"), ("trip_headsign", "Ballard"), ("expires_at", 1_796_100_000), ("created_at", 1),
        ],
        "alert_send_pending": [("send_id", 4), ("registration_id", 7)],
        "console_users": [
            ("id", 15), ("email", "admin@example.org"), ("password_hash", "scrypt$x"), ("role", "admin"), ("created_at", 1), ("updated_at", 1),
        ],
        "console_sessions": [("id_hash", "h"), ("user_id", 15), ("csrf_token", "c"), ("created_at", 1), ("last_seen_at", 2)],
        "audit_log": [("id", 16), ("at", 1), ("actor", "cli:root"), ("action", "alert.create"), ("region_id", 1), ("target", "alert 11")],
        "relay_bound_tokens": [("token", "pt-1"), ("bound_at", 5)],
        "alert_id_sequence": [("last_id", 11)],
        "survey_id_sequences": [("name", "studies"), ("last_id", 12)],
        "console_secrets": [("name", "form"), ("value", "c2VjcmV0")],
        "console_spent_tokens": [("token_hash", "spent"), ("spent_at", 9)],
        "alert_sources": [
            ("id", 5), ("region_id", 1), ("url", "https://feeds.example.org/a.pb"), ("mode", "mirror"), ("interval_seconds", 60), ("push", "review"),
            ("min_severity", "WARNING"), ("scope", "route"), ("audience", "all"), ("flood_threshold", 20), ("max_bytes", 1024), ("created_at", 1),
            ("updated_at", 1), ("allow_private", 1), ("pushes_per_hour", 3),
        ],
        "source_alerts": [
            ("source_id", 5), ("entity_id", "e-1"), ("alert_id", 11), ("content_hash", "c"), ("material_hash", "m"), ("decision", "pushed"),
            ("present", 1), ("changed_at", 1), ("first_seen_at", 1), ("hidden", 1),
        ],
        "admin_idempotency": [("caller_id", 2), ("idempotency_key", "k"), ("fingerprint", "f"), ("status", 201), ("created_at", 1)],
    ]

    /// A fresh migrated database of the suite's backend (or SQLite), and how to drop it.
    static func database(_ directory: URL, _ name: String, postgres: Bool) async throws -> (any Database, () async -> Void) {
        var configuration = SidecarConfiguration()
        var made: TestBackend.PostgresDatabase?
        if postgres, let created = try await offPool({ try TestBackend.makePostgresDatabase() }) {
            made = created
            configuration.database = created.url
        } else {
            configuration.database = directory.appendingPathComponent("\(name).sqlite3").path
        }
        let database = try await configuration.openMigrated { _ in }.database
        return (
            database,
            {
                await database.close()
                if let made { try? await offPool { try TestBackend.dropPostgresDatabase(made) } }
            }
        )
    }

    static func allRows(_ database: any Database, _ table: String) async throws -> [[SQLValue]] {
        try await database.read { connection in
            let columns = try connection.queryOne("SELECT * FROM \(raw: table) LIMIT 1")?.columns ?? []
            guard !columns.isEmpty else { return [] }
            return try connection.query("SELECT * FROM \(raw: table) ORDER BY \(raw: (1...columns.count).map(String.init).joined(separator: ", "))")
                .map { row in
                    row.values.map { value in if case .real(let number) = value, number == number.rounded() { .integer(Int64(number)) } else { value }
                    }
                }
        }
    }

    @Test func everyTableIsCopiedThereAndBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (source, dropSource) = try await Self.database(directory, "source", postgres: false)
        let (middle, dropMiddle) = try await Self.database(directory, "middle", postgres: TestBackend.isPostgreSQL)
        let (back, dropBack) = try await Self.database(directory, "back", postgres: false)
        let tables = DatabaseCopy.tables
        for table in tables where Self.rows[table.name] == nil {
            Issue.record("\(table.name) is in the migration list but has no row here: add one, so copy-database is checked for it")
        }
        #expect(
            Set(Migrations.tables(Migrations.sidecar).map(\.name)) == Set(tables.map(\.name)).union(DatabaseCopy.keptApart.keys),
            "every table is copied or kept apart with a reason")
        try await source.write { connection in
            for table in tables {
                guard let row = Self.rows[table.name] else { continue }
                if DatabaseCopy.replaced.contains(table.name) { try connection.execute("DELETE FROM \(raw: table.name)") }
                let placeholders = (1...row.count).map { "$\($0)" }.joined(separator: ", ")
                try connection.execute(
                    "INSERT INTO \(table.name) (\(row.map(\.0).joined(separator: ", "))) VALUES (\(placeholders))", row.map(\.1))
            }
        }
        _ = try await DatabaseCopy.run(from: source, to: middle, replace: false) { _ in }
        _ = try await DatabaseCopy.run(from: middle, to: back, replace: false) { _ in }
        for table in tables {
            let original = try await Self.allRows(source, table.name)
            #expect(!original.isEmpty, "\(table.name) has its row")
            #expect(try await Self.allRows(back, table.name) == original, "\(table.name) arrived whole, there and back")
        }
        // A copied database continues after the copied ids.
        let next = try await middle.write { connection in
            try connection.queryOne(
                "INSERT INTO console_users (email, password_hash, role, created_at, updated_at) VALUES ('b@example.org', 'x', 'viewer', 1, 1) RETURNING id"
            )?.int("id")
        }
        #expect(next == 16, "identities advanced past the copied ids")
        // A target that holds data is refused, naming what it holds.
        await #expect(throws: DatabaseCopy.Failure.self) { _ = try await DatabaseCopy.run(from: source, to: middle, replace: false) { _ in } }
        await dropSource()
        await dropMiddle()
        await dropBack()
    }

    /// SIGTERM during a copy stops it between pages: what was copied is
    /// committed, the error says how far it got and what to run, and the
    /// same command with `--replace` then completes it.
    @Test func aStoppedCopySaysHowFarItGotAndCompletesWithReplace() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("copy-stop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (source, dropSource) = try await Self.database(directory, "source", postgres: false)
        let (target, dropTarget) = try await Self.database(directory, "target", postgres: TestBackend.isPostgreSQL)
        try await source.write { connection in
            for index in 0..<3 {
                try connection.execute(
                    "INSERT INTO push_registrations (region_id, token, operating_system, locale, created_at, last_seen_at) VALUES (1, $1, 'ios', 'en', 1, 1)",
                    [.text("stop-copy-token-\(index)")])
            }
        }
        let stop = StopSignal()
        let lines = Locked<[String]>([])
        do {
            _ = try await DatabaseCopy.run(from: source, to: target, replace: false, stop: stop) { line in
                lines.withLock { $0.append(line) }
                stop.stop()
            }
            Issue.record("the copy ran to the end although it was stopped after its first table")
        } catch let stopped as DatabaseCopy.Stopped {
            #expect(stopped.tablesCopied == 1 && stopped.tables == DatabaseCopy.tables.count)
            #expect(stopped.description.contains("run the same command again with --replace"))
        }
        #expect(lines.value == ["push_registrations: 3 rows"])
        let counts = try await DatabaseCopy.run(from: source, to: target, replace: true) { _ in }
        #expect(counts.first { $0.table == "push_registrations" }?.rows == 3)
        await dropSource()
        await dropTarget()
    }
}

// Literals for the rows above (tests only).
extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
}
