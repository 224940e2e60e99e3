import Core
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

/// Issue 14: `sidecar doctor` against working and broken configurations,
/// and `sidecar healthcheck`.
@Suite("Operations: doctor and health check", .enabled(if: TestBackend.isSQLite, "no storage of its own: once, on the SQLite run"))
struct DoctorTests {
    /// A temporary directory removed after the body.
    static func inDirectory(_ body: (URL) async throws -> Void) async throws {
        try await TemporaryDirectory.run("sidecar-doctor", body)
    }

    /// A OneBusAway server accepting the key `good`, and a gorush answering
    /// `/healthz`, for the body.
    static func withUpstreams(_ body: (HTTPServer) async throws -> Void) async throws {
        var router = Router()
        router.add(
            Route("GET", "/api/where/current-time", suffixes: [".json"]) { request in
                request.parameters["key"] == "key-4711"
                    ? .bytes(200, contentType: "application/json", Array(#"{"code":200,"currentTime":1767225600000,"text":"OK","version":2}"#.utf8))
                    : .bytes(200, contentType: "application/json", Array(#"{"code":401,"text":"permission denied","version":1}"#.utf8))
            })
        router.add(Route("GET", "/healthz") { _ in .json(200, ["status": "ok"]) })
        let server = try startLocalServer(router)
        do { try await body(server) } catch {
            _ = await server.shutdown()
            throw error
        }
        _ = await server.shutdown()
    }

    static func regionsFile(in directory: URL, obaBaseURL: String) throws -> String {
        let file = directory.appendingPathComponent("regions.json")
        try Data(#"{"data":{"list":[{"id":1,"regionName":"Puget Sound","obaBaseUrl":"\#(obaBaseURL)","sidecarBaseUrl":null}]}}"#.utf8).write(to: file)
        return file.path
    }

    /// A database in `directory`, region 1 on `upstream`, the OneBusAway key and gorush's port.
    static func configuration(in directory: URL, upstream: HTTPServer, key: String, gorushPort: Int) throws -> SidecarConfiguration {
        var configuration = SidecarConfiguration()
        configuration.database = directory.appendingPathComponent("sidecar.sqlite3").path
        configuration.regions = try regionsFile(in: directory, obaBaseURL: "http://127.0.0.1:\(upstream.port)/")
        configuration.obaAPIKey = key
        configuration.gorushURL = "http://127.0.0.1:\(gorushPort)"
        return configuration
    }

    static func run(_ configuration: SidecarConfiguration, offline: Bool = false) async -> (Int32, [String]) {
        let lines = Locked<[String]>([])
        let status = await Doctor.run(configuration, offline: offline) { line in lines.withLock { $0.append(line) } }
        return (status, lines.value)
    }

    /// A port nothing listens on (bound, then released).

    @Test func configurationWarningsNameTheirFix() {
        var configuration = SidecarConfiguration()
        var checks = Doctor.configurationChecks(configuration)
        #expect(checks.contains { $0.name == "public url" && $0.status == .warning && $0.fix?.contains("--public-url") == true })
        configuration.publicURL = "https://sidecar.example.org"
        checks = Doctor.configurationChecks(configuration)
        #expect(!checks.contains { $0.name == "public url" })
        #expect(checks.contains { $0.name == "client address" && $0.fix?.contains("--trusted-proxies") == true })
        configuration.trustedProxies = try? TrustedProxies("127.0.0.1")
        configuration.metricsListen = SidecarConfiguration.ListenAddress(host: "0.0.0.0", port: 9100)
        checks = Doctor.configurationChecks(configuration)
        #expect(!checks.contains { $0.name == "client address" })
        #expect(checks.contains { $0.name == "metrics" && $0.status == .warning })
    }

    @Test func databaseChecksTellAMissingFileFromAnUnusableOne() async throws {
        try await Self.inDirectory { directory in
            var configuration = SidecarConfiguration()
            configuration.database = directory.appendingPathComponent("new.sqlite3").path
            #expect(await Doctor.databaseChecks(configuration).map(\.status) == [.ok])

            // A state directory nobody made yet is a note: serve makes it.
            configuration.database = directory.appendingPathComponent("missing/dir/db.sqlite3").path
            let creatable = await Doctor.databaseChecks(configuration)
            #expect(creatable.map(\.status) == [.ok])
            #expect(creatable.first?.detail.contains("serve creates \(directory.path)/missing/dir") == true)

            let garbage = directory.appendingPathComponent("garbage.sqlite3")
            try Data(repeating: 0x5A, count: 8192).write(to: garbage)
            configuration.database = garbage.appendingPathComponent("dir/db.sqlite3").path
            #expect(await Doctor.databaseChecks(configuration).map(\.status) == [.failed], "a file where a directory would go")
            configuration.database = garbage.path
            #expect(await Doctor.databaseChecks(configuration).first?.status == .failed)

            configuration.database = directory.appendingPathComponent("current.sqlite3").path
            let database = try configuration.openDatabase(readers: 1)
            _ = try await database.migrate(Migrations.all)
            await database.close()
            let checks = await Doctor.databaseChecks(configuration)
            #expect(checks.map(\.status) == [.ok])
            #expect(checks.first?.detail.contains("current") == true)
        }
    }

    @Test func aWorkingConfigurationPassesEveryCheck() async throws {
        try await Self.withUpstreams { upstream in
            try await Self.inDirectory { directory in
                var configuration = try Self.configuration(in: directory, upstream: upstream, key: "key-4711", gorushPort: upstream.port)
                configuration.publicURL = "https://sidecar.example.org"
                configuration.trustedProxies = try? TrustedProxies("127.0.0.1")
                let (status, lines) = await Self.run(configuration)
                #expect(status == 0, "\(lines)")
                #expect(lines.contains { $0.hasPrefix("  ok    oba region 1") })
                #expect(lines.contains { $0.hasPrefix("  ok    gorush") })
                #expect(lines.contains { $0.hasPrefix("  ok    regions") })
                #expect(lines.contains { $0.hasPrefix("  ok    disk") })
                #expect(!lines.contains { $0.contains("FAIL") })
                #expect(lines.last?.hasPrefix("all checks passed") == true)
                #expect(!lines.joined().contains("key-4711"), "the API key is never printed")
            }
        }
    }

    @Test func aBrokenConfigurationFailsWithAFixForEachProblem() async throws {
        let closedPort = try ClosedPort()
        defer { withExtendedLifetime(closedPort) {} }
        let closed = closedPort.port
        try await Self.withUpstreams { upstream in
            try await Self.inDirectory { directory in
                var configuration = try Self.configuration(in: directory, upstream: upstream, key: "wrong-key", gorushPort: closed)
                configuration.apnsKeyFile = directory.appendingPathComponent("missing.p8").path
                configuration.apnsKeyID = "KEYID12345"
                configuration.apnsTeamID = "TEAMID1234"
                let (status, lines) = await Self.run(configuration)
                #expect(status == 1)
                for name in ["oba region 1", "gorush", "apns"] {
                    let index = lines.firstIndex { $0.hasPrefix("  FAIL  \(name)") }
                    #expect(index != nil, "\(name) should fail: \(lines)")
                    if let index { #expect(lines[index + 1].hasPrefix("        fix: ")) }
                }
                #expect(lines.contains { $0.contains("refused the API key") })
                #expect(lines.last == "3 checks failed")
                #expect(!lines.joined().contains("wrong-key"))

                // Offline, the network is not touched: only the key file fails.
                let (offlineStatus, offlineLines) = await Self.run(configuration, offline: true)
                #expect(offlineStatus == 1)
                #expect(offlineLines.filter { $0.hasPrefix("  FAIL") }.count == 1)
                #expect(offlineLines.contains { $0.hasPrefix("  skip  onebusaway") })
            }
        }
    }

    @Test func healthCheckExitsZeroOnlyForAHealthyServer() async throws {
        try await TestSidecar.run { app in
            // The wait only catches a hang: the full suite on two cores can hold an answer past 5 s.
            let healthy = Locked<[String]>([])
            #expect(
                await HealthCheck.run(
                    url: "http://127.0.0.1:\(app.port)/healthz", timeoutSeconds: 180, output: { line in healthy.withLock { $0.append(line) } })
                    == 0, "\(healthy.value)")
            let said = Locked<[String]>([])
            #expect(await HealthCheck.run(url: "http://127.0.0.1:\(app.port)/nothing", output: { line in said.withLock { $0.append(line) } }) == 1)
            #expect(said.value.first?.contains("HTTP 404") == true)
            let closedPort = try ClosedPort()
            defer { withExtendedLifetime(closedPort) {} }
            let closed = closedPort.port
            #expect(await HealthCheck.run(url: "http://127.0.0.1:\(closed)/healthz", output: { _ in }) == 1)
        }
    }

    @Test func doctorWarnsAboutTheSampleRegions() async {
        var configuration = SidecarConfiguration()
        configuration.database = ":memory:"
        let lines = Locked<[String]>([])
        _ = await Doctor.run(configuration, offline: true) { line in lines.withLock { $0.append(line) } }
        #expect(
            lines.value.contains { $0.contains("regions") && $0.contains("bundled sample regions are in use") && $0.hasPrefix("  warn") },
            "\(lines.value)")
    }
}
