import Foundation
import GTFSRealtime
import TestSupport
import Testing

@testable import SidecarKit

@Suite("Console: alert sources and their review queue")
struct ConsoleSourcePageTests: ConsoleSuite {
    @Test func anAdminAddsASourceAndApprovesOncePerAlertWhileRolesHold() async throws {
        let feed = try FeedStandIn()
        try await Self.run { app in
            let poller = try #require(app.sidecar.feature(AlertSourcePolling.self)).poller
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let empty = try await admin.get("/admin/regions/1/sources")
            #expect(empty.status == 200 && empty.text.contains("Add a source") && empty.text.contains("Nothing is waiting."))
            #expect(empty.text.contains("America/Los_Angeles"), "times say their zone")
            let refused = try await admin.post("/admin/regions/1/sources", [("url", "http://169.254.169.254/latest"), ("mode", "mirror")])
            #expect(refused.status == 422 && refused.text.contains("link-local or cloud metadata"))
            let added = try await admin.post(
                "/admin/regions/1/sources", [("url", feed.url), ("mode", "mirror"), ("push", "review"), ("min_severity", "WARNING")])
            #expect(added.status == 303)
            let source = try #require(try await AlertSourceStore(database: app.sidecar.database).sources(regionID: 1).first?.0)
            _ = try await poller.pollNow(sourceID: source.id)
            feed.set([FeedStandIn.alert("x", "Bridge closed <b>now</b>")])
            _ = try await poller.pollNow(sourceID: source.id)
            let waiting = try await admin.get("/admin/regions/1/sources")
            #expect(waiting.text.contains("Bridge closed &lt;b&gt;now&lt;/b&gt;"), "escaped")
            #expect(waiting.text.contains("Approve: push to everyone"))

            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            #expect((try await editor.get("/admin/regions/1/sources")).text.contains("An admin approves pushes to everyone"))
            let approveFields = [("source", String(source.id)), ("entity", "x"), ("decision", "approve")]
            #expect(try await editor.post("/admin/regions/1/sources/review", approveFields).status == 403)
            var viewer = ConsoleBrowser(app: app)
            try await viewer.login("viewer@example.org", Self.password)
            #expect(try await viewer.post("/admin/regions/1/sources", [("url", feed.url)]).status == 403)

            let approved = try await admin.post("/admin/regions/1/sources/review", approveFields)
            #expect(approved.status == 303 && approved.header("location")?.contains("done=source-approved") == true)
            let again = try await admin.post("/admin/regions/1/sources/review", approveFields)
            #expect(again.header("location")?.contains("done=source-decided") == true, "a second click pushes nothing")
            #expect(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1.pushes == 1)

            #expect(try await admin.get("/admin/regions/1/sources/remove?source=\(source.id)").text.contains("Remove source \(source.id)?"))
            #expect(try await admin.post("/admin/regions/1/sources/remove", [("source", String(source.id))]).status == 303)
            #expect(try await AlertSourceStore(database: app.sidecar.database).sources(regionID: 1).isEmpty)
        }
        await feed.server.shutdown()
    }
}
