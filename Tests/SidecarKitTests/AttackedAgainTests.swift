import Foundation
import HTML
import HTTPServer
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 24: the second round of attacks, as tests.
@Suite("Attacked again")
struct AttackedAgainTests {
    // MARK: Memory that only grows

    @Test func aLimiterKeepsAtMostItsKeysAndAFixedSizeFormOfLongOnes() {
        let limiter = FixedWindowRateLimiter(limit: 5, windowSeconds: 86_400, maxKeys: 1000, now: { 1_000_000 })
        for number in 0..<5000 { _ = limiter.hit(String(repeating: "u", count: 8000) + String(number)) }
        #expect(limiter.trackedKeys == 1000, "the oldest are forgotten")
        #expect(FixedWindowRateLimiter.boundedKey(String(repeating: "x", count: 8192)).utf8.count <= 40)
        #expect(FixedWindowRateLimiter.boundedKey("127.0.0.1") == "127.0.0.1")
        // A key it still holds keeps its count.
        let small = FixedWindowRateLimiter(limit: 2, windowSeconds: 60, maxKeys: 10, now: { 0 })
        #expect(small.hit("a") == .allowed && small.hit("a") == .allowed)
        if case .limited = small.hit("a") {} else { Issue.record("the third hit is over the limit") }
    }

    @Test func refusedGhostBusReportsLeaveNothingInTheUserThrottle() async throws {
        try await TestSidecar.run({ _ in }) { app in
            for number in 0..<50 {
                let response = try await app.post("/api/v2/regions/1/ghost_bus_reports",
                                                  [("user_identifier", String(repeating: "u", count: 8000) + "\(number)"), ("trip_identifier", "t")],
                                                  source: "127.0.3.\(number + 1)")
                #expect(response.status == 422)
            }
            #expect(app.sidecar.limits.ghostBusUsers.trackedKeys == 0, "validation comes first")
            let valid = try await app.post("/api/v2/regions/1/ghost_bus_reports", [("user_identifier", "rider-1"), ("trip_identifier", "t"),
                                                                                   ("service_date", "1"), ("wait_duration_minutes", "5")])
            #expect(valid.status == 201)
            // On PostgreSQL the counts live in the database, shared by every instance.
            #expect(app.sidecar.limits.ghostBusUsers.trackedKeys == (TestBackend.isSQLite ? 1 : 0))
        }
    }

    // MARK: Text that reads as something else

    @Test func bidirectionalControlsAreRefusedInStoredTextAndShownVisibly() async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let refused = try await app.send("POST", "/admin/api/regions/1/alerts", headers: headers,
                                             body: Array(#"{"header": "invoice\u202Egnp.exe", "start": "2026-12-01T08:00:00Z"}"#.utf8))
            #expect(refused.status == 422)
            #expect(refused.text.contains("bidirectional control"))
            let report = try await app.post("/api/v2/regions/1/ghost_bus_reports", [("user_identifier", "r"), ("trip_identifier", "t"),
                                                                                    ("service_date", "1"), ("wait_duration_minutes", "5"),
                                                                                    ("comment", "bus\u{2067}never came")])
            #expect(report.status == 422)
            // Marks that reorder nothing (RLM in Arabic text) are kept.
            let arabic = try await app.administration.create(regionID: 1, fields: ["header": "تحويل\u{200F} الخط 44", "start": AlertRouteTests.start])
            #expect(arabic.header.contains("\u{200F}"))
        }
        #expect(HTML.escape("a\u{202E}gnp.exe") == "a\u{FFFD}gnp.exe")
        #expect(CSV.cell("a\u{2066}b") == "\"a\u{FFFD}b\"")
    }

    // MARK: Ids, actors

    @Test func alertIDsAreNeverReused() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let first = try await app.administration.create(regionID: 1, fields: ["header": "One", "start": AlertRouteTests.start])
            let second = try await app.administration.create(regionID: 1, fields: ["header": "Two", "start": AlertRouteTests.start])
            try await app.administration.delete(id: second.id)
            let third = try await app.administration.create(regionID: 1, fields: ["header": "Three", "start": AlertRouteTests.start])
            #expect(third.id > second.id && second.id > first.id, "\(first.id), \(second.id), \(third.id)")
        }
    }

    @Test func theCLIActorIsTheOperatingSystemsUser() {
        let actor = CommandRun.operatorLogin()
        #expect(!actor.isEmpty && actor != "unknown")
    }

    // MARK: Share pages and redirects

    @Test(arguments: [
        ("https://plan.example.org/stop?id={stop_id}", true), ("https://plan.example.org?stop={stop_id}", true),
        ("https://plan.example.org#{stop_id}", true), ("https://plan.example.org{stop_id}", false), ("https://{region_id}.example.org/", false),
        ("https://plan.example.org:{stop_id}/", false), ("https://user{stop_id}@plan.example.org/", false), ("https://plan.example.org/", true),
    ])
    func redirectTemplatesKeepPlaceholdersOutOfTheAuthority(_ template: String, _ accepted: Bool) {
        #expect((LinkRules.redirect(template: template, values: [:]) != nil) == accepted)
    }

    @Test func sharePagesDrawOnTheUpstreamBudget() async throws {
        try await AlarmRouteTests.run(configure: { $0.upstreamLookupLimit = 3 }) { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            var statuses: [Int] = []
            for number in 0..<10 {
                // Distinct stops: no cache can answer.
                statuses.append(try await app.send("GET", "/regions/1/stops/1_\(10_000 + number)", source: "127.0.4.1").status)
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 404 }, "\(statuses)")
            #expect(oba.counts.stop <= 3, "one client caused \(oba.counts.stop) lookups")
            let page = try await app.send("GET", "/regions/1/stops/1_11420", source: "127.0.4.1")
            #expect(page.status == 200 && page.text.contains("unavailable"), "over the budget: the page without live times")
        }
    }
}
