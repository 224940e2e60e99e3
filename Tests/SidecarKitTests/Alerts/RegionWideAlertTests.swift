import Core
import Foundation
import GTFSRealtime
import TestSupport
import Testing

@testable import SidecarKit

/// An alert for every agency of a region: the empty `agency_id` OBACloud
/// marks one with. iOS shows it region-wide (OneBusAway/onebusaway-ios
/// `AgencyAlert.swift:76-83`, since 26.3.0) and Android's dialog takes any
/// selector that has an `agency_id`, empty or not
/// (OneBusAway/onebusaway-android `widealerts/GtfsAlertsHelper.kt`
/// `isAgencyWideAlert`: `hasAgencyId()`), so one selector with a present,
/// empty `agency_id` reaches both.
@Suite("Alerts: region-wide alerts")
struct RegionWideAlertTests {
    static func alert() -> ServiceAlert { AlertFeedRulesTests.alert(1, start: 1_000_000) }

    @Test(arguments: [
        (["region_wide": "true"], "", [String]()),
        (["region_wide": "true", "agency_id": ""], "", []),
        (["region_wide": "false"], "1", []),
        (["region_wide": "false", "agency_id": "KCM"], "KCM", []),
        (["agency_id": "KCM"], "KCM", []),
        (["agency_id": ""], "1", ["Agency id can't be blank (for every agency of the region, make it region-wide)"]),
        (
            ["region_wide": "true", "agency_id": "KCM"], "1",
            ["an alert is region-wide or for one agency: give region_wide true or an agency id, not both"]
        ),
        (["region_wide": "maybe"], "1", ["region_wide must be true or false"]),
    ])
    func theRule(_ fields: [String: String], _ agency: String, _ messages: [String]) {
        var alert = Self.alert()
        #expect(AlertInputRules.apply(fields, to: &alert) == messages)
        if messages.isEmpty { #expect(alert.agencyID == agency) }
    }

    @Test func aRegionWideAlertNeedsAnAgencyWhenItStopsBeingOne() {
        var alert = Self.alert()
        alert.agencyID = ""
        #expect(AlertInputRules.apply(["region_wide": "false"], to: &alert) == ["an alert that is no longer region-wide needs an agency id"])
    }

    @Test func theAPIConsoleAndCLIMakeOneAndTheFeedCarriesItForBothApps() async throws {
        try await AlertRouteTests.run { app, _, key in
            let start = Timestamp.format(EpochSeconds(app.clock.now().epochMillis / 1000 - 60))
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let created = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: headers,
                body: Array(#"{"header": "Storm: all agencies reduced", "start": "\#(start)", "region_wide": true, "severity": "SEVERE"}"#.utf8))
            #expect(created.status == 201, "\(created.text)")
            #expect(created.json?["region_wide"] as? Bool == true)
            #expect(created.json?["agency_id"] as? String == "")
            let id = try #require(created.json?["id"] as? Int)
            _ = try await app.administration.setPublished(id: Int64(id), true)
            let feed = try FeedMessage(decoding: try await app.send("GET", "/api/v1/regions/1/alerts").body)
            let entity = try #require(feed.entities.first { $0.id == "Alert_\(id)" })
            #expect(entity.alert?.informedEntities == [EntitySelector(agencyID: "")], "one selector, agency_id present and empty")
            // Both apps' rules: neither drops it, even where the server's agencies are known.
            let findings = AlertAppVisibility.findings(
                entity, stamp: EpochSeconds(Int64(feed.header.timestamp ?? 0)), now: app.clock.nowSeconds, knownAgencies: ["1"])
            #expect(findings.isEmpty, "\(findings.map(\.line))")

            // Back to one agency: the region's, unless one is given.
            let edited = try await app.administration.edit(id: Int64(id), fields: ["region_wide": "false"])
            #expect(edited.agencyID == "1")
            let again = try await app.administration.edit(id: Int64(id), fields: ["region_wide": "true"])
            #expect(again.agencyID.isEmpty)

            // The CLI.
            let status = try await AlertSendTests.cli(
                app, ["alert", "create", "--region", "1", "--header", "Fares free today", "--start", start, "--region-wide", "true"],
                errors: Locked<[String]>([]))
            #expect(status == 0)
            let made = try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first { $0.header == "Fares free today" }
            #expect(made?.agencyID == "")
        }
    }
}
