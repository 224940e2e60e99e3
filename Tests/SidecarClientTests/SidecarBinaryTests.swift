import Foundation
import SidecarClient
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The built `sidecar` binary, started with `--demo` on a free loopback port
/// and its own database, stopped when the test is done. These tests use
/// nothing but the library, as an app would.
final class SidecarProcess: @unchecked Sendable {
    let process: ChildProcess
    let directory: URL
    let baseURL: URL
    static let demoRegion = 9999

    /// The binary next to the test bundle (`swift build --build-tests` builds
    /// both), or `SIDECAR_BINARY`.
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["SIDECAR_BINARY"] { return URL(fileURLWithPath: path) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {  // Linux: next to the .xctest; macOS: beside the bundle
            let candidate = directory.appendingPathComponent("sidecar")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        throw Failure("no sidecar binary beside \(CommandLine.arguments[0]); run `swift build --build-tests` or set SIDECAR_BINARY")
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    init(_ extra: [String] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = directory.appendingPathComponent("sidecar.log")
        process = try ChildProcess(
            executable: try Self.binary().path,
            arguments: [
                "serve", "--host", "127.0.0.1", "--port", "0", "--database", directory.appendingPathComponent("sidecar.sqlite3").path,
                "--demo",
            ] + extra,
            outputPath: log.path)
        // The listening line names the port.
        var port: Int?
        for _ in 0..<300 where port == nil {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("sidecar listening") }),
                let field = line.split(separator: " ").first(where: { $0.hasPrefix("port=") })
            {
                port = Int(field.dropFirst(5))
            } else if !process.isRunning {
                break
            } else {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        guard let port else {
            process.terminateAndWait()
            throw Failure("the sidecar did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    func stop() {
        process.terminateAndWait()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A raw request, for what the library deliberately hides (a second DELETE's 404).
    func status(_ method: String, _ url: URL) async throws -> Int {
        var request = URLRequest(url: url)
        request.httpMethod = method
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    static func run(_ extra: [String] = [], _ body: (SidecarProcess) async throws -> Void) async throws {
        let sidecar = try SidecarProcess(extra)
        defer { sidecar.stop() }
        try await body(sidecar)
    }
}

/// Counts the POSTs that reach the server and remembers every answer.
final class CountingTransport: RegistrationTransport, @unchecked Sendable {
    let inner = SidecarRegistrationTransport { SidecarAPI(baseURL: $0.sidecarURL, regionID: $0.regionID, appUID: "client-tests", appVersion: "18") }
    private let lock = NSLock()
    private(set) var posts = 0
    private(set) var statuses: [Int?] = []

    func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        let answer = await inner.register(registration)
        lock.withLock {
            posts += 1
            statuses.append(answer.status)
        }
        return answer
    }

    func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
        await inner.unregister(registration)
    }

    var snapshot: (posts: Int, statuses: [Int?]) { lock.withLock { (posts, statuses) } }
}

enum AlarmRequestFixture {
    /// Today's service date in the demo's simulated service (UTC days; route 1 runs all day):
    /// v1 looks the departure up when the alarm is created.
    static var today: Int64 { Int64(Date().timeIntervalSince1970 / 86_400) * 86_400_000 }

    static var legacy: SidecarAPI.AlarmRequest {
        SidecarAPI.AlarmRequest(
            userPushID: "onesignal-player-1", stopID: "demo_1003", tripID: "demo_1_0_1160", serviceDate: today, vehicleID: nil,
            stopSequence: 3, secondsBefore: 300)
    }
}

@Suite("SidecarClient against the sidecar binary")
struct SidecarBinaryTests {
    @Test func dedupeSuppressesTheSecondPostAcrossRelaunchesAndACorrectClientNeverMeetsTheThrottle() async throws {
        // 3 registrations a minute per address: tight enough that a client
        // posting on every trigger meets it within one launch.
        try await SidecarProcess.run(["--push-registration-limit", "3"]) { sidecar in
            let suite = "SidecarBinaryTests.\(UUID().uuidString)"
            let defaults = try #require(UserDefaults(suiteName: suite))
            defer { defaults.removePersistentDomain(forName: suite) }
            let transport = CountingTransport()
            for launch in 0..<4 {
                // A fresh process each launch: a new queue and coordinator, the same persisted storage.
                let coordinator = RegistrationCoordinator(
                    queue: RegistrationQueue(transport: transport, storage: DefaultsRegistrationStorage(defaults: defaults, key: "registration")),
                    inputs: .init(
                        authorization: .notDetermined, deviceToken: nil, regionID: SidecarProcess.demoRegion, sidecarURL: sidecar.baseURL,
                        clientRegionID: SidecarProcess.demoRegion, locale: "es-MX"))
                for _ in 0..<5 {  // every trigger, several times
                    coordinator.appBecameActive(authorization: .provisional)
                    coordinator.receivedDeviceToken(Data([0x01, 0xAB, 0xFF, 0x00, 0x7F]))
                    coordinator.regionChanged(
                        regionID: SidecarProcess.demoRegion, sidecarURL: sidecar.baseURL, clientRegionID: SidecarProcess.demoRegion)
                }
                await coordinator.settle()
                guard case .registered(let registration) = await coordinator.status else {
                    Issue.record("launch \(launch): \(await coordinator.status)")
                    return
                }
                #expect(registration.token == "01abff007f")
            }
            #expect(transport.snapshot.posts == 1, "one POST over four launches of twenty triggers each")
            #expect(transport.snapshot.statuses == [204])

            // The limit is live: a client that posts on every trigger meets it.
            let api = SidecarAPI(baseURL: sidecar.baseURL, regionID: SidecarProcess.demoRegion)
            var throttled = false
            for _ in 0..<5 {
                do throws(SidecarAPI.Failure) {
                    try await api.register(
                        .init(
                            regionID: SidecarProcess.demoRegion, sidecarURL: sidecar.baseURL, token: "naive-00", operatingSystem: "ios",
                            locale: "en", testDevice: false, description: nil, sessionEpoch: 0))
                } catch {
                    guard case .throttled(let after) = error else {
                        Issue.record("\(error)")
                        continue
                    }
                    throttled = true
                    #expect((after ?? 0) > 0, "the wait is given")
                }
            }
            #expect(throttled, "a naive client is throttled, so the correct one's silence means something")
        }
    }

    @Test func anAlarmIsCreatedAndDeleted() async throws {
        try await SidecarProcess.run { sidecar in
            let api = SidecarAPI(baseURL: sidecar.baseURL, regionID: SidecarProcess.demoRegion, appUID: "client-tests")
            let url = try await api.createAlarm(
                .init(
                    userPushID: "01abff007f", stopID: "demo_1003", tripID: "demo_1_0_1160", serviceDate: 1_795_996_800_000,
                    vehicleID: "demo_v102", stopSequence: 3, secondsBefore: 300))
            #expect(url.host == "127.0.0.1")
            #expect(url.path.contains("/alarms/"))
            try await api.delete(url)
            #expect(try await sidecar.status("DELETE", url) == 404, "the alarm is gone")
            try await api.delete(url)  // and deleting it again is still done, as the apps expect
            try await api.unregister(token: "01abff007f")

            // The legacy v1 path: idempotent, deleted the same way.
            let legacy = AlarmRequestFixture.legacy
            let v1 = try await api.createLegacyAlarm(legacy)
            #expect(try await api.createLegacyAlarm(legacy) == v1, "re-posting returns the existing alarm")
            #expect(v1.path.contains("/api/v1/"))
            try await api.delete(v1)
            #expect(try await sidecar.status("DELETE", v1) == 404)
        }
    }

    @Test func aLiveActivityReRegisteredWithARotatedTokenKeepsItsURL() async throws {
        try await SidecarProcess.run { sidecar in
            let api = SidecarAPI(baseURL: sidecar.baseURL, regionID: SidecarProcess.demoRegion)
            let first = try await api.registerLiveActivity(
                activityID: "activity-1", pushToken: "aa11bb22", stopID: "demo_1003", routeShortName: "1",
                tripHeadsign: "Downtown")
            let rotated = try await api.registerLiveActivity(
                activityID: "activity-1", pushToken: "cc33dd44", stopID: "demo_1003", routeShortName: "1",
                tripHeadsign: "Downtown")
            #expect(rotated == first)
            try await api.delete(first)
            #expect(try await sidecar.status("DELETE", first) == 404)
        }
    }

    @Test func everyRiderEndpointAnswersInTheLibrarysTypes() async throws {
        try await SidecarProcess.run { sidecar in
            let api = SidecarAPI(baseURL: sidecar.baseURL, regionID: SidecarProcess.demoRegion, appUID: "client-tests", appVersion: "18")

            let feed = try await api.alerts()
            #expect(!feed.alerts.isEmpty, "the demo publishes sample alerts")
            #expect(feed.alerts.allSatisfy { !$0.id.isEmpty && !$0.header.isEmpty })

            let list = try await api.surveys(userID: "rider-1")
            #expect(list.region.id == SidecarProcess.demoRegion)
            let survey = try #require(list.surveys.first)
            let radio = try #require(survey.questions.first { $0.content.type == "radio" })
            let text = try #require(survey.questions.first { $0.content.type == "text" })
            let receipt = try await api.submitSurveyResponse(
                surveyID: survey.id, userIdentifier: "rider-1",
                answers: [
                    .init(
                        questionID: radio.id, questionType: "radio", questionLabel: radio.content.labelText,
                        answer: radio.content.options?.first ?? "")
                ])
            #expect(receipt.userIdentifier == "rider-1")
            let amended = try await api.amendSurveyResponse(
                receipt,
                answers: [
                    .init(questionID: text.id, questionType: "text", questionLabel: text.content.labelText, answer: "Clean & on time")
                ])
            #expect(amended.id == receipt.id)
            await #expect(throws: SidecarAPI.Failure.notFound(message: "Couldn't find Survey")) {
                try await api.submitSurveyResponse(surveyID: 424_242, userIdentifier: "rider-1", answers: [])
            }
            await #expect(throws: SidecarAPI.Failure.invalid(messages: ["user_id is required"])) { try await api.surveys(userID: "") }

            // The demo has no weather key: hidden, as the apps expect.
            await #expect(throws: SidecarAPI.Failure.weatherHidden) { try await api.weather() }

            let vehicles = try await api.vehicles(matching: "demo_v")  // the demo's vehicles in service now
            #expect(!vehicles.isEmpty)
            #expect(vehicles.allSatisfy { $0.vehicleID.hasPrefix("demo_v") && $0.id == "demo" })
            #expect(try await api.vehicles(matching: "v1").isEmpty, "under three characters: none")

            var report = GhostBusReport(userIdentifier: "rider-1", tripID: "demo_1_0_1160", serviceDate: 1_795_996_800_000, waitDurationMinutes: 15)
            report.stopID = "demo_1003"
            report.predicted = true
            let id = try await api.reportGhostBus(report)
            #expect(!id.isEmpty)
            await #expect(throws: SidecarAPI.Failure.alreadyReported) { try await api.reportGhostBus(report) }
            report.waitDurationMinutes = 7
            report.tripID = "demo_other"
            await #expect { try await api.reportGhostBus(report) } throws: { error in
                guard case .invalid(let messages) = error as? SidecarAPI.Failure else { return false }
                return !messages.isEmpty
            }

            let elsewhere = SidecarAPI(baseURL: sidecar.baseURL, regionID: 4242)
            await #expect(throws: SidecarAPI.Failure.unknownRegion) { try await elsewhere.alerts() }
            let nobody = SidecarAPI(baseURL: URL(string: "http://127.0.0.1:9")!, regionID: 1)
            await #expect { try await nobody.alerts() } throws: { error in
                if case .transport = error as? SidecarAPI.Failure { return true }
                return false
            }
        }
    }
}
