import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

@Suite("Surveys: surveys and responses (spec §7)")
struct SurveyTests {
    static let document = """
        {"region_id": 1, "study_id": STUDY, "name": "Rider satisfaction", "start_date": null, "end_date": null,
         "show_on_map": false, "show_on_stops": true, "visible_stop_list": ["1_570", "1_578"], "visible_route_list": null,
         "questions": [
           {"position": 1, "required": true, "content": {"type": "radio", "label_text": "How was your trip?", "options": ["Great", "Fine", "Bad"]}},
           {"position": 2, "required": true, "content": {"type": "label", "label_text": "Thanks!"}},
           {"position": 3, "required": false, "content": {"type": "checkbox", "label_text": "Which?", "options": ["A", "B"]}},
           {"position": 4, "required": true, "content": {"type": "external_survey", "label_text": "More", "url": "https://forms.example/x",
            "survey_provider": "google_forms"}},
           {"position": 5, "content": {"type": "text", "label_text": "Anything else?"}}
         ]}
        """

    @Test func authoringRules() throws {
        var survey = Survey(
            id: 0, regionID: 0, studyID: 0, name: "", available: true, startDate: nil, endDate: nil, showOnMap: false, showOnStops: false,
            alwaysVisible: false, allowsMultipleResponses: false, visibleStopList: nil, visibleRouteList: nil,
            requireStopIDInResponse: false, questions: [], createdAt: 0, updatedAt: 0)
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(Self.document.replacingOccurrences(of: "STUDY", with: "1").utf8))
        #expect(SurveyRules.parse(document: document, into: &survey).isEmpty)
        #expect(survey.questions.map(\.required) == [true, false, false, false, false], "label and external_survey are never required")
        #expect(survey.questions[3].content["embedded_data_fields"] == .array([]))
        var bad = survey
        let invalid = try JSONDecoder().decode(
            JSONValue.self,
            from: Data(
                #"{"name": "", "questions": [{"content": {"type": "slider", "label_text": "x"}}, {"content": {"type": "radio", "label_text": "y"}}, {"content": {"type": "external_survey", "label_text": "z"}}, {"content": {"type": "text", "label_text": 7}}]}"#
                    .utf8))
        let messages = SurveyRules.parse(document: invalid, into: &bad)
        #expect(messages.contains("name can't be blank"))
        #expect(messages.contains { $0.hasPrefix("question 1: type must be one of checkbox, external_survey, label, radio, text") })
        #expect(messages.contains("question 2: a radio question needs options, a list of strings"))
        #expect(messages.contains("question 3: an external_survey needs an http(s) url"))
        #expect(messages.contains("question 4: label_text must be text and can't be blank"), "the apps decode a string")
        #expect(
            !messages.contains { $0.contains("no questions cannot be made available") },
            "refused questions are being corrected, not left out: only their own problems are said")
        var empty = survey
        let none = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"name": "n", "available": true, "questions": []}"#.utf8))
        #expect(SurveyRules.parse(document: none, into: &empty).contains { $0.contains("no questions cannot be made available") })
    }

    @Test(
        "active window",
        arguments: [
            (nil, nil, true, true), (100, 200, true, true), (100, 149, true, false), (151, nil, true, false),
            (nil, 200, false, false),
        ] as [(Int64?, Int64?, Bool, Bool)])
    func window(start: Int64?, end: Int64?, available: Bool, active: Bool) {
        let survey = Survey(
            id: 1, regionID: 1, studyID: 1, name: "s", available: available, startDate: start.map { EpochSeconds($0) },
            endDate: end.map { EpochSeconds($0) }, showOnMap: false,
            showOnStops: false, alwaysVisible: false, allowsMultipleResponses: false, visibleStopList: nil, visibleRouteList: nil,
            requireStopIDInResponse: false, questions: [], createdAt: 0, updatedAt: 0)
        #expect(SurveyRules.isActive(survey, now: 150) == active)
    }

    @Test func answersAndMerging() throws {
        let ios = try SurveyRules.answers(.string(#"[{"question_id":17,"question_type":"checkbox","answer":"[\"A\"]"}]"#)).get()
        #expect(ios.first?["answer"] == .string(#"["A"]"#), "stored as sent")
        let android = try SurveyRules.answers(.string(#"[{"question_id":17,"answer":"[A, B]"},{"question_id":15,"answer":"Great"}]"#)).get()
        #expect(android.first?["answer"] == .string("[A, B]"))
        #expect(throws: ValidationFailure(["Responses must be a JSON array"])) { try SurveyRules.answers(.string("not json")).get() }
        #expect(throws: ValidationFailure(["Each response needs an integer question_id"])) {
            try SurveyRules.answers(.string(#"[{"answer":"x"}]"#)).get()
        }
        #expect(throws: ValidationFailure(["Responses can't be blank"])) { try SurveyRules.answers(nil).get() }
        let merged = SurveyRules.merge(stored: android, incoming: ios)
        #expect(merged.map { $0["answer"] } == [.string(#"["A"]"#), .string("Great")])
    }

    /// Runs the CLI against a test sidecar's database.
    static func cli(_ app: TestSidecar, _ arguments: [String], stdout: Locked<[String]>, stderr: Locked<[String]>) async throws -> Int32 {
        guard
            case .admin(let invocation) = try CommandLineInterface.parse(
                arguments + ["--database", app.sidecar.configuration.database, "--regions", app.sidecar.configuration.regions ?? ""], environment: [:]
            )
        else {
            throw CommandLineError("not an admin command")
        }
        return await AdminCommands.run(
            invocation, clock: app.clock, output: { line in stdout.withLock { $0.append(line) } },
            errors: { line in stderr.withLock { $0.append(line) } })
    }

    @Test func endToEndAsTheAppsUseIt() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let out = Locked<[String]>([])
            let err = Locked<[String]>([])
            #expect(
                try await Self.cli(
                    app, ["study", "create", "--region", "1", "--name", "OBA 2026", "--description", "Test"], stdout: out, stderr: err) == 0)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("survey-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(Self.document.replacingOccurrences(of: "STUDY", with: "1").utf8).write(to: file)
            #expect(try await Self.cli(app, ["survey", "create", "--file", file.path], stdout: out, stderr: err) == 0, "\(err.value)")

            #expect(try await app.send("GET", "/api/v1/regions/1/surveys").text == #"{"errors":["user_id is required"]}"#)
            let list = try await app.send("GET", "/api/v1/regions/1/surveys.json?user_id=b94e83ae")
            #expect(list.status == 200)
            let body = try #require(list.json)
            #expect(Set(body.keys) == ["surveys", "region"])
            let survey = try #require((body["surveys"] as? [[String: Any]])?.first)
            let fixture = try #require(
                try JSONSerialization.jsonObject(with: Data(SharedFixtures.bytes("ios/surveys_always_visible_one_time.json"))) as? [String: Any])
            let fixtureSurvey = try #require((fixture["surveys"] as? [[String: Any]])?.first)
            #expect(Set(survey.keys) == Set(fixtureSurvey.keys), "every key the shipped apps decode")
            #expect(survey["visible_route_list"] is NSNull)
            let questions = try #require(survey["questions"] as? [[String: Any]])
            #expect(questions.map { $0["required"] as? Bool } == [true, false, false, false, false])
            let external = try #require(questions[3]["content"] as? [String: Any])
            #expect(Set(external.keys) == ["type", "label_text", "url", "survey_provider", "embedded_data_fields"])
            #expect(survey["start_date"].map { $0 is NSNull } == true)
            #expect((body["region"] as? [String: Any])?["name"] as? String == "Puget Sound")
            let questionIDs = questions.compactMap { $0["id"] as? Int }

            // iOS: JSON body, checkbox answers as a JSON-encoded array string.
            let responses = #"[{"question_id":\#(questionIDs[0]),"question_type":"radio","answer":"Great"}]"#
            let created = try await app.postJSON(
                "/api/v1/survey_responses/",
                JSONValue.object([
                    "survey_id": .integer(1), "user_identifier": .string("b94e83ae"), "responses": .string(responses),
                ]).encodedString)
            #expect(created.status == 201)
            let response = try #require(created.json?["survey_response"] as? [String: Any])
            let id = try #require(response["id"] as? String)
            #expect(id.count == 20 && id.allSatisfy(\.isHexDigit))
            #expect(response["update_path"] as? String == "/api/v1/survey_responses/\(id)")
            #expect(response["user_identifier"] as? String == "b94e83ae")
            // Android: form body, "[A, B]", stop coordinates 0.0 without a stop id; amends by POST to update_path.
            let amended = try await app.post(
                "/api/v1/survey_responses/\(id)",
                [
                    ("responses", #"[{"question_id":\#(questionIDs[2]),"answer":"[A, B]"},{"question_id":\#(questionIDs[0]),"answer":"Fine"}]"#),
                    ("stop_latitude", "0.0"), ("stop_longitude", "0.0"),
                ])
            #expect(amended.status == 200)
            for method in ["PUT", "PATCH"] {
                let again = try await app.send(
                    method, "/api/v1/survey_responses/\(id)", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                    body: RawHTTPClient.form([("responses", #"[{"question_id":\#(questionIDs[4]),"answer":"\#(method)"}]"#)]))
                #expect(again.status == 200)
            }
            let android = try await app.post(
                "/api/v1/survey_responses",
                [
                    ("survey_id", "1"), ("user_identifier", "android-uuid"),
                    ("stop_latitude", "0.0"), ("stop_longitude", "0.0"),
                    ("responses", #"[{"question_id":\#(questionIDs[2]),"answer":"=SUM(A1)"}]"#),
                ])
            #expect(android.status == 201)

            #expect(
                try await app.post("/api/v1/survey_responses", [("survey_id", "99"), ("user_identifier", "u"), ("responses", "[]")]).text
                    == #"{"error":"Couldn't find Survey"}"#)
            #expect(try await app.post("/api/v1/survey_responses/ffffffffffffffffffff", [("responses", "[]")]).status == 404)
            let invalid = try await app.post("/api/v1/survey_responses", [("survey_id", "1"), ("stop_identifier", "1_570"), ("responses", "oops")])
            #expect(invalid.status == 422)
            #expect(
                invalid.json?["errors"] as? [String] == [
                    "User identifier can't be blank", "Stop latitude can't be blank",
                    "Stop longitude can't be blank", "Responses must be a JSON array",
                ])

            // CSV export: merged answers, spreadsheet-safe.
            #expect(try await Self.cli(app, ["survey", "responses", "1"], stdout: out, stderr: err) == 0)
            let csv = try #require(out.value.last)
            #expect(csv.contains("\"Fine\""))
            #expect(csv.contains("\"[A, B]\""))
            #expect(csv.contains("\"PATCH\""))
            #expect(csv.contains("\"'=SUM(A1)\""))

            // show → edit round-trips; questions are frozen now; delete is refused.
            #expect(try await Self.cli(app, ["survey", "show", "1"], stdout: out, stderr: err) == 0)
            let shown = try #require(out.value.last)
            try Data(shown.replacingOccurrences(of: "Rider satisfaction", with: "Rider satisfaction 2026").utf8).write(to: file)
            #expect(try await Self.cli(app, ["survey", "edit", "1", "--file", file.path], stdout: out, stderr: err) == 0, "\(err.value)")
            try Data(shown.replacingOccurrences(of: "How was your trip?", with: "How was it?").utf8).write(to: file)
            #expect(try await Self.cli(app, ["survey", "edit", "1", "--file", file.path], stdout: out, stderr: err) == 1)
            #expect(err.value.last?.contains("questions are frozen") == true)
            #expect(try await Self.cli(app, ["survey", "delete", "1"], stdout: out, stderr: err) == 1)
            #expect(err.value.last?.contains("cannot be deleted") == true)
            let renamed = try await app.send("GET", "/api/v1/regions/1/surveys?user_id=x")
            #expect(renamed.text.contains("Rider satisfaction 2026"))
        }
    }

    @Test func responseWritesAreThrottled() async throws {
        try await TestSidecar.run({ $0.surveyResponseLimit = 3 }) { (app: TestSidecar) async throws in
            for _ in 0..<3 { #expect(try await app.post("/api/v1/survey_responses", [("survey_id", "1")]).status == 404) }
            let limited = try await app.post("/api/v1/survey_responses", [("survey_id", "1")])
            #expect(limited.status == 429)
            #expect(limited.json?["errors"] != nil)
        }
    }
}

extension JSONValue {
    var encodedString: String { String(decoding: encoded(), as: UTF8.self) }
}
