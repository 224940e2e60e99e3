import Core
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// The audit log narrowed by who, what, region and day, with pages that
/// keep the filters, in the chosen region's zone.
@Suite("Console: audit log filters")
struct ConsoleAuditFilterTests: ConsoleSuite {
    @Test func filtersNarrowTheLogAndPagesKeepThem() async throws {
        try await Self.run { app in
            let audit = AuditLog(database: app.sidecar.database)
            // 2026-12-02 10:00 in Los Angeles is 18:00 UTC.
            let day: Int64 = 1_796_234_400
            for index in 0..<105 {
                await audit.record(
                    actor: "cli:ops", action: "alert.edit", regionID: 1, target: "alert \(index)", now: EpochSeconds(day + Int64(index)))
            }
            await audit.record(
                actor: "user:ed@example.org", action: "alert.send", regionID: 1, target: "bulletin seven", now: EpochSeconds(day + 200))
            await audit.record(
                actor: "user:ed@example.org", action: "alert.send", regionID: 0, target: "bulletin eight", now: EpochSeconds(day + 86_400 * 2))
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)

            let sends = try await admin.get("/admin/audit?what=alert.send")
            #expect(sends.text.contains(">bulletin seven<") && sends.text.contains(">bulletin eight<"))
            #expect(!sends.text.contains("alert.edit</td>"), "only sends")
            let who = try await admin.get("/admin/audit?who=ED%40EXAMPLE")
            #expect(who.text.contains(">bulletin seven<") && !who.text.contains("cli:ops"), "any case, part of the name")
            let wildcard = try await admin.get("/admin/audit?who=%25")
            #expect(wildcard.text.contains("Nothing matches these filters"), "% is a character, not a wildcard")

            let region = try await admin.get("/admin/audit?region=1&from=2026-12-02&until=2026-12-02")
            #expect(region.text.contains("When (America/Los_Angeles)"), "times in the region's zone, named")
            #expect(region.text.contains("2026-12-02 10:00"), "18:00 UTC shown as 10:00 in Los Angeles")
            #expect(!region.text.contains(">bulletin eight<"), "another region and day")
            #expect(region.text.contains("before="), "a page of 100 links to older entries")
            #expect(region.text.contains("region=1&amp;from=2026-12-02&amp;until=2026-12-02&amp;before="), "the link keeps the filters")
            let bad = try await admin.get("/admin/audit?from=yesterday")
            #expect(bad.text.contains("must be a date such as 2026-12-01"))
        }
    }
}
