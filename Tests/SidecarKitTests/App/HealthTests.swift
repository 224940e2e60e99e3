import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

/// `/healthz` answers truthfully, storage faults included (said in public
/// by name only, in the log in full), and a bad regions file stops the start.
@Suite("App: health and start-up")
struct HealthAndStartupTests {
    @Test func healthzAnswersWhenTheDatabaseDoes() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let response = try await app.send("GET", "/healthz")
            #expect(response.status == 200)
            #expect(response.json?["status"] as? String == "ok")
        }
    }

    @Test func aMalformedRegionsFileIsAStartupErrorWithExitCode2() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-regions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("regions.json")
        try Data("{\"data\": ".utf8).write(to: file)
        var configuration = SidecarConfiguration()
        configuration.regions = file.path
        configuration.database = directory.appendingPathComponent("db.sqlite3").path
        do {
            _ = try await Sidecar.prepare(configuration: configuration, logger: Logger(level: .error, sink: MemorySink()))
            Issue.record("started with a malformed regions file")
        } catch {
            #expect(error.exitCode == 2)
            #expect(error.description.contains(file.path))
        }
        configuration.regions = directory.appendingPathComponent("missing.json").path
        do {
            _ = try await Sidecar.prepare(configuration: configuration, logger: Logger(level: .error, sink: MemorySink()))
            Issue.record("started with a missing regions file")
        } catch {
            #expect(error.exitCode == 2)
        }
    }

    @Test func withoutRegionsTheBundledSampleServesRegions0And1() async throws {
        try await TestSidecar.run({ $0.regions = nil }) { (app: TestSidecar) async throws in
            #expect(app.sidecar.regions.all.map(\.id) == [0, 1])
            #expect(try await app.post("/api/v2/regions/1/push_registrations", [("token", "t-000000"), ("operating_system", "ios")]).status == 204)
        }
    }

    // MARK: Storage faults told truthfully

    @Test(.enabled(if: TestBackend.isSQLite, "a SQLite file")) func healthzTellsTheTruthWhenTheDatabaseFileIsDeleted() async throws {
        try await TestSidecar.run({ $0.healthCacheSeconds = 0 }) { app in
            #expect(try await app.send("GET", "/healthz").status == 200)
            #expect(try await app.send("HEAD", "/healthz").status == 200)
            try FileManager.default.removeItem(atPath: app.sidecar.configuration.database)
            let health = try await app.send("GET", "/healthz")
            #expect(health.status == 503)
            #expect(health.json?["problems"] as? [String] == ["database file"], "the public body names the failing check")
            #expect(!health.text.contains(app.sidecar.configuration.database) && !health.text.contains("deleted"), "and nothing more")
            let write = try await app.post("/api/v2/regions/1/push_registrations", [("token", "lost-000"), ("operating_system", "ios")])
            #expect(write.status == 503, "never a 2xx for a write that would be lost")
            #expect(app.log.lines.contains { $0.contains("was deleted while the server was running") }, "the log says why")
        }
    }

    @Test(.enabled(if: TestBackend.isSQLite, "a SQLite file")) func healthzNoticesACorruptDatabase() async throws {
        try await TestSidecar.run({ $0.healthCacheSeconds = 0 }) { app in
            for index in 0..<200 {
                _ = try await app.pushStore.register(
                    PushRegistrationRequest(
                        token: "device-\(index)-" + String(repeating: "z", count: 200), operatingSystem: .ios, locale: nil,
                        testDevice: nil, description: nil, apnsSandbox: false, apnsSandboxUnrecognized: false),
                    regionID: 1, catalog: .standard, now: app.clock.now())
            }
            // Move everything from the WAL into the main file, then damage it.
            try SQLiteConnection(path: app.sidecar.configuration.database, readOnly: false, synchronous: .normal).run(
                "PRAGMA wal_checkpoint(TRUNCATE)")
            let handle = try #require(FileHandle(forWritingAtPath: app.sidecar.configuration.database))
            try handle.seek(toOffset: 4096 * 2)
            handle.write(Data((0..<(4096 * 8)).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }))
            try handle.close()
            let health = try await app.send("GET", "/healthz")
            #expect(health.status == 503)
            let problems = Set(health.json?["problems"] as? [String] ?? [])
            #expect(!problems.isEmpty && problems.isSubset(of: ["read", "integrity", "write"]))
            #expect(!health.text.contains("malformed") && !health.text.contains(".sqlite3"), "no engine message or path in public")
            #expect(
                app.log.lines.contains { $0.contains("storage is unhealthy") && ($0.contains("malformed") || $0.contains("corrupt")) },
                "the details are in the log")
        }
    }
}
