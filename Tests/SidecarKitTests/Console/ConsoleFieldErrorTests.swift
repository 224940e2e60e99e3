import Testing

@testable import SidecarKit

/// A refused alert form says what is wrong in the form's own words, next to
/// the field, which screen readers announce with it and the page focuses.
@Suite("Console: errors where they are")
struct ConsoleFieldErrorTests {
    @Test(arguments: [
        ("end must be after start", "end", "Ends must be after Starts."),
        ("start is required (ISO 8601 with a UTC offset)", "start", "Starts is required: when riders first see the alert."),
        (
            "impact_start and impact_end go together: give both, or clear both with none", "impact_start",
            "Service affected from and until go together: fill in both, or leave both empty."
        ),
        (
            "impact_end must be after impact_start: the impact period ends before it starts", "impact_end",
            "Service affected until must be after Service affected from."
        ),
        ("Url must be an http(s) URL", "url", "More information (URL) must be a web address starting with https:// or http://."),
        ("Header can't be blank", "header", "Header can't be blank"),
        ("Header is too long (maximum is 255 characters)", "header", "Header is too long (maximum is 255 characters)"),
        ("Starts must be a date and time such as 2026-12-01T08:00", "start", "Starts must be a date and time such as 2026-12-01T08:00"),
        (
            "end must be an ISO 8601 time with a UTC offset, e.g. 2026-12-01T20:00:00-08:00 (got 'x')", "end",
            "Ends must be a date and time such as 2026-12-01T08:00."
        ),
        ("cause must be one of UNKNOWN_CAUSE, OTHER_CAUSE (got 'x')", "cause", "Cause must be one of UNKNOWN_CAUSE, OTHER_CAUSE (got 'x')"),
    ])
    func eachMessageIsPlacedAndWorded(_ message: String, _ field: String, _ text: String) {
        #expect(ConsoleFieldErrors.alert([message]) == [.init(field: field, text: text)])
    }

    @Test func anUnplacedMessageStaysInTheSummary() {
        #expect(ConsoleFieldErrors.alert(["No alert 7"]) == [.init(field: nil, text: "No alert 7")])
        let placed = ConsoleFieldErrors.alert(["end must be after start", "Header can't be blank", "Header is too long (maximum is 255 characters)"])
        #expect(ConsoleFieldErrors.byField(placed) == ["end": "Ends must be after Starts.", "header": "Header can't be blank"])
    }

    @Test func theRefusedFormMarksTheFieldAndTiesTheErrorToIt() async throws {
        try await ConsoleAlertPageTests.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", ConsoleAlertPageTests.password)
            var fields = ConsoleAlertPageTests.newAlert("Backwards")
            fields.removeAll { $0.0 == "end" }
            fields.append(("end", "2026-12-01T07:00"))
            let refused = try await editor.post("/admin/regions/1/alerts", fields)
            #expect(refused.status == 422)
            #expect(refused.text.contains("id=\"field-end-error\""), "\(refused.text)")
            #expect(refused.text.contains("Ends must be after Starts."))
            #expect(refused.text.contains("aria-describedby=\"field-end-error field-end-hint\""))
            #expect(refused.text.contains("aria-invalid=\"true\""))
            #expect(!refused.text.contains("end must be after start"), "never the API's wording")
        }
    }
}
