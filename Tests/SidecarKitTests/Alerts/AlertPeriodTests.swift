import Foundation
import GTFSRealtime
import TestSupport
import Testing

@testable import SidecarKit

/// The feed carries the shown period (active and communication periods)
/// and the impact period, which must lie within it, whichever way an alert
/// is authored.
@Suite("Alerts: the shown period and the impact period")
struct AlertPeriodTests {
    @Test func theFeedCarriesTheShownPeriodTwiceAndTheImpactPeriod() async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let created = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: headers,
                body: Array(
                    #"""
                    {"header": "Station closed Saturday", "start": "2026-12-03T08:00:00-08:00", "end": "2026-12-06T20:00:00-08:00",
                     "impact_start": "2026-12-05T05:00:00-08:00", "impact_end": "2026-12-05T23:00:00-08:00"}
                    """#.utf8))
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.json?["id"] as? Int)
            #expect(created.json?["severity"] as? String == "WARNING", "new alerts default to WARNING: Android shows nothing lower")
            #expect(created.json?["impact_start"] as? String == "2026-12-05T13:00:00Z")
            let plain = try await app.administration.create(regionID: 1, fields: ["header": "No impact", "start": "2026-12-01T08:00:00-08:00"])
            _ = try await app.administration.setPublished(id: Int64(id), true)
            _ = try await app.administration.setPublished(id: plain.id, true)
            let feed = try FeedMessage(decoding: try await app.send("GET", "/api/v1/regions/1/alerts").body)
            let impact = try #require(feed.entities.first { $0.id == "Alert_\(id)" }?.alert)
            let shown = TimeRange(start: 1_796_313_600, end: 1_796_616_000)
            #expect(impact.activePeriods == [shown] && impact.communicationPeriods == [shown])
            #expect(impact.impactPeriods == [TimeRange(start: 1_796_475_600, end: 1_796_540_400)])
            let without = try #require(feed.entities.first { $0.id == "Alert_\(plain.id)" }?.alert)
            #expect(without.communicationPeriods == without.activePeriods && without.impactPeriods.isEmpty)
            let text = try await app.send("GET", "/api/v1/regions/1/alerts.pbtext").text
            #expect(text.contains("\"communicationPeriod\"") && text.contains("\"impactPeriod\""))

            // Cleared with none (CLI spelling) through the shared rules.
            let cleared = try await app.administration.edit(id: Int64(id), fields: ["impact_start": "none", "impact_end": "none"])
            #expect(cleared.impactStartsAt == nil && cleared.impactEndsAt == nil)
            // Export and import carry it.
            _ = try await app.administration.edit(
                id: Int64(id),
                fields: [
                    "impact_start": "2026-12-05T05:00:00-08:00",
                    "impact_end": "2026-12-05T23:00:00-08:00",
                ])
            let document = try await RegionExport.export(regionID: 1, database: app.sidecar.database, nowMillis: 0)
            let exported = String(decoding: document.encoded(), as: UTF8.self)
            #expect(exported.contains("\"impact_start_time\":\"2026-12-05T13:00:00Z\""), "\(exported)")
        }
    }

    @Test(arguments: [
        (["impact_start": "Saturday", "impact_end": "2026-12-05T23:00:00-08:00"], "impact_start must be an ISO 8601 time"),
        (["impact_start": "2026-12-05T05:00:00", "impact_end": "2026-12-05T23:00:00-08:00"], "impact_start must be an ISO 8601 time"),
        (["impact_start": "2026-12-05T23:00:00-08:00", "impact_end": "2026-12-05T05:00:00-08:00"], "impact_end must be after impact_start"),
        (
            ["impact_start": "2026-12-02T05:00:00-08:00", "impact_end": "2026-12-05T23:00:00-08:00"],
            "the impact period (2026-12-02T13:00:00Z to 2026-12-06T07:00:00Z) must lie within the shown period (2026-12-03T16:00:00Z to 2026-12-07T04:00:00Z)"
        ),
        (["impact_start": "2026-12-05T05:00:00-08:00", "impact_end": "2026-12-08T23:00:00-08:00"], "must lie within the shown period"),
        (["impact_start": "2026-12-05T05:00:00-08:00"], "impact_start and impact_end go together"),
        (["impact_end": "30000-01-01T00:00:00Z"], "impact_end must be an ISO 8601 time"),
    ])
    func badImpactPeriodsAre422WithAMessageNamingThePeriods(_ fields: [String: String], _ message: String) async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            var body: [String: String] = ["header": "Closed", "start": "2026-12-03T08:00:00-08:00", "end": "2026-12-06T20:00:00-08:00"]
            body.merge(fields) { _, new in new }
            let response = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: headers,
                body: Array(try JSONSerialization.data(withJSONObject: body)))
            #expect(response.status == 422, "\(response.text)")
            #expect(response.text.contains(message), "\(response.text)")
        }
    }

    @Test func anEditThatMovesTheShownPeriodAwayFromTheImpactIsRefusedAndTheCLISaysSo() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let alert = try await app.administration.create(
                regionID: 1,
                fields: [
                    "header": "Closed", "start": "2026-12-03T08:00:00-08:00", "impact_start": "2026-12-03T09:00:00-08:00",
                    "impact_end": "2026-12-03T12:00:00-08:00",
                ])
            #expect(alert.endsAt == nil, "no end: the shown period is 8 hours, which holds the impact")
            await #expect(throws: AdministrationError.self) {
                _ = try await app.administration.edit(id: alert.id, fields: ["start": "2026-12-03T10:00:00-08:00"])
            }
            let errors = Locked<[String]>([])
            guard
                case .admin(let invocation) = try CommandLineInterface.parse(
                    [
                        "alert", "edit", String(alert.id), "--impact-end", "2026-12-04T12:00:00-08:00", "--database",
                        app.sidecar.configuration.database,
                        "--regions", app.sidecar.configuration.regions ?? "",
                    ], environment: [:])
            else {
                Issue.record("not admin")
                return
            }
            let status = await AdminCommands.run(
                invocation, clock: app.clock, output: { _ in },
                errors: { line in errors.withLock { $0.append(line) } })
            #expect(status == 1)
            #expect(errors.value.contains { $0.contains("must lie within the shown period") }, "\(errors.value)")
        }
    }
}
