import Crypto
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

@Suite("Console: survey and ghost-bus pages")
struct ConsoleSurveyPageTests: ConsoleSuite {
    @Test func surveysAndGhostBusPages() async throws {
        try await Self.run { app in
            _ = try await app.post("/api/v2/regions/1/push_registrations", [("token", "picker-0"), ("operating_system", "ios")])
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let saved = try await editor.post(
                "/admin/regions/1/surveys",
                [
                    ("name", "Rider <survey>"), ("study_id", ""), ("new_study", "Winter 2026"), ("available", "true"), ("show_on_stops", "true"),
                    ("start_date", ""), ("end_date", ""), ("visible_stop_list", ""), ("visible_route_list", ""),
                    ("q0_label", "How was your trip?"), ("q0_type", "radio"), ("q0_options", "Great\nFine\nBad"), ("q0_required", "true"),
                    ("q1_label", "Anything else?"), ("q1_type", "text"), ("q1_options", ""),
                    ("q2_label", ""), ("q2_type", "text"), ("q2_options", ""),
                ])
            #expect(saved.status == 303, "\(saved.text)")
            let survey = try #require(try await SurveyStore(database: app.sidecar.database).surveys(regionID: 1).first)
            #expect(survey.name == "Rider <survey>")
            #expect(survey.questions.map(\.type) == ["radio", "text"])
            #expect(survey.questions.first?.required == true)
            let page = try await editor.get("/admin/surveys/\(survey.id)")
            #expect(page.status == 200)
            #expect(page.text.contains("Rider &lt;survey&gt;"))
            let bad = try await editor.post(
                "/admin/regions/1/surveys",
                [
                    ("name", ""), ("study_id", ""), ("new_study", ""),
                    ("q0_label", "Pick"), ("q0_type", "radio"), ("q0_options", ""),
                ])
            #expect(bad.status == 422)
            // Each problem in the form's words, at its field (question 1 is slot q0).
            #expect(bad.text.contains("Question 1: a “One choice” question needs its choices, one per line."))
            #expect(!bad.text.contains("needs options") && !bad.text.contains("radio question"))
            #expect(
                bad.text.contains(
                    "id=\"field-q0_options\" name=\"q0_options\" rows=\"3\" aria-describedby=\"field-q0_options-error\" aria-invalid=\"true\""))
            #expect(bad.text.contains("id=\"field-name-error\"") && bad.text.contains("Name can&#39;t be blank."))
            // A skipped slot before a question: the error lands on the slot the editor filled.
            let skipped = try await editor.post(
                "/admin/regions/1/surveys",
                [
                    ("name", "Skips"), ("study_id", String(survey.studyID)), ("q0_label", ""), ("q1_label", "Where?"),
                    ("q1_type", "external_survey"), ("q1_url", "ftp://example.org"), ("q1_provider", "qualtrics"),
                ])
            #expect(skipped.status == 422)
            #expect(skipped.text.contains("Question 1: an external survey link needs a web address starting with https:// or http://."))
            #expect(skipped.text.contains("id=\"field-q1_url-error\"") && !skipped.text.contains("id=\"field-q0_url-error\""))
            #expect(page.text.contains("<span title=\"radio\">One choice</span>"), "question types by name, the code in a tooltip")
            // A save over a version someone else replaced is refused (412), the typed values kept.
            let stale = try await editor.post(
                "/admin/surveys/\(survey.id)",
                [
                    ("name", "Renamed"), ("study_id", String(survey.studyID)), ("available", "true"), ("version", "\"not-the-current-one\""),
                    ("q0_label", "How was your trip?"), ("q0_type", "radio"), ("q0_options", "Great\nFine\nBad"),
                ])
            #expect(stale.status == 412)
            #expect(stale.text.contains("Someone changed this survey after you opened it"))
            #expect(stale.text.contains("value=\"Renamed\""))
            #expect(try await SurveyStore(database: app.sidecar.database).survey(id: survey.id)?.name == "Rider <survey>")
            let csv = try await editor.get("/admin/surveys/\(survey.id)/responses.csv")
            #expect(csv.status == 200)
            #expect(csv.header("Content-Type")?.hasPrefix("text/csv") == true)
            #expect(
                csv.text.hasPrefix(
                    "\"Response\",\"Received (America/Los_Angeles)\",\"Updated (America/Los_Angeles)\",\"Rider (anonymous id)\",\"Stop\",\"Stop latitude\",\"Stop longitude\",\"How was your trip?\""
                ), "the console's download names its columns in words, times with their zone: \(csv.text.prefix(200))")
            let apiColumns = try await SurveyStore(database: app.sidecar.database).responsesCSV(survey: survey, zone: .utc)
            #expect(apiColumns.hasPrefix("\"response_id\",\"created_at\""), "the admin API's keeps the field names scripts read")

            let ghost = try await editor.get("/admin/regions/1/ghost-bus?route=%3Cscript%3E&date=2026-11-30")
            #expect(ghost.status == 200)
            #expect(!ghost.text.contains("<script>"))
            #expect(try await editor.get("/admin/regions/1/ghost-bus?date=yesterday").text.contains("Date must be a date"))
            let ghostCSV = try await editor.get("/admin/regions/1/ghost-bus.csv")
            #expect(ghostCSV.status == 200 && ghostCSV.text.hasPrefix("\"Report\",\"Received (America/Los_Angeles)\",\"Rider (anonymous id)\""))
            // The region picker says how many devices each region would reach.
            #expect(page.text.contains("1 · Puget Sound (1 device)") && page.text.contains("0 · Tampa Bay (0 devices)"))
        }
    }
}
