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
            #expect(bad.text.contains("needs options"))
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

            let ghost = try await editor.get("/admin/regions/1/ghost-bus?route=%3Cscript%3E&date=2026-11-30")
            #expect(ghost.status == 200)
            #expect(!ghost.text.contains("<script>"))
            #expect(try await editor.get("/admin/regions/1/ghost-bus?date=yesterday").text.contains("Date must be a date"))
            #expect(try await editor.get("/admin/regions/1/ghost-bus.csv").status == 200)
        }
    }
}
