import Core
import Foundation
import HTTPServer
import QRCode
import TestSupport
import Testing

@testable import SidecarKit

/// A OneBusAway server made of the apps' own fixtures.
enum FixtureOBA {
    static func start() throws -> HTTPServer {
        // Read now: a missing fixture fails the test here, naming its path.
        let fixtures = try LoadedFixtures([
            "ios/arrivals_and_departures_for_stop_1_75403.json",
            "ios/arrivals_and_departures_for_stop_1_10020_no_realtime.json",
            "ios/arrivals_and_departures_empty.json", "ios/arrival-and-departure-for-stop-1_11420.json",
        ])
        var router = Router()
        router.add(
            Route("GET", "/api/where/arrivals-and-departures-for-stop/:stop", parsesParameters: false) { request in
                let stop = String(request.pathParameters["stop"]!.dropLast(5))
                switch stop {
                case "1_75403": return fixtures.response("ios/arrivals_and_departures_for_stop_1_75403.json")
                case "1_10020": return fixtures.response("ios/arrivals_and_departures_for_stop_1_10020_no_realtime.json")
                case "1_TEST": return fixtures.response("ios/arrivals_and_departures_empty.json")
                case "1_11420": return fixtures.response("ios/arrivals_and_departures_for_stop_1_75403.json")
                case "boom": return .json(500, ["error": "upstream failure"])
                default:
                    return .bytes(
                        200, contentType: "application/json", Array(#"{"code":404,"text":"resource not found","version":2,"currentTime":1}"#.utf8))
                }
            })
        router.add(
            Route("GET", "/api/where/arrival-and-departure-for-stop/:stop", parsesParameters: false) { request in
                request.rawQuery.contains("tripId=1_40989208")
                    ? fixtures.response("ios/arrival-and-departure-for-stop-1_11420.json")
                    : .bytes(
                        200, contentType: "application/json", Array(#"{"code":404,"text":"resource not found","version":2,"currentTime":1}"#.utf8))
            })
        return try startLocalServer(router)
    }

}

@Suite("Links: share pages")
struct SharePageTests {
    static func run(_ configure: @escaping (inout SidecarConfiguration) -> Void = { _ in }, _ body: (TestSidecar) async throws -> Void) async throws {
        let oba = try FixtureOBA.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("share-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let regions = directory.appendingPathComponent("regions.json")
        try Data(
            #"{"data":{"list":[{"id":1,"regionName":"Puget <Sound>","obaBaseUrl":"http://127.0.0.1:\#(oba.port)/","sidecarBaseUrl":"https://sidecar.example.org/api?a=1&b=2"}]}}"#
                .utf8
        )
        .write(to: regions)
        try await TestSidecar.run({
            $0.regions = regions.path
            $0.publicURL = "https://sidecar.example.org"
            configure(&$0)
        }) { app in
            try await RegionSettingsStore(database: app.sidecar.database).set(
                RegionSettings(regionID: 1, agencyID: "1", timezone: "America/Los_Angeles"))
            try await body(app)
        }
        _ = await oba.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    static func meta(_ property: String, in html: String) -> String? {
        for marker in ["property=\"\(property)\" content=\"", "name=\"\(property)\" content=\""] {
            if let range = html.range(of: marker) { return String(html[range.upperBound...].prefix { $0 != "\"" }) }
        }
        return nil
    }

    @Test func aStopPageShowsLiveDeparturesAndOpensTheApp() async throws {
        try await Self.run { app in
            let page = try await app.send("GET", "/regions/1/stops/1_75403")
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.header("Cache-Control")?.contains("max-age=30") == true)
            let html = page.text
            #expect(html.contains("<h1>STEVENS WAY &amp; BENTON LN</h1>"))
            #expect(html.contains("Stop 75403"))
            #expect(html.contains("UNIVERSITY DISTRICT WEDGWOOD"))
            #expect(html.contains(">4 min late<"), "65 predicted 04:38, scheduled 04:34")
            #expect(html.contains("Southbound"))
            #expect(html.contains("href=\"onebusaway://view-stop?stopID=1_75403&amp;regionID=1\""))
            #expect(Self.meta("og:title", in: html) == "STEVENS WAY &amp; BENTON LN (Stop 75403)")
            #expect(Self.meta("og:description", in: html)?.hasPrefix("Next: 65 in") == true)
            #expect(Self.meta("twitter:card", in: html) == "summary")
            #expect(html.contains("Puget &lt;Sound&gt;"))

            let scheduled = try await app.send("GET", "/regions/1/stops/1_10020")
            #expect(scheduled.status == 200)
            #expect(scheduled.text.contains("class=\"scheduled\">scheduled<"))
            #expect(!scheduled.text.contains("class=\"live\""))
            let empty = try await app.send("GET", "/regions/1/stops/1_TEST")
            #expect(empty.text.contains("No departures in the next hour"))
            let down = try await app.send("GET", "/regions/1/stops/boom")
            #expect(down.status == 200)
            #expect(down.text.contains("Live times unavailable"))
            let missing = try await app.send("GET", "/regions/1/stops/1_nowhere")
            #expect(missing.status == 404)
            #expect(missing.text.contains("couldn&#39;t find that stop"))
        }
    }

    @Test(arguments: [
        // The iOS app's own trip links (seed §2), and milliseconds.
        "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200.0&stop_sequence=5",
        "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200&stop_sequence=5&title=x&vehicle_id=1_3618",
        "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200000&destination_stop_id=1_1",
    ])
    func aTripPageHighlightsTheSharedTrip(path: String) async throws {
        try await Self.run { app in
            let page = try await app.send("GET", path)
            #expect(page.status == 200)
            let html = page.text
            #expect(html.contains("Route 75 to UNIVERSITY DISTRICT NORTHGATE"))
            #expect(Self.meta("og:title", in: html) == "Route 75 to UNIVERSITY DISTRICT NORTHGATE · STEVENS WAY &amp; BENTON LN")
            #expect(html.contains("<tr class=\"shared\" aria-current=\"true\"><td class=\"route\">75</td>"))
            #expect(html.contains("Real-time · 2 min late"))
            #expect(html.contains("Vehicle 1_3618"))
        }
    }

    @Test func aTripOutsideTheWindowIsLookedUpAndAnUnknownOneIsAFriendly404() async throws {
        try await Self.run { app in
            let found = try await app.send("GET", "/regions/1/stops/1_11420/trips?trip_id=1_40989208&service_date=1538809200.0&stop_sequence=3")
            #expect(found.status == 200)
            #expect(found.text.contains("Route 10 to Downtown Seattle"))
            let gone = try await app.send("GET", "/regions/1/stops/1_75403/trips?trip_id=1_nope&service_date=1343545200.0")
            #expect(gone.status == 404)
            #expect(gone.text.contains("isn&#39;t running"))
        }
    }

    @Test(arguments: [
        ("/regions/2/stops/1_75403", 404), ("/regions/-1/stops/1_75403", 404), ("/regions/99999999999999999999/stops/1_75403", 404),
        ("/regions/abc/stops/1_75403", 404), ("/regions/1/stops/..%2F..%2Fetc%2Fpasswd", 404),
        ("/regions/1/stops/1_75403/trips", 400), ("/regions/1/stops/1_75403/trips?trip_id=1_18198857", 400),
        ("/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=yesterday", 400),
        ("/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200.0&stop_sequence=-4", 400),
        ("/regions/1/stops/1_75403/trips?trip_id=%3Cscript%3Ealert(1)%3C%2Fscript%3E&service_date=1343545200.0", 404),
    ])
    func badLinksGetAClearPageNeverA500(path: String, status: Int) async throws {
        try await Self.run { app in
            let page = try await app.send("GET", path)
            #expect(page.status == status, "\(path): \(page.status)")
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(!page.text.contains("<script>"))
        }
    }

    @Test func hostileValuesAreEscapedEverywhere() async throws {
        try await Self.run { app in
            let hostile = "1_75403\"><script>alert(1)</script>javascript:"
            let encoded = LinkRules.percentEncoded(hostile)
            let page = try await app.send("GET", "/regions/1/stops/\(encoded)")
            #expect(page.status == 404)
            #expect(!page.text.contains("<script>"))
            let long = try await app.send(
                "GET", "/regions/1/stops/1_75403/trips?trip_id=" + String(repeating: "a", count: 10_000) + "&service_date=1")
            #expect(long.status < 500)
            let page2 = try await app.send(
                "GET", "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200.0&title=%22%3E%3Cscript%3E")
            #expect(!page2.text.contains("<script>"))
        }
    }

    @Test func siteAssociationFilesOnlyWhenConfigured() async throws {
        try await Self.run({ _ in }) { app in
            let aasa = try await app.send("GET", "/.well-known/apple-app-site-association")
            let links = try await app.send("GET", "/.well-known/assetlinks.json")
            #expect(aasa.status == 404 && links.status == 404)
        }
        let fingerprint = Array(repeating: "AB", count: 32).joined(separator: ":")
        try await Self.run({ configuration in
            configuration.links.appleAppIDs = ["ABCDE12345.org.onebusaway.iphone"]
            configuration.links.androidApps = LinkRules.parseAndroidAppLinks("org.onebusaway.android:\(fingerprint)")
        }) { app in
            let aasa = try await app.send("GET", "/.well-known/apple-app-site-association")
            #expect(aasa.status == 200)
            #expect(aasa.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(aasa.text.contains("ABCDE12345.org.onebusaway.iphone"))
            let links = try await app.send("GET", "/.well-known/assetlinks.json")
            #expect(links.status == 200)
            #expect(links.text.contains(fingerprint))
        }
    }

    @Test func aRedirectTemplateSendsSharesToTheAgencysPlanner() async throws {
        try await Self.run({ $0.links.redirectTemplate = "https://plan.example.org/stop?id={stop_id}&trip={trip_id}&date={service_date}" }) { app in
            let stop = try await app.send("GET", "/regions/1/stops/1_75403")
            #expect(stop.status == 302)
            #expect(stop.header("Location") == "https://plan.example.org/stop?id=1_75403&trip=&date=")
            let trip = try await app.send("GET", "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200.0")
            #expect(trip.header("Location") == "https://plan.example.org/stop?id=1_75403&trip=1_18198857&date=1343545200000")
        }
    }

    @Test func theAddRegionPageCarriesTheLinkAndItsQRCode() async throws {
        try await Self.run { app in
            let page = try await app.send("GET", "/regions/1/add")
            #expect(page.status == 200)
            let html = page.text
            #expect(html.contains("<h1>Add Puget &lt;Sound&gt; to OneBusAway</h1>"))
            let link = LinkRules.addRegionLink(.init(name: "Puget <Sound>", obaURL: "http://127.0.0.1:", sidecarURL: nil, otpURL: nil))
            #expect(html.contains("href=\"onebusaway://add-region?name=Puget%20%3CSound%3E&amp;oba-url=http%3A%2F%2F127.0.0.1%3A"))
            #expect(html.contains("sidecar-url=https%3A%2F%2Fsidecar.example.org%2Fapi%3Fa%3D1%26b%3D2"))
            #expect(html.contains("<svg viewBox="))
            #expect(!link.isEmpty)
            #expect(try await app.send("GET", "/regions/7/add").status == 404)
        }
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

    @Test func thePosterPageCarriesTheRegionIDAndNamesTheAppVersions() async throws {
        try await TestSidecar.run({ _ in }) { app in
            let response = try await app.send("GET", "/regions/1/add")
            #expect(response.status == 200)
            #expect(response.text.contains("region-id=1"))
            #expect(response.text.contains("26.3.0") && response.text.contains("26.2.0"))
        }
    }
}
