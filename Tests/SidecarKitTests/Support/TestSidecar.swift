import Foundation
import HTTPServer
import TestSupport

@testable import SidecarKit

/// A whole sidecar on an ephemeral loopback port with a real SQLite file in a
/// temporary directory (or a PostgreSQL database of its own, see
/// `TestBackend`), a manual clock and a log kept in memory.
struct TestSidecar {
    let sidecar: Sidecar
    let clock: ManualClock
    let log: MemorySink
    var port: Int { sidecar.server.port }
    var pushStore: PushRegistrationStore { PushRegistrationStore(database: sidecar.database) }

    static func run(
        clock: ManualClock = ManualClock(), _ configure: (inout SidecarConfiguration) -> Void = { _ in },
        _ body: (TestSidecar) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = SidecarConfiguration()
        configuration.server.host = "127.0.0.1"
        configuration.server.port = 0
        configuration.database = directory.appendingPathComponent("sidecar.sqlite3").path
        let postgres = try await offPool { try TestBackend.makePostgresDatabase() }
        do {
            try await serve(configuration, postgres: postgres, clock: clock, configure, body)
        } catch {
            await drop(postgres)
            throw error
        }
        // Awaited, so a test run leaves no database behind when it exits.
        await drop(postgres)
    }

    private static func drop(_ postgres: TestBackend.PostgresDatabase?) async {
        guard let postgres else { return }
        _ = try? await offPool { try TestBackend.dropPostgresDatabase(postgres) }
    }

    private static func serve(
        _ base: SidecarConfiguration, postgres: TestBackend.PostgresDatabase?, clock: ManualClock,
        _ configure: (inout SidecarConfiguration) -> Void, _ body: (TestSidecar) async throws -> Void
    ) async throws {
        var configuration = base
        if let postgres {
            configuration.database = postgres.url
            configuration.postgresConnections = 3  // many tests run at once
        }
        configuration.regions = try SharedFixtures.requirePath("ios/regions-v3.json")
        configuration.shutdownTimeoutSeconds = 5
        configuration.sendRetry = .immediate
        configure(&configuration)
        let log = MemorySink()
        let sidecar = try await Sidecar.prepare(
            configuration: configuration, clock: clock, logger: Logger(level: .debug, format: configuration.logFormat, sink: log))
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

    func send(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = [], source: String? = nil) async throws
        -> RawResponse
    {
        try await RawHTTPClient.send(port: port, RawHTTPClient.request(method, target, headers: headers, body: body), source: source)
    }

    /// Waits for a background loop to reach a state. The minute's deadline
    /// only catches a hang: a busy machine never makes it fail.
    func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

extension TestSidecar {
    /// Alert authoring as the admin API, the console and the CLI share it.
    var administration: AlertAdministration {
        AlertAdministration(store: AlertStore(database: sidecar.database), regions: sidecar.regions, clock: clock, cache: sidecar.alertFeedCache)
    }
}

extension TestSidecar {
    /// Registers `count` iOS devices in region 1 (`prefix-0`, `prefix-1`, ...), English, not test devices.
    func registerDevices(_ prefix: String, count: Int) async throws {
        for index in 0..<count {
            _ = try await pushStore.register(
                PushRegistrationRequest(
                    token: "\(prefix)-\(index)", operatingSystem: .ios, locale: nil, testDevice: nil, description: nil,
                    apnsSandbox: false, apnsSandboxUnrecognized: false),
                regionID: 1, catalog: .standard, now: clock.now())
        }
    }
}
