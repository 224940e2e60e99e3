@testable import Database
import Foundation
import HTTPServer
import TestSupport
@testable import SidecarKit

/// A whole sidecar on an ephemeral loopback port with a real SQLite file in a
/// temporary directory, a manual clock and a log kept in memory.
struct TestSidecar {
    let sidecar: Sidecar
    let clock: ManualClock
    let log: MemorySink
    var port: Int { sidecar.server.port }
    var pushStore: PushRegistrationStore { PushRegistrationStore(database: sidecar.database) }

    static func run(clock: ManualClock = ManualClock(), _ configure: (inout SidecarConfiguration) -> Void = { _ in },
                    _ body: (TestSidecar) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = SidecarConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.database = directory.appendingPathComponent("sidecar.sqlite3").path
        let postgres = try await TestBackend.offPool { try TestBackend.makePostgresDatabase() }
        defer { if let postgres { Thread { TestBackend.dropPostgresDatabase(postgres) }.start() } }
        if let postgres {
            configuration.database = postgres.url
            configuration.postgresConnections = 3  // many tests run at once
        }
        configuration.regions = SharedFixtures.path("ios/regions-v3.json")
        configuration.shutdownTimeoutSeconds = 5
        configuration.sendRetry = .immediate
        configure(&configuration)
        let log = MemorySink()
        let sidecar = try await Sidecar.prepare(configuration: configuration, clock: clock, logger: Logger(level: .debug, format: configuration.logFormat, sink: log))
        try await sidecar.start()
        let harness = TestSidecar(sidecar: sidecar, clock: clock, log: log)
        do { try await body(harness) } catch {
            await sidecar.shutdown()
            throw error
        }
        await sidecar.shutdown()
    }

    func post(_ path: String, _ fields: [(String, String)], source: String? = nil) async throws -> RawResponse {
        try await RawHTTPClient.postForm(port: port, path, fields, source: source)
    }

    func postJSON(_ path: String, _ json: String) async throws -> RawResponse {
        try await RawHTTPClient.postJSON(port: port, path, json)
    }

    func send(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = [], source: String? = nil) async throws -> RawResponse {
        try await RawHTTPClient.send(port: port, RawHTTPClient.request(method, target, headers: headers, body: body), source: source)
    }

    /// Waits (briefly, on real time) for a background loop to reach a state.
    func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

/// Which database the suites run against: SQLite files by default, or, with
/// `SIDECAR_TEST_POSTGRES_URL` set (a role allowed to create databases), a
/// fresh PostgreSQL database per test. `script/test` runs the store and
/// route suites both ways.
enum TestBackend {
    static let postgresURL = ProcessInfo.processInfo.environment["SIDECAR_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var isPostgreSQL: Bool { postgresURL != nil }
    static var isSQLite: Bool { postgresURL == nil }

    struct PostgresDatabase: Sendable { let name: String; let url: String }

    /// Runs blocking work (libpq) on a plain thread: tests run many at once
    /// on a small concurrency pool, whose threads the servers under test need.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// A new empty database on the test server, or nil on SQLite.
    static func makePostgresDatabase() throws -> PostgresDatabase? {
        guard let admin = postgresURL else { return nil }
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try PostgreSQLConnection(PostgresLocation(url: admin)).run("CREATE DATABASE \(name)")
        return PostgresDatabase(name: String(name), url: url(admin, database: String(name)))
    }

    static func dropPostgresDatabase(_ database: PostgresDatabase) {
        guard let admin = postgresURL else { return }
        try? PostgreSQLConnection(PostgresLocation(url: admin)).run("DROP DATABASE IF EXISTS \(database.name) WITH (FORCE)")
    }

    /// The same server URL naming another database.
    static func url(_ url: String, database: String) -> String {
        let query = url.firstIndex(of: "?").map { String(url[$0...]) } ?? ""
        let base = url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url
        let slash = base.lastIndex(of: "/")!
        return base[..<slash] + "/" + database + query
    }
}

/// A temporary directory for a test's files, removed after the body.
enum TemporaryDirectory {
    static func run(_ prefix: String, _ body: (URL) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(directory)
    }
}
