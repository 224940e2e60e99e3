import Foundation
import Testing

@testable import SidecarClient

/// Issue 18: the models decode what servers answer (the apps' own fixtures
/// where there is one), and every failure is typed.
@Suite("SidecarClient models and failures")
struct ModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Fixtures/ios")

    static func fixture(_ name: String) throws -> Data { try Data(contentsOf: fixtures.appendingPathComponent(name)) }

    @Test func theAppsWeatherFixtureDecodes() throws {
        let forecast = try JSONDecoder().decode(WeatherForecast.self, from: Self.fixture("pugetsound-weather.json"))
        #expect(forecast.regionIdentifier == 1)
        #expect(forecast.units == "us")
        #expect(forecast.currentForecast?.temperature == 70.51)
        #expect(forecast.currentForecast?.icon == "clear-day")
        #expect(forecast.currentForecast?.time == 1_539_812_965)
        #expect((forecast.hourlyForecast?.count ?? 0) > 10)
    }

    @Test func theAppsAlertsFeedFixtureDecodes() throws {
        let feed = try AlertsFeed(decoding: Self.fixture("puget_sound_alerts.pb"))
        // Values read independently with Google's gtfs-realtime-bindings.
        #expect(feed.version == "1.0")
        #expect(feed.timestamp == 1_539_351_391)
        #expect(feed.alerts.count == 20)
        let first = try #require(feed.alerts.first)
        #expect(first.id == "AlertFeedItem_4561")
        #expect(first.cause == 1)
        #expect(first.effect == 8)
        #expect(first.header.map(\.language) == ["en"])
        #expect(first.header.first?.text.hasPrefix("Sounder Lakewood-Seattle - Delay - #1514 (7:20 am TAC dep)") == true)
        #expect(first.informedEntities == [.init(agencyID: "40", routeID: nil, stopID: nil)])
        #expect(first.activePeriods == [.init(start: 1_539_097_260, end: 1_539_126_060)])
    }

    @Test(
        arguments: [
            ([UInt8](), "no FeedHeader"),  // an empty body is not a feed
            ([0x0A, 0x05, 0x0A, 0x03, 0x31], "runs past the end"),  // a header cut short
            ([0x0A, 0x80], "truncated varint"),  // a length cut short
            ([0x0B], "wire type 3"),  // a group: not in GTFS-realtime
            ([0x00, 0x00], "field number 0"),
        ] as [([UInt8], String)])
    func hostileFeedsFailWithAReason(bytes: [UInt8], reason: String) {
        #expect {
            _ = try AlertsFeed(decoding: Data(bytes))
        } throws: { error in
            (error as? AlertsFeed.DecodingError)?.description.contains(reason) == true
        }
    }

    @Test func randomBytesNeverCrashTheFeedReader() throws {
        var generator = SeededGenerator(seed: 18)
        let valid = try Array(Self.fixture("puget_sound_alerts.pb"))
        var decoded = 0
        var refused = 0
        for round in 0..<2_000 {
            var bytes = valid
            // Flip, cut or replace: every outcome is a feed or a DecodingError.
            switch round % 3 {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            default: bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            // Through an untyped Result: whatever the reader throws is caught and judged here.
            let outcome = Result<AlertsFeed, any Error> { try AlertsFeed(decoding: Data(bytes)) }
            switch outcome {
            case .success:
                decoded += 1
            case .failure(let error as AlertsFeed.DecodingError):
                refused += 1
                #expect(!error.description.isEmpty, "round \(round): a refusal says why")
            case .failure(let error):
                Issue.record("round \(round): \(type(of: error)) is neither a feed nor an AlertsFeed.DecodingError: \(error)")
            }
        }
        #expect(decoded > 0, "some damaged feeds still decode (\(decoded) of 2000)")
        #expect(refused > 0, "some are refused with a DecodingError (\(refused) of 2000)")
    }

    @Test func translationsFallBackAsTheAppsShowThem() {
        let texts: [ServiceAlert.Translation] = [
            .init(text: "Detour", language: nil), .init(text: "Desvío", language: "es"),
            .init(text: "Umleitung", language: "de-AT"),
        ]
        #expect(ServiceAlert.text(texts, language: "es-MX") == "Desvío")
        #expect(ServiceAlert.text(texts, language: "DE-at") == "Umleitung")
        #expect(ServiceAlert.text(texts, language: "fr") == "Detour")
        #expect(ServiceAlert.text([], language: "fr") == nil)
    }

    @Test func aSurveyListInTheSpecsShapeDecodes() throws {
        let json = """
            {"surveys":[{"id":7,"name":"Rider survey","start_date":null,"end_date":"2026-12-31T23:59:59Z","show_on_map":true,"show_on_stops":false,
              "always_visible":false,"allows_multiple_responses":false,"visible_stop_list":["1_75403"],"visible_route_list":null,
              "study":{"id":2,"name":"Winter","description":null},
              "questions":[{"id":21,"position":1,"required":true,"content":{"type":"radio","label_text":"How was your trip?","options":["Great","Bad"]}},
                           {"id":22,"position":2,"required":false,"content":{"type":"external_survey","label_text":"More","url":"https://example.org/s",
                            "survey_provider":"qualtrics","embedded_data_fields":["user_id"],"sdk_configuration_values":{"brand":"x","n":3,"on":true}}}]}],
             "region":{"id":1,"name":"Puget Sound"}}
            """
        let list = try JSONDecoder().decode(SurveyList.self, from: Data(json.utf8))
        #expect(list.region == .init(id: 1, name: "Puget Sound"))
        let survey = try #require(list.surveys.first)
        #expect(survey.startDate == nil)
        #expect(survey.visibleStopList == ["1_75403"])
        #expect(survey.visibleRouteList == nil)
        #expect(survey.questions[0].content.options == ["Great", "Bad"])
        #expect(survey.questions[1].content.sdkConfigurationValues == ["brand": .string("x"), "n": .number(3), "on": .bool(true)])
    }

    @Test func surveyReceiptsDecodeWrappedOrBareAndAnswersTravelAsAString() throws {
        let wrapped = #"{"survey_response":{"id":"abc","user_identifier":"u1","update_path":"/api/v1/survey_responses/abc"}}"#
        let bare = #"{"id":"abc","user_identifier":"u1","update_path":"/api/v1/survey_responses/abc"}"#
        for text in [wrapped, bare] {
            let receipt = try JSONDecoder().decode(SurveyResponseReceipt.Envelope.self, from: Data(text.utf8)).receipt
            #expect(receipt == .init(id: "abc", userIdentifier: "u1", updatePath: "/api/v1/survey_responses/abc"))
        }
        // The apps' fixture of a malformed answer (a missing comma) is a typed failure, not a crash.
        let malformed = SidecarAPI.Answer(status: 201, retryAfter: nil, body: try Self.fixture("survey_submission_malformed_response.json"))
        #expect(throws: SidecarAPI.Failure.self) { try SidecarAPI.decoded(malformed, as: SurveyResponseReceipt.Envelope.self) }

        let answers = SidecarAPI.encodedAnswers([
            .init(questionID: 21, questionType: "radio", questionLabel: "How was your trip?", answer: "Great"),
            .checkbox(questionID: 22, questionLabel: "Which?", selected: ["Bus", "Train"]),
        ])
        let decoded = try JSONSerialization.jsonObject(with: Data(answers.utf8)) as? [[String: Any]]
        #expect(decoded?.count == 2)
        #expect(decoded?[0]["question_id"] as? Int == 21)
        #expect(decoded?[1]["answer"] as? String == #"["Bus","Train"]"#)
    }

    @Test func ghostBusReportsPostTheContractsFormFields() {
        var report = GhostBusReport(userIdentifier: "u1", tripID: "1_604670535", serviceDate: 1_754_809_200_000, waitDurationMinutes: 15)
        report.predicted = true
        report.stopSequence = 4
        let form = Dictionary(uniqueKeysWithValues: report.form)
        #expect(form["trip_identifier"] == "1_604670535")
        #expect(form["service_date"] == "1754809200000")
        #expect(form["wait_duration_minutes"] == "15")
        #expect(form["predicted"] == "true")
        #expect(form["stop_sequence"] == "4")
        #expect(form["comment"] == nil, "absent values are not sent")
    }

    @Test(
        arguments: [
            (404, #"{"error":"Couldn't find Region"}"#, SidecarAPI.Endpoint.region, SidecarAPI.Failure.unknownRegion),
            (404, #"{"error":"Couldn't find Survey"}"#, .global, .notFound(message: "Couldn't find Survey")),
            (422, #"{"errors":["user_id is required"]}"#, .region, .invalid(messages: ["user_id is required"])),
            (422, #"{"error":"Invalid","messages":["Token can't be blank"]}"#, .region, .invalid(messages: ["Token can't be blank"])),
            (422, #"{"error":"already_reported","messages":["User has already reported this trip"]}"#, .region, .alreadyReported),
            (429, "", .region, .throttled(retryAfter: 42)),
            (403, "{}", .weather, .weatherHidden),
            (403, "", .region, .unexpected(status: 403)),
            (502, "", .region, .upstream(status: 502)),
            (500, "", .global, .unexpected(status: 500)),
        ] as [(Int, String, SidecarAPI.Endpoint, SidecarAPI.Failure)])
    func failuresAreTyped(status: Int, body: String, endpoint: SidecarAPI.Endpoint, expected: SidecarAPI.Failure) {
        let answer = SidecarAPI.Answer(status: status, retryAfter: status == 429 ? "42" : nil, body: Data(body.utf8))
        #expect(SidecarAPI.failure(answer, endpoint) == expected)
    }

    @Test func aSuccessWithTheWrongBodyIsUndecodableNotASuccess() {
        let empty = SidecarAPI.Answer(status: 200, retryAfter: nil, body: Data())
        #expect(throws: SidecarAPI.Failure.self) { try SidecarAPI.decoded(empty, as: [VehicleMatch].self) }
        let api = SidecarAPI(baseURL: URL(string: "https://sidecar.example.org")!, regionID: 1)
        #expect(throws: SidecarAPI.Failure.self) {
            try api.created(SidecarAPI.Answer(status: 201, retryAfter: nil, body: Data(#"{"url":"not a url"}"#.utf8)))
        }
    }

    @Test func everyCallCarriesTheAppsQueryItems() {
        let api = SidecarAPI(
            baseURL: URL(string: "https://sidecar.example.org/")!, regionID: 1, apiKey: "org.onebusaway.iphone", appUID: "a b&c",
            appVersion: "25.1")
        let url = api.url("/api/v1/regions/1/weather.json")
        #expect(
            url.absoluteString
                == "https://sidecar.example.org/api/v1/regions/1/weather.json?key=org.onebusaway.iphone&app_uid=a%20b%26c&app_ver=25.1&version=2")
        // A path from the server (a survey's update_path) cannot break out of the host or crash the call.
        #expect(api.url("/api/v1/survey_responses/a b").host == "sidecar.example.org")
        #expect(api.url("https://evil.example/x").host == "sidecar.example.org")
    }

    @Test func userDefaultsStorageSurvivesARelaunch() throws {
        let suite = "SidecarClientTests.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let registration = RegistrationPolicy.Registration(
            regionID: 1, sidecarURL: URL(string: "https://sidecar.example.org")!, token: "01ab",
            operatingSystem: "ios", locale: "en-US", testDevice: false, description: nil, sessionEpoch: 0)
        DefaultsRegistrationStorage(defaults: defaults).save(registration, date: Date(timeIntervalSince1970: 1_000))
        let reopened = DefaultsRegistrationStorage(defaults: UserDefaults(suiteName: suite)!)
        #expect(reopened.load()?.registration == registration)
        #expect(reopened.load()?.date == Date(timeIntervalSince1970: 1_000))
        reopened.clear()
        #expect(DefaultsRegistrationStorage(defaults: defaults).load() == nil)
    }
}

/// Marsaglia's xorshift64: deterministic, so a failing case can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
