import Foundation
import Testing

@testable import SidecarClient

/// Records what `SidecarAPI` sends and answers from a script: the apps' wire
/// habits, checked without a server.
final class RecordingHTTPTransport: SidecarHTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [SidecarAPI.Answer]
    private(set) var requests: [SidecarHTTPRequest] = []

    init(_ answers: [SidecarAPI.Answer]) { self.answers = answers }

    func send(_ request: SidecarHTTPRequest) async throws(SidecarAPI.Failure) -> SidecarAPI.Answer {
        lock.withLock {
            requests.append(request)
            return answers.isEmpty ? SidecarAPI.Answer(status: 204) : answers.removeFirst()
        }
    }

    var last: SidecarHTTPRequest? { lock.withLock { requests.last } }
}

@Suite("SidecarClient on the wire")
struct WireTests {
    static let base = URL(string: "https://sidecar.example.org")!
    static let query = "key=org.onebusaway.iphone&app_uid=uid-1&app_ver=25.1&version=2"

    static func api(_ transport: RecordingHTTPTransport) -> SidecarAPI {
        SidecarAPI(baseURL: base, regionID: 1, apiKey: "org.onebusaway.iphone", appUID: "uid-1", appVersion: "25.1", transport: transport)
    }

    static func header(_ request: SidecarHTTPRequest?, _ name: String) -> String? { request?.headers.first { $0.name == name }?.value }
    static func body(_ request: SidecarHTTPRequest?) -> String { request?.body.map { String(decoding: $0, as: UTF8.self) } ?? "" }

    @Test func registrationsAreFormPostsAndDeletesCarryTheTokenInTheQuery() async throws {
        let transport = RecordingHTTPTransport([.init(status: 204), .init(status: 404)])
        let api = Self.api(transport)
        try await api.register(
            .init(
                regionID: 1, sidecarURL: Self.base, token: "01abff", operatingSystem: "ios", locale: "es-MX", testDevice: true,
                description: "Aaron's iPhone", sessionEpoch: 0))
        let post = transport.requests[0]
        #expect(post.method == "POST")
        #expect(post.url.absoluteString == "https://sidecar.example.org/api/v2/regions/1/push_registrations?\(Self.query)")
        #expect(Self.header(post, "Content-Type") == "application/x-www-form-urlencoded")
        #expect(Self.body(post) == "token=01abff&operating_system=ios&locale=es-MX&test_device=true&description=Aaron%27s%20iPhone")
        try await api.unregister(token: "01abff")  // 404: never registered, which is done
        #expect(transport.last?.method == "DELETE")
        #expect(transport.last?.url.absoluteString == "https://sidecar.example.org/api/v2/regions/1/push_registrations?token=01abff&\(Self.query)")
    }

    @Test func aRegistrationAnswered200IsNotARegistration() async {
        let api = Self.api(RecordingHTTPTransport([.init(status: 200, body: Data("{}".utf8))]))
        await #expect(throws: SidecarAPI.Failure.unexpected(status: 200)) {
            try await api.register(
                .init(
                    regionID: 1, sidecarURL: Self.base, token: "01ab", operatingSystem: "ios", locale: "en", testDevice: false,
                    description: nil, sessionEpoch: 0))
        }
    }

    @Test func alarmsAndLiveActivitiesPostFormsAndKeepTheReturnedURL() async throws {
        let created = SidecarAPI.Answer(
            status: 201, body: Data(#"{"url":"https://sidecar.example.org/api/v2/regions/1-puget-sound/alarms/Zq1"}"#.utf8))
        let transport = RecordingHTTPTransport([created, created])
        let api = Self.api(transport)
        var alarm = SidecarAPI.AlarmRequest(
            userPushID: "01ab", stopID: "1_75403", tripID: "1_604670535", serviceDate: 1_754_809_200_000,
            vehicleID: "1_4361", stopSequence: 5, secondsBefore: 600)
        alarm.apnsSandbox = true
        let url = try await api.createAlarm(alarm)
        #expect(url.absoluteString == "https://sidecar.example.org/api/v2/regions/1-puget-sound/alarms/Zq1", "the slug is kept verbatim")
        #expect(
            Self.body(transport.last) == "user_push_id=01ab&operating_system=ios&stop_id=1_75403&trip_id=1_604670535&service_date=1754809200000"
                + "&stop_sequence=5&seconds_before=600&vehicle_id=1_4361&apns_sandbox=1")
        _ = try await api.registerLiveActivity(activityID: "A1", pushToken: "cc33", stopID: "1_75403", routeShortName: "44", tripHeadsign: "Ballard")
        #expect(transport.last?.url.path == "/api/v2/regions/1/live_activities")
        #expect(Self.body(transport.last) == "activity_id=A1&push_token=cc33&stop_id=1_75403&route_short_name=44&trip_headsign=Ballard")
        try await api.delete(url)
        #expect(transport.last?.method == "DELETE")
        #expect(transport.last?.url.absoluteString.hasPrefix("https://sidecar.example.org/api/v2/regions/1-puget-sound/alarms/Zq1") == true)
    }

    @Test func surveyBodiesAreJSONWithTheAnswersAsAString() async throws {
        let receipt = SidecarAPI.Answer(
            status: 201, body: Data(#"{"survey_response":{"id":"r1","user_identifier":"u1","update_path":"/api/v1/survey_responses/r1"}}"#.utf8))
        let transport = RecordingHTTPTransport([receipt, SidecarAPI.Answer(status: 200, body: receipt.body)])
        let api = Self.api(transport)
        let first = try await api.submitSurveyResponse(
            surveyID: 7, userIdentifier: "u1", stop: .init(stopID: "1_75403", latitude: 47.6, longitude: -122.3),
            answers: [.init(questionID: 21, questionType: "radio", questionLabel: "How?", answer: "Great")])
        #expect(Self.header(transport.last, "Content-Type") == "application/json")
        let sent = try #require(try JSONSerialization.jsonObject(with: transport.last?.body ?? Data()) as? [String: Any])
        #expect(sent["survey_id"] as? Int == 7)
        #expect(sent["stop_identifier"] as? String == "1_75403")
        #expect(sent["responses"] is String, "a JSON array encoded into a string, as the contract says")
        _ = try await api.amendSurveyResponse(first, answers: [])
        #expect(transport.last?.url.path == "/api/v1/survey_responses/r1")
        #expect(transport.last?.method == "POST", "the shipped apps POST to update_path")
    }

    @Test func readsUseTheAppsPathsAndQueries() async throws {
        let transport = RecordingHTTPTransport([
            .init(status: 200, body: Data([0x0A, 0x05, 0x0A, 0x03, 0x31, 0x2E, 0x30])),  // a header with version "1.0"
            .init(status: 200, body: Data("[]".utf8)),
            .init(status: 403, body: Data("{}".utf8)),
        ])
        let api = Self.api(transport)
        #expect(try await api.alerts(includeTest: true).version == "1.0")
        #expect(transport.last?.url.absoluteString == "https://sidecar.example.org/api/v1/regions/1/alerts.pb?test=1&\(Self.query)")
        #expect(try await api.vehicles(matching: "4361").isEmpty)
        #expect(transport.last?.url.absoluteString == "https://sidecar.example.org/api/v1/regions/1/vehicles?query=4361&\(Self.query)")
        await #expect(throws: SidecarAPI.Failure.weatherHidden) { try await api.weather() }
        #expect(transport.last?.url.path == "/api/v1/regions/1/weather.json")
    }
}
