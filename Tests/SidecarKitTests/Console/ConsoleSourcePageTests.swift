import Foundation
import GTFSRealtime
import TestSupport
import Testing

@testable import SidecarKit

@Suite("Console: alert sources, their review queue and mirrored alerts")
struct ConsoleSourcePageTests: ConsoleSuite {
    @Test func anAdminAddsASourceAndAnEditorApprovesThroughTheConfirmation() async throws {
        let feed = try FeedStandIn()
        try await Self.run { app in
            let poller = try #require(app.sidecar.feature(AlertSourcePolling.self)).poller
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let empty = try await admin.get("/admin/regions/1/sources")
            #expect(empty.status == 200 && empty.text.contains("Add a source") && empty.text.contains("Nothing is waiting."))
            #expect(empty.text.contains("America/Los_Angeles"), "times say their zone")
            #expect(empty.text.contains("Allow private addresses"), "an admin may allow an on-premises feed")
            let refused = try await admin.post("/admin/regions/1/sources", [("url", "http://169.254.169.254/latest"), ("mode", "mirror")])
            #expect(refused.status == 422 && refused.text.contains("link-local or cloud metadata"))
            #expect(
                refused.text.contains("id=\"field-url-error\"") && refused.text.contains("aria-describedby=\"field-url-error field-url-hint\""),
                "what is wrong with the address is said at the URL field")
            let loopback = try await admin.post("/admin/regions/1/sources", [("url", feed.url), ("mode", "mirror")])
            #expect(loopback.status == 422 && loopback.text.contains("loopback address"), "not allowed by default")
            let badInterval = try await admin.post("/admin/regions/1/sources", [("url", feed.url), ("interval", "5"), ("allow_private", "true")])
            #expect(
                badInterval.text.contains("Poll every (seconds) must be a number") && !badInterval.text.contains("--interval")
                    && !badInterval.text.contains("sidecar source"), "the form's words, no CLI flags")
            #expect(
                badInterval.text.contains(
                    "<input type=\"number\" id=\"field-interval\" name=\"interval\" value=\"5\" maxlength=\"5\" aria-describedby=\"field-interval-error\" aria-invalid=\"true\">"
                ),
                "the interval field is marked and tied to its error")
            let added = try await admin.post(
                "/admin/regions/1/sources",
                [("url", feed.url), ("mode", "mirror"), ("push", "review"), ("min_severity", "WARNING"), ("allow_private", "true")])
            #expect(added.status == 303)
            let source = try #require(try await AlertSourceStore(database: app.sidecar.database).sources(regionID: 1).first?.0)
            #expect(source.allowPrivate)
            _ = try await poller.pollNow(sourceID: source.id)
            feed.set([FeedStandIn.alert("x", "Bridge closed <b>now</b>")])
            _ = try await poller.pollNow(sourceID: source.id)
            let waiting = try await admin.get("/admin/regions/1/sources")
            #expect(waiting.text.contains("Bridge closed &lt;b&gt;now&lt;/b&gt;"), "escaped")
            #expect(waiting.text.contains("Approve: push to everyone…") && waiting.text.contains("Alert sources (1 to review)"))
            #expect((try await admin.get("/admin/regions/1")).text.contains("1 push waits for review"), "the dashboard says so")

            // An editor approves, as "After an editor approves" says, through the same confirmation as any send.
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let alertID = try #require(try await AlertSourceStore(database: app.sidecar.database).reviews(sourceID: source.id).first?.state.alertID)
            let confirmation = try await editor.get("/admin/alerts/\(alertID)/send?audience=all&review=x")
            #expect(confirmation.status == 200 && confirmation.text.contains("Approve: push to everyone"), "\(confirmation.text.prefix(300))")
            #expect(confirmation.text.contains("What each language gets"), "the per-language preview")
            let token = try #require(ConsoleBrowser.hidden("send_token", in: confirmation.text))
            let fields = [("audience", "all"), ("send_token", token), ("review", "x")]
            var viewer = ConsoleBrowser(app: app)
            try await viewer.login("viewer@example.org", Self.password)
            #expect(try await viewer.get("/admin/alerts/\(alertID)/send?audience=all&review=x").status == 403)
            #expect(try await viewer.post("/admin/regions/1/sources", [("url", feed.url)]).status == 403)
            let approved = try await editor.post("/admin/alerts/\(alertID)/sends", fields)
            #expect(approved.status == 303 && approved.header("location")?.contains("done=source-approved") == true, "\(approved.status)")
            let again = try await editor.post("/admin/alerts/\(alertID)/sends", fields)
            #expect(again.header("location")?.contains("done=source-decided") == true, "a second click pushes nothing")
            let late = try await editor.get("/admin/alerts/\(alertID)/send?audience=all&review=x")
            #expect(late.header("location")?.contains("done=source-decided") == true, "a closed review opens no confirmation")
            #expect(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1.pushes == 1)

            #expect(try await admin.get("/admin/regions/1/sources/remove?source=\(source.id)").text.contains("Remove source \(source.id)?"))
            #expect(try await admin.post("/admin/regions/1/sources/remove", [("source", String(source.id))]).status == 303)
            #expect(try await AlertSourceStore(database: app.sidecar.database).sources(regionID: 1).isEmpty)
        }
        await feed.server.shutdown()
    }

    @Test func aMirroredAlertsPageOffersOnlyWhatWorks() async throws {
        let feed = try FeedStandIn()
        try await Self.run { app in
            let poller = try #require(app.sidecar.feature(AlertSourcePolling.self)).poller
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            feed.set([FeedStandIn.alert("m", "Line 1 closed", spanish: "Línea 1 cerrada")])
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url])
            _ = try await poller.pollNow(sourceID: source.id)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first { $0.sourceEntity == "m" })
            let page = try await admin.get("/admin/alerts/\(alert.id)")
            #expect(page.text.contains("Mirrored from") && page.text.contains("Dismiss from the feed") && page.text.contains("Change the source"))
            #expect(page.text.contains("Línea 1 cerrada") && page.text.contains("both apps show it as agency-wide"))
            #expect(
                !page.text.contains(">Publish<") && !page.text.contains("Unpublish") && !page.text.contains("name=\"header\""),
                "no control that is refused")
            let edit = try await admin.post("/admin/alerts/\(alert.id)", [("header", "x")])
            #expect(
                edit.status == 409 && edit.text.contains("comes from an alert source") && !edit.text.contains("sidecar "),
                "page words, no shell command")

            let dismissed = try await admin.post("/admin/alerts/\(alert.id)/feed", [("hidden", "true")])
            #expect(dismissed.header("location")?.contains("dismissed-from-feed") == true)
            #expect(try await AlertSourcePollTests.feedEntities(app).isEmpty, "out of the feed riders download")
            let list = try await admin.get("/admin/regions/1/alerts")
            #expect(list.text.contains("Published but not in the feed (1)") && list.text.contains("kept out of the feed"))
            _ = try await poller.pollNow(sourceID: source.id)
            #expect(try await AlertSourcePollTests.feedEntities(app).isEmpty, "a poll does not bring it back")
            _ = try await admin.post("/admin/alerts/\(alert.id)/feed", [("hidden", "false")])
            #expect(try await AlertSourcePollTests.feedEntities(app).count == 1)
        }
        await feed.server.shutdown()
    }
}
