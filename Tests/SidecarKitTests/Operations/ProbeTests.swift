import Core
import Foundation
import HTTPServer
import SidecarClient
import TestSupport
import Testing

@testable import SidecarKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `sidecar probe`: an outside check of a running server.
@Suite("Operations: sidecar probe")
struct ProbeTests {
    @Test func ourServerPassesAndLeavesNothingBehind() async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        oba.state.withLock { $0.vehicles = ["1": ["1_100"]] }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("probe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(clock: clock, { $0.regions = regions }) { app in
            let lines = Locked<[String]>([])
            var options = Probe.Options(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, regionID: 1)
            // Only catches a hang: the PostgreSQL pass on two busy cores has
            // held an answer past the probe's 15 s.
            options.timeout = 180
            let status = await Probe.run(options) { line in
                lines.withLock { $0.append(line) }
            }
            #expect(status == 0, "\(lines.value)")
            #expect(lines.value.contains { $0.hasPrefix("  PASS  push registration") })
            #expect(lines.value.contains { $0.hasPrefix("  PASS  alerts feed") })
            #expect(lines.value.contains { $0.hasPrefix("  PASS  vehicles") })
            #expect(lines.value.contains { $0.hasPrefix("  skip  alarm") })
            #expect(lines.value.last == "every check passed")
            let left = try await app.sidecar.database.read { connection in
                try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations", [])?.optionalInt("n")
            }
            #expect(left == 0, "the probe cleaned up")
        }
        await oba.server.shutdown()
    }

    @Test func aDownOneBusAwayEndsInAWarningNotAPass() async throws {
        // The fixture's region 1 names a OneBusAway server nothing answers for here.
        try await TestSidecar.run { app in
            let lines = Locked<[String]>([])
            var options = Probe.Options(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, regionID: 1)
            // Only catches a hang: the PostgreSQL pass on two busy cores has
            // held an answer past the probe's 15 s.
            options.timeout = 180
            let status = await Probe.run(options) { line in
                lines.withLock { $0.append(line) }
            }
            #expect(status == 0, "the sidecar itself answered as it should")
            #expect(lines.value.contains { $0.hasPrefix("  WARN  vehicles") && $0.contains("OneBusAway server did not answer") }, "\(lines.value)")
            #expect(lines.value.last?.hasPrefix("no check failed, but 1 warned (vehicles)") == true, "\(lines.value)")
            #expect(!lines.value.contains("every check passed"))
        }
    }

    @Test func aServerThatAnswersWronglyFailsWithAClearLine() async throws {
        var router = Router()
        for method in ["GET", "POST", "DELETE"] {
            for pattern in [
                "/api/v2/regions/:r/push_registrations", "/api/v2/regions/:r/live_activities", "/api/v1/regions/:r/alerts.pb",
                "/api/v1/regions/:r/surveys.json", "/api/v1/regions/:r/weather.json", "/api/v1/regions/:r/vehicles",
            ] {
                router.add(Route(method, pattern, parsesParameters: false) { _ in .bytes(200, contentType: "application/json", []) })
            }
        }
        let fake = try startLocalServer(router)
        let lines = Locked<[String]>([])
        var options = Probe.Options(baseURL: URL(string: "http://127.0.0.1:\(fake.port)")!, regionID: 1)
        // A busy machine must not turn a wrong answer into a timeout: the
        // deadline only catches a hang.
        options.timeout = 180
        let status = await Probe.run(options) { line in
            lines.withLock { $0.append(line) }
        }
        _ = await fake.shutdown()
        #expect(status == 1)
        #expect(lines.value.contains { $0.hasPrefix("  FAIL  push registration") && $0.contains("200") })
        #expect(lines.value.contains { $0.hasPrefix("  FAIL  alerts feed") && $0.contains("empty body") })
        #expect(lines.value.contains { $0.hasPrefix("  FAIL  surveys") && $0.contains("empty body") })
        #expect(lines.value.contains { $0.hasPrefix("  FAIL  live activity") && $0.contains("empty body") })
        #expect(lines.value.last == "6 checks failed")
    }
}
