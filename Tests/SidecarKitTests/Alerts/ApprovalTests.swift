import Core
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Two-person approval (issue 40): in a region that asks for it, publishing
/// and sending to everyone wait for a second person; the one who asked
/// cannot approve; keys and jobs ask and never decide; requests lapse.
@Suite("Alerts: two-person approval")
struct ApprovalTests: ConsoleSuite {
    static func request(_ change: (inout ApprovalRequest) -> Void = { _ in }) -> ApprovalRequest {
        var request = ApprovalRequest(
            id: 4, regionID: 1, alertID: 7, action: .publish, requestedBy: "user:ann@agency.org", requestedAt: EpochSeconds(1000), status: .pending,
            decidedBy: nil, decidedAt: nil)
        change(&request)
        return request
    }

    @Test(
        arguments: [
            ("user:bob@agency.org", 2000, nil), ("cli:bob", 2000, nil),
            ("user:ann@agency.org", 2000, "the person who asked cannot approve"), ("apikey:ops#3", 2000, "an API key or a job can ask"),
            ("schedule:2", 2000, "an API key or a job can ask"), ("user:bob@agency.org", 1000 + 86_400, "lapsed"),
        ] as [(String, Int64, String?)])
    func whoMayDecide(_ actor: String, _ now: Int64, _ refusal: String?) {
        let found = ApprovalRules.refusal(Self.request(), by: actor, now: EpochSeconds(now))
        if let refusal { #expect(found?.contains(refusal) == true, "\(actor): \(found ?? "allowed")") } else { #expect(found == nil, "\(actor)") }
        #expect(ApprovalRules.refusal(Self.request { $0.status = .approved }, by: "user:bob@agency.org", now: EpochSeconds(2000)) != nil)
    }

    @Test func publishingAndSendingToEveryoneWaitForASecondPerson() async throws {
        try await AlertRouteTests.run { app, _, key in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles", requireApproval: "true")
            try await app.registerDevices("approved", count: 2)
            let ann = app.administration.acting(as: "user:ann@agency.org")
            let bob = app.administration.acting(as: "user:bob@agency.org")
            let alert = try await ann.create(
                regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start, "cause": "CONSTRUCTION", "effect": "DETOUR"]
            ).alert
            var asked: Int64 = 0
            do {
                _ = try await ann.setPublished(id: alert.id, true)
                Issue.record("published without approval")
            } catch AdministrationError.approvalPending(let id, let message) {
                asked = id
                #expect(message.contains("second person"))
            }
            #expect(try await ann.alert(id: alert.id).published == false)
            // Asking again does not make a second request.
            await #expect(throws: AdministrationError.approvalPending(requestID: asked, message: "")) { () async throws in
                do { _ = try await ann.setPublished(id: alert.id, true) } catch AdministrationError.approvalPending(let id, _) {
                    throw AdministrationError.approvalPending(requestID: id, message: "")
                }
            }
            await #expect(throws: AdministrationError.self, "not by the one who asked") { _ = try await ann.approve(requestID: asked) }
            await #expect(throws: AdministrationError.self, "not by a key") {
                _ = try await app.administration.acting(as: "apikey:ops#1").approve(requestID: asked)
            }
            let approved = try await bob.approve(requestID: asked)
            #expect(approved.request.status == .approved && approved.request.decidedBy == "user:bob@agency.org")
            #expect(try await bob.alert(id: alert.id).published)
            // A key's send to everyone waits too: 202 with the request.
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let send = try await app.send("POST", "/admin/api/alerts/\(alert.id)/sends", headers: headers, body: Array(#"{"audience": "all"}"#.utf8))
            #expect(send.status == 202 && send.text.contains(#""status":"approval pending""#), "\(send.text)")
            #expect(try await AlertStore(database: app.sidecar.database).sends.list(alertID: alert.id).isEmpty, "nothing sent yet")
            let listed = try await app.send("GET", "/admin/api/regions/1/approvals", headers: headers)
            #expect(listed.status == 200 && listed.text.contains(#""action":"send""#) && listed.text.contains(#""status":"pending""#))
            let pending = try #require(try await bob.approvals.list(alertID: alert.id).first { $0.action == .send })
            // Test devices need no approval.
            _ = try await ann.startSend(id: alert.id, audience: .test)
            let started = try await ann.approve(requestID: pending.id)
            #expect(started.send?.audience == .all)
            #expect(started.request.requestedBy.hasPrefix("apikey:") && started.request.decidedBy == "user:ann@agency.org")
        }
    }

    /// The console's Publish asks once: while the request waits, the page
    /// says so where the button was, and offers no second Publish.
    @Test func theAlertPageSaysPublishingWaits() async throws {
        try await Self.run { app in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles", requireApproval: "true")
            let alert = try await app.administration.acting(as: "user:editor@example.org").create(
                regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start, "cause": "CONSTRUCTION", "effect": "DETOUR"]
            ).alert
            var browser = ConsoleBrowser(app: app)
            #expect(try await browser.login("editor@example.org", Self.password).status == 303)
            let before = try await browser.get("/admin/alerts/\(alert.id)")
            #expect(before.text.contains("action=\"/admin/alerts/\(alert.id)/publish\""))
            let asked = try await browser.post("/admin/alerts/\(alert.id)/publish", [])
            #expect(asked.status == 303 && asked.header("Location")?.contains("approval-requested") == true, "\(asked.status)")
            let page = try await browser.get("/admin/alerts/\(alert.id)")
            let request = try #require(try await app.administration.approvals.list(alertID: alert.id).first)
            #expect(page.text.contains("Publishing waits for approval (request \(request.id))"))
            #expect(!page.text.contains("action=\"/admin/alerts/\(alert.id)/publish\""), "no second Publish while one waits")
            #expect(try await app.administration.alert(id: alert.id).published == false)
        }
    }

    @Test func aRequestCanBeRejectedAndLapsesAfterADay() async throws {
        try await AlertRouteTests.run { app, _, _ in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles", requireApproval: "true")
            let ann = app.administration.acting(as: "user:ann@agency.org")
            let bob = app.administration.acting(as: "user:bob@agency.org")
            let alert = try await ann.create(regionID: 1, fields: ["header": "Elevator out", "start": AlertRouteTests.start]).alert
            _ = try? await ann.setPublished(id: alert.id, true)
            let first = try #require(try await ann.approvals.list(alertID: alert.id).first)
            #expect(try await bob.reject(requestID: first.id).status == .rejected)
            #expect(try await ann.alert(id: alert.id).published == false)
            _ = try? await ann.setPublished(id: alert.id, true)
            let second = try #require(try await ann.approvals.list(alertID: alert.id).first)
            #expect(second.id != first.id, "a rejected request is not reused")
            app.clock.advance(seconds: Double(ApprovalRules.lifetimeSeconds) + 1)
            let late = app.administration.acting(as: "user:bob@agency.org")
            await #expect(throws: AdministrationError.self, "lapsed") { _ = try await late.approve(requestID: second.id) }
        }
    }
}
