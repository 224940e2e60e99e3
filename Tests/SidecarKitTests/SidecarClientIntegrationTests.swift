import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Core
import HTTPServer
import SidecarClient
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 18: the client library against the real server.
@Suite("SidecarClient against the server")
struct SidecarClientIntegrationTests {
    /// Counts what reaches the server.
    final class Counting: RegistrationTransport, @unchecked Sendable {
        let inner: SidecarRegistrationTransport
        let lock = NSLock()
        var posts = 0
        init(_ inner: SidecarRegistrationTransport) { self.inner = inner }
        func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
            lock.withLock { posts += 1 }
            return await inner.register(registration)
        }
        func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
            await inner.unregister(registration)
        }
    }

    final class Storage: RegistrationStorage, @unchecked Sendable {
        let lock = NSLock()
        var value: (RegistrationPolicy.Registration, Date)?
        func load() -> (registration: RegistrationPolicy.Registration, date: Date)? { lock.withLock { value.map { ($0.0, $0.1) } } }
        func save(_ registration: RegistrationPolicy.Registration, date: Date) { lock.withLock { value = (registration, date) } }
        func clear() { lock.withLock { value = nil } }
    }

    @Test func aCorrectClientRegistersOnceAndNeverMeetsTheThrottle() async throws {
        try await TestSidecar.run({ $0.pushRegistrationLimit = 3 }) { app in
            let base = URL(string: "http://127.0.0.1:\(app.port)")!
            let transport = Counting(SidecarRegistrationTransport { SidecarAPI(baseURL: $0.sidecarURL, regionID: $0.regionID, appVersion: "test") })
            let queue = RegistrationQueue(transport: transport, storage: Storage())
            let desired = RegistrationPolicy.desired(.init(authorization: .authorized, deviceToken: "01abff007f", regionID: 1, sidecarURL: base,
                                                           clientRegionID: 1, locale: "es-MX"))
            // Every trigger fires, many times: one POST reaches the server.
            for stamp in 1...10 { await queue.submit(desired, stamp: UInt64(stamp)) }
            #expect(transport.posts == 1)
            guard case .registered = await queue.status else { Issue.record("\(await queue.status)"); return }
            let stored = try await app.pushStore.find(regionID: 1, token: "01abff007f")
            #expect(stored?.locale == "es")
            #expect(stored?.rawLocale == "es-MX")
        }
    }

    @Test func liveActivitiesAndTypedErrors() async throws {
        try await TestSidecar.run { app in
            let api = SidecarAPI(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, regionID: 1)
            let first = try await api.registerLiveActivity(activityID: "act-1", pushToken: "aa11bb22", stopID: "1_75403", routeShortName: "44",
                                                           tripHeadsign: "Ballard")
            let rotated = try await api.registerLiveActivity(activityID: "act-1", pushToken: "cc33dd44", stopID: "1_75403", routeShortName: "44",
                                                             tripHeadsign: "Ballard")
            #expect(rotated == first, "a rotated token keeps the subscription's URL")
            try await api.delete(first)
            try await api.delete(first)  // already gone: still fine
            let unknown = SidecarAPI(baseURL: api.baseURL, regionID: 4242)
            await #expect(throws: SidecarAPI.Failure.unknownRegion) {
                try await unknown.register(RegistrationPolicy.Registration(regionID: 4242, sidecarURL: api.baseURL, token: "01ab", operatingSystem: "ios",
                                                                            locale: "en", testDevice: false, description: nil, sessionEpoch: 0))
            }
            do {
                try await api.register(RegistrationPolicy.Registration(regionID: 1, sidecarURL: api.baseURL, token: "01ab", operatingSystem: "ios",
                                                                       locale: "en", testDevice: true, description: nil, sessionEpoch: 0))
                Issue.record("a test device without a description was accepted")
            } catch {
                guard case .invalid(let messages)? = error as? SidecarAPI.Failure else { Issue.record("\(error)"); return }
                #expect(!messages.isEmpty)
            }
        }
    }
}

@Suite("sidecar probe")
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
            let status = await Probe.run(Probe.Options(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, regionID: 1)) { line in
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
            let status = await Probe.run(Probe.Options(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, regionID: 1)) { line in
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
            for pattern in ["/api/v2/regions/:r/push_registrations", "/api/v2/regions/:r/live_activities", "/api/v1/regions/:r/alerts.pb",
                            "/api/v1/regions/:r/surveys.json", "/api/v1/regions/:r/weather.json", "/api/v1/regions/:r/vehicles"] {
                router.add(Route(method, pattern, parsesParameters: false) { _ in .bytes(200, contentType: "application/json", []) })
            }
        }
        let fake = try startLocalServer(router)
        let lines = Locked<[String]>([])
        let status = await Probe.run(Probe.Options(baseURL: URL(string: "http://127.0.0.1:\(fake.port)")!, regionID: 1)) { line in
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
