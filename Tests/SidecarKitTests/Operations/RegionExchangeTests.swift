import Core
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// `sidecar export` / `sidecar import`: the sidecar-export/1 document that
/// moves a region between OBACloud, the reference sidecar and us.
@Suite("Operations: moving in and out (sidecar-export/1)")
struct RegionExchangeTests {
    static func cli(_ app: TestSidecar, _ arguments: [String]) async throws -> (status: Int32, output: [String], errors: [String]) {
        let out = Locked<[String]>([])
        let err = Locked<[String]>([])
        let status = try await SurveyTests.cli(app, arguments, stdout: out, stderr: err)
        return (status, out.value, err.value)
    }

    /// A region with every kind the format carries, made the way riders and
    /// operators make them.
    static func populate(_ app: TestSidecar, oba: FakeOBA) async throws {
        #expect(try await cli(app, ["region", "set", "--id", "1", "--agency-id", "1"]).status == 0)
        #expect(
            try await cli(
                app,
                [
                    "alert", "create", "--region", "1", "--header", "Route 44 detoured", "--description", "Skips 45th St",
                    "--cause", "CONSTRUCTION", "--effect", "DETOUR", "--severity", "WARNING", "--url", "https://example.org/44",
                    "--start", "2026-12-01T08:00:00-08:00", "--end", "2026-12-02T08:00:00.250-08:00",
                ]
            ).status == 0)
        #expect(
            try await cli(
                app,
                [
                    "alert", "translate", "1", "--language", "es", "--header", "Ruta 44 desviada",
                    "--description", "Salta la calle 45",
                ]
            ).status == 0)
        #expect(try await cli(app, ["alert", "edit", "1", "--description", "Skips 45th and 46th St"]).status == 0)
        #expect(
            try await cli(app, ["alert", "translate", "1", "--language", "fr", "--header", "Ligne 44 déviée", "--description", "Évite"]).status == 0)
        #expect(try await cli(app, ["alert", "publish", "1"]).status == 0)
        #expect(
            try await cli(app, ["alert", "create", "--region", "1", "--header", "Test push", "--start", "2026-12-02T08:00:00Z", "--test", "true"])
                .status == 0)
        #expect(try await cli(app, ["study", "create", "--region", "1", "--name", "OBA 2026", "--description", "Rider study"]).status == 0)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("survey-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(SurveyTests.document.replacingOccurrences(of: "STUDY", with: "1").utf8).write(to: file)
        #expect(try await cli(app, ["survey", "create", "--file", file.path]).status == 0)
        let questions = try #require(try await SurveyStore(database: app.sidecar.database).survey(id: 1)).questions.map(\.id)
        let answer = #"[{"question_id":\#(questions[0]),"question_type":"radio","answer":"Great"}]"#
        let response = try await app.post(
            "/api/v1/survey_responses",
            [
                ("survey_id", "1"), ("user_identifier", "rider-1"), ("stop_identifier", "1_570"),
                ("stop_latitude", "47.6"), ("stop_longitude", "-122.3"), ("responses", answer),
            ])
        #expect((200...201).contains(response.status), "\(response.text)")
        #expect(
            try await app.post(
                "/api/v2/regions/1/push_registrations",
                [
                    ("token", "ios-1-00"), ("operating_system", "ios"), ("locale", "es-US"),
                    ("apns_sandbox", "true"), ("description", "Ana's phone"),
                ]
            ).status == 204)
        #expect(try await app.post("/api/v2/regions/1/push_registrations", [("token", "droid-1-"), ("operating_system", "android")]).status == 204)
        let report =
            GhostBusTests.valid.map { ($0.key, $0.value) } + [
                ("predicted", "1"), ("comment", "never came"), ("stop_sequence", "3"),
                ("user_latitude", "47.61"), ("user_longitude", "-122.33"),
            ]
        #expect(try await app.post(GhostBusTests.path, report).status == 201)
        let store = GhostBusStore(database: app.sidecar.database)
        #expect(
            try await app.eventually {
                try await app.sidecar.database.read {
                    try $0.queryOne("SELECT snapshot_captured_at FROM ghost_bus_reports", [])?.optionalInt("snapshot_captured_at")
                } != nil
            })
        _ = store
    }

    @Test func exportImportExportIsTheSameDocumentAndImportingTwiceChangesNothing() async throws {
        try await GhostBusTests.run { app, oba in
            try await Self.populate(app, oba: oba)
            let first = try await RegionExport.export(regionID: 1, database: app.sidecar.database, nowMillis: 0)
            guard case .object(let members) = first else {
                Issue.record("not an object")
                return
            }
            #expect((members["alerts"].map { if case .array(let a) = $0 { a.count } else { 0 } }) == 2)
            let text = String(decoding: first.encoded(), as: UTF8.self)
            #expect(
                text.contains(#""source_header_text":"Route 44 detoured","source_description_text":"Skips 45th St""#)
                    || text.contains(#""source_description_text":"Skips 45th St""#),
                "the stale translation keeps the text it was made from")
            #expect(text.contains(#""end_time":"2026-12-02T16:00:00Z""#), "alerts keep whole seconds")
            #expect(text.contains(#""snapshot_status":"captured""#))

            try await TestSidecar.run({ $0.regions = app.sidecar.configuration.regions }) { (fresh: TestSidecar) async throws in
                let document = try RegionDocumentParser.parse(first, regions: fresh.sidecar.regions)
                let dry = try await RegionImport.importDocument(document, database: fresh.sidecar.database, dryRun: true, nowSeconds: 0)
                #expect(dry.alerts.added == 2 && dry.surveys.added == 1)
                #expect(
                    try await RegionExport.export(regionID: 1, database: fresh.sidecar.database, nowMillis: 0) != first, "a dry run changes nothing"
                )
                let summary = try await RegionImport.importDocument(document, database: fresh.sidecar.database, dryRun: false, nowSeconds: 0)
                #expect(summary == dry)
                #expect(summary.alerts == .init(added: 2, present: 0) && summary.translations == .init(added: 2, present: 0))
                #expect(summary.studies.added == 1 && summary.surveys.added == 1 && summary.questions.added == 5)
                #expect(summary.surveyResponses.added == 1 && summary.pushRegistrations.added == 2 && summary.ghostBusReports.added == 1)
                let second = try await RegionExport.export(regionID: 1, database: fresh.sidecar.database, nowMillis: 0)
                #expect(second == first, "export, import, export: the same document")

                let again = try await RegionImport.importDocument(document, database: fresh.sidecar.database, dryRun: false, nowSeconds: 0)
                #expect(again.alerts == .init(added: 0, present: 2) && again.pushRegistrations == .init(added: 0, present: 2))
                #expect(again.ghostBusReports == .init(added: 0, present: 1) && again.surveyResponses == .init(added: 0, present: 1))
                #expect(try await RegionExport.export(regionID: 1, database: fresh.sidecar.database, nowMillis: 0) == first)

                // Riders see the same alert ids, and new rows continue after imported ids.
                await fresh.sidecar.alertFeedWatcher.refresh()
                let feed = try await fresh.send("GET", "/api/v1/regions/1/alerts.pbtext")
                #expect(feed.text.contains("\"id\": \"1\"") || feed.text.contains("id: \"1\"") || feed.text.contains("\"1\""))
                let created = try await Self.cli(fresh, ["alert", "create", "--region", "1", "--header", "New", "--start", "2026-12-03T08:00:00Z"])
                #expect(created.output.last?.hasPrefix("created alert 3") == true, "\(created)")
            }
        }
    }

    @Test func theCLIWritesAFileAndReadsStandardInputOrAFile() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            #expect(
                try await Self.cli(
                    app, ["alert", "create", "--region", "1", "--header", "Snow", "--start", "2026-12-01T08:00:00Z", "--agency-id", "1"]
                ).status == 0)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            let exported = try await Self.cli(app, ["export", "--region", "1", "--to", file.path])
            #expect(exported.status == 0 && exported.errors.last?.contains("wrote region 1") == true)
            let dry = try await Self.cli(app, ["import", "--file", file.path, "--dry-run"])
            #expect(dry.status == 0 && dry.output.first?.hasPrefix("dry run") == true)
            #expect(dry.output.contains { $0.contains("alerts") && $0.contains("0 added, 1 already present") })
            #expect(try await Self.cli(app, ["export", "--region", "404"]).status == 1)
        }
    }

    /// A document as OBACloud and the reference write it: Go's RFC 3339 with
    /// nanoseconds and offsets, null for empty lists, ids of their own.
    static let reference = #"""
        {"format":"sidecar-export/1","exported_at":"2026-11-29T10:15:30.123456789-08:00","region_id":1,
         "alerts":[{"id":41,"agency_id":"1","header_text":"Elevator out","description_text":"Use the ramp","url":"","cause":"MAINTENANCE",
           "effect":"ACCESSIBILITY_ISSUE","severity":"INFO","start_time":"2026-11-29T06:00:00-08:00","end_time":null,"published":true,"is_test":false,
           "created_at":"2026-11-28T12:00:00.5Z","updated_at":"2026-11-28T12:30:00Z",
           "translations":[{"language":"es","header_text":"Ascensor fuera","description_text":"Use la rampa","source_header_text":"Elevator out",
             "source_description_text":"Use the ramp"},{"language":"de","header_text":"Aufzug","description_text":"","source_header_text":"Old text",
             "source_description_text":""}]}],
         "studies":[{"id":7,"name":"Study","description":"","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-02-01T00:00:00Z",
           "surveys":[{"id":12,"name":"Trip","available":true,"start_time":null,"end_time":null,"show_on_map":false,"show_on_stops":true,
             "always_visible":false,"allows_multiple_responses":false,"visible_stop_list":null,"visible_route_list":["1_100"],
             "created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",
             "questions":[{"id":90,"position":1,"required":true,"content":{"type":"radio","label_text":"How?","options":["Good","Bad"]}}]}]}],
         "survey_responses":[{"survey_id":12,"public_id":"abc123","user_identifier":"u1","stop_identifier":"","stop_latitude":null,
           "stop_longitude":null,"answers":[{"question_id":90,"question_type":"radio","question_label":"How?","answer":"Good"}],
           "created_at":"2026-03-01T00:00:00Z","updated_at":"2026-03-01T00:00:00Z"}],
         "push_registrations":[{"token":"tok","operating_system":"ios","locale":"en-US","apns_sandbox":false,"test_device":true,
           "description":"QA","last_seen_at":"2026-11-01T00:00:00Z","created_at":"2026-10-01T00:00:00Z"}],
         "ghost_bus_reports":[{"public_id":"gb1","user_identifier":"u2","trip_identifier":"1_555","service_date_ms":1764230400000,
           "route_identifier":"1_100","stop_identifier":"","vehicle_identifier":"","stop_sequence":null,"predicted":null,
           "schedule_deviation_minutes":null,"wait_duration_minutes":15,"comment":"","user_latitude":null,"user_longitude":null,
           "scheduled_arrival_ms":null,"predicted_arrival_ms":null,"prediction_last_updated_ms":null,"snapshot_status":"unavailable",
           "snapshot":null,"snapshot_captured_at":null,"created_at":"2026-11-27T08:00:00Z"}]}
        """#

    /// Issue 40: a newer exporter's document imports, its unknown fields
    /// skipped and listed by place (refused with --strict), and alerts
    /// without a severity are named.
    @Test func aNewerExportersFieldsAreSkippedAndListedUnlessStrict() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            var text = Self.reference.replacingOccurrences(
                of: #""format":"sidecar-export/1","#, with: #""format":"sidecar-export/1","signed_by":"x","#)
            text = text.replacingOccurrences(of: #""severity":"INFO","#, with: #""priority":3,"#)
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            #expect(throws: RegionExchange.Failure.self) { try RegionDocumentParser.parse(value, regions: app.sidecar.regions, strict: true) }
            let document = try RegionDocumentParser.parse(value, regions: app.sidecar.regions, strict: false)
            #expect(document.skippedFields == ["signed_by", "alerts[0].priority"], "\(document.skippedFields)")
            #expect(document.unratedAlerts == [41])
            #expect(document.warnings.count == 2)
            #expect(document.warnings[0].contains("skipped 2 fields") && document.warnings[1].contains("alert 41 came without a severity"))
            let summary = try await RegionImport.importDocument(document, database: app.sidecar.database, dryRun: false, nowSeconds: 0)
            #expect(summary.alerts.added == 1)
            #expect(try await AlertStore(database: app.sidecar.database).find(id: 41)?.severity == .unknownSeverity)
        }
    }

    @Test func aReferenceDocumentImportsWithItsIdsAndStaleTranslationsWithheld() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(Self.reference.utf8))
            let document = try RegionDocumentParser.parse(value, regions: app.sidecar.regions)
            let summary = try await RegionImport.importDocument(document, database: app.sidecar.database, dryRun: false, nowSeconds: 0)
            #expect(
                summary.alerts.added == 1 && summary.translations.added == 2 && summary.questions.added == 1 && summary.ghostBusReports.added == 1)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).find(id: 41))
            #expect(alert.startsAt == 1_795_960_800 && alert.effect == .accessibilityIssue && alert.url == nil)
            let translations = try await AlertStore(database: app.sidecar.database).translations(alertID: 41)
            #expect(translations.first { $0.language == "es" }?.sourceVersion == alert.sourceVersion, "made from the current text")
            #expect(translations.first { $0.language == "de" }?.sourceVersion != alert.sourceVersion, "made from older text: stale")
            let survey = try #require(try await SurveyStore(database: app.sidecar.database).survey(id: 12))
            #expect(survey.questions.map(\.id) == [90] && survey.visibleRouteList == ["1_100"] && survey.visibleStopList == nil)
            let registration = try #require(try await app.pushStore.find(regionID: 1, token: "tok"))
            #expect(registration.testDevice && registration.locale == "en-US")
            // The survey and the response are served to the apps with their ids.
            let list = try await app.send("GET", "/api/v1/regions/1/surveys.json?user_id=u9")
            #expect(list.text.contains(#""id":12"#) && list.text.contains(#""id":90"#))
            // Exported again: the instants in UTC, everything else as given.
            let exported = String(
                decoding: try await RegionExport.export(regionID: 1, database: app.sidecar.database, nowMillis: 0).encoded(), as: UTF8.self)
            #expect(exported.contains(#""start_time":"2026-11-29T14:00:00Z""#) && exported.contains(#""created_at":"2026-11-28T12:00:00Z""#))
            #expect(exported.contains(#""source_header_text":"Old text""#) && exported.contains(#""snapshot_status":"unavailable""#))
        }
    }

    static let badDocuments: [(name: String, json: String, message: String)] = [
        ("an unknown top-level field", #"{"format":"sidecar-export/1","region_id":1,"extra":[]}"#, "extra is not a field"),
        (
            "an unknown nested field",
            #"{"format":"sidecar-export/1","region_id":1,"alerts":[{"id":1,"header_text":"x","start_time":"2026-01-01T00:00:00Z","colour":"red"}]}"#,
            "alerts[0].colour is not a field"
        ),
        ("another format", #"{"format":"sidecar-export/2","region_id":1}"#, "this sidecar reads sidecar-export/1"),
        ("an unknown region", #"{"format":"sidecar-export/1","region_id":77}"#, "region 77 is not in the regions directory"),
        ("no region", #"{"format":"sidecar-export/1"}"#, "region_id is required"),
        (
            "a time without an offset",
            #"{"format":"sidecar-export/1","region_id":1,"alerts":[{"id":1,"header_text":"x","start_time":"2026-01-01T00:00:00"}]}"#,
            "alerts[0].start_time must be an RFC 3339 time"
        ),
        (
            "an unknown cause",
            #"{"format":"sidecar-export/1","region_id":1,"alerts":[{"id":1,"header_text":"x","start_time":"2026-01-01T00:00:00Z","cause":"ALIENS"}]}"#,
            "alerts[0].cause 'ALIENS' is not one of"
        ),
        (
            "an English translation",
            #"{"format":"sidecar-export/1","region_id":1,"alerts":[{"id":1,"header_text":"x","start_time":"2026-01-01T00:00:00Z","translations":[{"language":"en","header_text":"y"}]}]}"#,
            "must not be en"
        ),
        (
            "a bad platform", #"{"format":"sidecar-export/1","region_id":1,"push_registrations":[{"token":"t","operating_system":"symbian"}]}"#,
            "push_registrations[0].operating_system must be ios or android"
        ),
        (
            "a bad snapshot status",
            #"{"format":"sidecar-export/1","region_id":1,"ghost_bus_reports":[{"public_id":"p","user_identifier":"u","trip_identifier":"t","snapshot_status":"lost"}]}"#,
            "must be pending, captured or unavailable"
        ),
        (
            "a question type the apps lack",
            #"{"format":"sidecar-export/1","region_id":1,"studies":[{"id":1,"name":"s","surveys":[{"id":1,"name":"v","questions":[{"id":1,"content":{"type":"slider"}}]}]}]}"#,
            "studies[0].surveys[0].questions[0].content must be an object whose type is one of"
        ),
        ("a string where a number belongs", #"{"format":"sidecar-export/1","region_id":"1"}"#, "region_id must be a whole number"),
        (
            "one survey bound",
            #"{"format":"sidecar-export/1","region_id":1,"studies":[{"id":1,"name":"s","surveys":[{"id":1,"name":"v","start_time":"2026-01-01T00:00:00Z"}]}]}"#,
            "has only one of start_time and end_time"
        ),
    ]

    @Test(arguments: badDocuments)
    func aBadDocumentIsAClearErrorNamingThePlace(_ example: (name: String, json: String, message: String)) async throws {
        let regions = RegionDirectory(try await RegionSource(argument: try SharedFixtures.requirePath("ios/regions-v3.json")).load(client: .init()))
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(example.json.utf8))
        #expect(throws: RegionExchange.Failure.self, "\(example.name)") { try RegionDocumentParser.parse(value, regions: regions) }
        do { _ = try RegionDocumentParser.parse(value, regions: regions) } catch {
            #expect(error.description.contains(example.message), "\(example.name): \(error.description)")
        }
    }

    @Test func anIdTakenByAnotherRegionImportsNothing() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            #expect(
                try await Self.cli(
                    app, ["alert", "create", "--region", "0", "--header", "Tampa", "--start", "2026-12-01T08:00:00Z", "--agency-id", "1"]
                ).status == 0)
            let json =
                #"{"format":"sidecar-export/1","region_id":1,"push_registrations":[{"token":"t1","operating_system":"ios"}],"alerts":[{"id":1,"header_text":"Seattle","start_time":"2026-01-01T00:00:00Z"}]}"#
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conflict-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(json.utf8).write(to: file)
            let result = try await Self.cli(app, ["import", "--file", file.path])
            #expect(result.status == 1)
            #expect(result.errors.last?.contains("alert 1 already exists in region 0") == true, "\(result.errors)")
            #expect(result.errors.first?.hasPrefix("sidecar: database: ") == true, "the database it used, on standard error")
            #expect(try await app.pushStore.find(regionID: 1, token: "t1") == nil, "all or nothing")
        }
    }

    @Test(arguments: [
        ("2026-12-01T08:00:00Z", Int64(1_796_112_000_000)), ("2026-12-01T08:00:00.5+01:00", 1_796_108_400_500),
        ("2026-12-01T08:00:00.123456789-08:00", 1_796_140_800_123), ("2026-12-01T08:00Z", 1_796_112_000_000),
        ("1969-12-31T23:59:59.999Z", -1),
    ])
    func rfc3339Instants(_ example: (String, Int64)) {
        #expect(Timestamp.parseMillis(example.0) == example.1)
        let formatted = Timestamp.format(millis: example.1)
        #expect(Timestamp.parseMillis(formatted) == example.1, "\(formatted)")
    }

    @Test(arguments: [
        "2026-12-01T08:00:00", "2026-13-01T08:00:00Z", "2026-02-30T08:00:00Z", "2026-12-01T08:00:00.Z", "2026-12-01T08:00:00+2", "yesterday",
    ])
    func notInstants(_ text: String) { #expect(Timestamp.parseMillis(text) == nil) }
}
