import Core
import Foundation
import HTTPServer
import QRCode
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 16: the links the apps make and follow.
@Suite("Link rules")
struct LinkRulesTests {
    @Test(arguments: [
        // What the iOS app writes, whole seconds, milliseconds.
        ("1710273600.0", Int64(1_710_273_600_000)), ("1698307200.0", 1_698_307_200_000), ("1710273600", 1_710_273_600_000),
        ("1710273600000", 1_710_273_600_000), ("1710273600.5", 1_710_273_600_500), (" 1710273600.0 ", 1_710_273_600_000),
    ] as [(String, Int64)])
    func serviceDatesInEveryFormTheAppsUse(text: String, millis: Int64) {
        #expect(LinkRules.serviceDateMillis(text) == millis)
    }

    @Test(arguments: ["", "abc", "1e10", "-1710273600", "0", ".5", "1.2.3", "1710273600.0abc", "NaN", "inf", "99999999999999999999", "１７１０"])
    func serviceDatesThatAreNotNumbersAreRefused(text: String) {
        #expect(LinkRules.serviceDateMillis(text) == nil)
    }

    /// Values with `?`, `&`, `#`, `=`, spaces and non-ASCII survive the round trip.
    @Test(arguments: [
        ("Puget Sound", "https://api.pugetsound.onebusaway.org", "https://sidecar.example.org", nil),
        ("Région d'essai & co #1", "https://oba.example.com/api?key=a&b=c#frag", "https://obaco.example.com/api?a=1&b=2", "https://otp.example.com/?x=y z"),
        ("東京 ☃", "http://127.0.0.1:8080/", "https://s.example.org/p?q=%41", nil),
    ] as [(String, String, String, String?)])
    func addRegionLinksDecodeBackIntoEveryField(name: String, oba: String, sidecar: String, otp: String?) throws {
        let link = LinkRules.AddRegion(name: name, obaURL: oba, sidecarURL: sidecar, otpURL: otp)
        let text = LinkRules.addRegionLink(link)
        #expect(text.hasPrefix("onebusaway://add-region?name="))
        #expect(!text.dropFirst("onebusaway://add-region?".count).contains("?"), "no raw ? in the query")
        #expect(text.split(separator: "&").count == (otp == nil ? 3 : 4), "exactly one & per item")
        let items = try #require(LinkRules.queryItems(text))
        #expect(items["name"] == name)
        #expect(items["oba-url"] == oba)
        #expect(items["sidecar-url"] == sidecar)
        #expect(items["otp-url"] == otp)
        // And Foundation's URL parser (what the app uses) agrees.
        let components = try #require(URLComponents(string: text))
        #expect(components.queryItems?.first { $0.name == "sidecar-url" }?.value == sidecar)
        #expect(components.queryItems?.first { $0.name == "name" }?.value == name)
    }

    @Test func addRegionProblems() {
        #expect(LinkRules.problems(.init(name: "X", obaURL: "https://oba.example.com", sidecarURL: nil, otpURL: nil)).isEmpty)
        #expect(!LinkRules.problems(.init(name: " ", obaURL: "https://oba.example.com", sidecarURL: nil, otpURL: nil)).isEmpty)
        #expect(!LinkRules.problems(.init(name: "X", obaURL: "oba.example.com", sidecarURL: nil, otpURL: nil)).isEmpty, "a bare host is refused by the app")
        #expect(!LinkRules.problems(.init(name: "X", obaURL: "https://oba.example.com", sidecarURL: "not a url", otpURL: nil)).isEmpty)
        #expect(!LinkRules.problems(.init(name: "X", obaURL: "javascript:alert(1)", sidecarURL: nil, otpURL: nil)).isEmpty)
    }

    @Test func viewStopLinksUseTheAppsParameterNames() throws {
        let link = LinkRules.viewStopLink(stopID: "1_75403&x=<b>", regionID: 1)
        #expect(link == "onebusaway://view-stop?stopID=1_75403%26x%3D%3Cb%3E&regionID=1")
        #expect(LinkRules.queryItems(link)?["stopID"] == "1_75403&x=<b>")
    }

    @Test func appleAppSiteAssociationClaimsTripsWithATripIDAndStopPagesByChoice() throws {
        let document = LinkRules.appleAppSiteAssociation(appIDs: ["ABCDE12345.org.onebusaway.iphone"], claimStopPages: false)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(document.encoded())) as? [String: Any])
        let applinks = try #require(json["applinks"] as? [String: Any])
        let details = try #require(applinks["details"] as? [[String: Any]])
        #expect(details.count == 1, "no legacy paths entry: iOS reads it too, and paths cannot ask for a trip_id")
        let modern = try #require(details.first)
        #expect(modern["appIDs"] as? [String] == ["ABCDE12345.org.onebusaway.iphone"])
        let components = try #require(modern["components"] as? [[String: Any]])
        #expect(components.map { $0["/"] as? String } == ["/regions/*/stops/*/trips"])
        #expect(components[0]["?"] as? [String: String] == ["trip_id": "?*"], "a trips link without trip_id is not claimed")
        let text = String(decoding: document.encoded(), as: UTF8.self)
        #expect(!text.contains("/admin") && !text.contains("/api") && !text.contains("\"*\"") && !text.contains("\"/*\""))
        let withStops = LinkRules.appleAppSiteAssociation(appIDs: ["ABCDE12345.org.onebusaway.iphone"], claimStopPages: true)
        let stopJSON = try #require(try JSONSerialization.jsonObject(with: Data(withStops.encoded())) as? [String: Any])
        let stopComponents = try #require((((stopJSON["applinks"] as? [String: Any])?["details"] as? [[String: Any]])?.first)?["components"]
            as? [[String: Any]])
        // Order decides: trips with a trip_id, then anything deeper than a stop page excluded, then stop pages.
        #expect(stopComponents.map { $0["/"] as? String } == ["/regions/*/stops/*/trips", "/regions/*/stops/*/*", "/regions/*/stops/*"])
        #expect(stopComponents.map { $0["exclude"] as? Bool } == [nil, true, nil])
    }

    @Test(arguments: [
        ("ABCDE12345.org.onebusaway.iphone", true), ("ABCDE12345.org.onebusaway.iphone,ZZZZZ99999.com.agency.app", true),
        ("abcde12345.org.onebusaway.iphone", false), ("ABCDE.org.onebusaway.iphone", false), ("ABCDE12345.", false), ("", false),
        ("ABCDE12345.org/../x", false),
    ])
    func appleAppIDs(text: String, valid: Bool) {
        #expect((LinkRules.parseAppleAppIDs(text) != nil) == valid)
    }

    @Test func assetLinksFollowGooglesShape() throws {
        let fingerprint = (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":")
        let apps = try #require(LinkRules.parseAndroidAppLinks("org.onebusaway.android:\(fingerprint.lowercased())"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(LinkRules.assetLinks(apps).encoded())) as? [[String: Any]])
        #expect(json.count == 1)
        #expect(json[0]["relation"] as? [String] == ["delegate_permission/common.handle_all_urls"])
        let target = try #require(json[0]["target"] as? [String: Any])
        #expect(target["namespace"] as? String == "android_app")
        #expect(target["package_name"] as? String == "org.onebusaway.android")
        #expect(target["sha256_cert_fingerprints"] as? [String] == [fingerprint])
        #expect(LinkRules.parseAndroidAppLinks("org.onebusaway.android:AB:CD") == nil)
        #expect(LinkRules.parseAndroidAppLinks("noDots:\(fingerprint)") == nil)
    }

    @Test func redirectTemplatesEncodeTheirValues() {
        let url = LinkRules.redirect(template: "https://plan.example.org/stop?id={stop_id}&r={region_id}&t={trip_id}&x={unknown}",
                                     values: ["stop_id": "1_75403&evil=1", "region_id": "1"])
        #expect(url == "https://plan.example.org/stop?id=1_75403%26evil%3D1&r=1&t=&x={unknown}")
        #expect(LinkRules.redirect(template: "javascript:alert({stop_id})", values: [:]) == nil)
    }

    @Test func qrCodesRenderAsSVGAndPNG() throws {
        let code = try QRCode("onebusaway://add-region?name=Test&oba-url=https%3A%2F%2Foba.example.com")
        #expect(code.size >= 21 && (code.size - 17) % 4 == 0, "a QR version's size")
        // The three finder patterns' corners are dark.
        #expect(code.isDark(x: 0, y: 0) && code.isDark(x: code.size - 1, y: 0) && code.isDark(x: 0, y: code.size - 1))
        #expect(code.svg().hasPrefix("<?xml") && code.svg().contains("<path d=\"M4 4h7"))
        let png = code.png()
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(throws: QRCode.Failure.tooLong) { try QRCode(String(repeating: "x", count: 3000)) }
    }
}

/// A OneBusAway server made of the apps' own fixtures.
enum FixtureOBA {
    static func start() throws -> HTTPServer {
        var router = Router()
        router.add(Route("GET", "/api/where/arrivals-and-departures-for-stop/:stop", parsesParameters: false) { request in
            let stop = String(request.pathParameters["stop"]!.dropLast(5))
            switch stop {
            case "1_75403": return fixture("ios/arrivals_and_departures_for_stop_1_75403.json")
            case "1_10020": return fixture("ios/arrivals_and_departures_for_stop_1_10020_no_realtime.json")
            case "1_TEST": return fixture("ios/arrivals_and_departures_empty.json")
            case "1_11420": return fixture("ios/arrivals_and_departures_for_stop_1_75403.json")
            case "boom": return .json(500, ["error": "upstream failure"])
            default: return .bytes(200, contentType: "application/json", Array(#"{"code":404,"text":"resource not found","version":2,"currentTime":1}"#.utf8))
            }
        })
        router.add(Route("GET", "/api/where/arrival-and-departure-for-stop/:stop", parsesParameters: false) { request in
            request.rawQuery.contains("tripId=1_40989208") ? fixture("ios/arrival-and-departure-for-stop-1_11420.json")
                : .bytes(200, contentType: "application/json", Array(#"{"code":404,"text":"resource not found","version":2,"currentTime":1}"#.utf8))
        })
        return try startLocalServer(router)
    }

    static func fixture(_ path: String) -> Response {
        (try? SharedFixtures.bytes(path)).map { .bytes(200, contentType: "application/json", $0) } ?? .json(500, ["error": "no fixture"])
    }
}

@Suite("Share pages")
struct SharePageTests {
    static func run(_ configure: @escaping (inout SidecarConfiguration) -> Void = { _ in }, _ body: (TestSidecar) async throws -> Void) async throws {
        let oba = try FixtureOBA.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("share-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let regions = directory.appendingPathComponent("regions.json")
        try Data(#"{"data":{"list":[{"id":1,"regionName":"Puget <Sound>","obaBaseUrl":"http://127.0.0.1:\#(oba.port)/","sidecarBaseUrl":"https://sidecar.example.org/api?a=1&b=2"}]}}"#.utf8)
            .write(to: regions)
        try await TestSidecar.run({
            $0.regions = regions.path
            $0.publicURL = "https://sidecar.example.org"
            configure(&$0)
        }) { app in
            try await AlertStore(database: app.sidecar.database).setRegionSettings(RegionSettings(regionID: 1, agencyID: "1", timezone: "America/Los_Angeles"))
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
            let long = try await app.send("GET", "/regions/1/stops/1_75403/trips?trip_id=" + String(repeating: "a", count: 10_000) + "&service_date=1")
            #expect(long.status < 500)
            let page2 = try await app.send("GET", "/regions/1/stops/1_75403/trips?trip_id=1_18198857&service_date=1343545200.0&title=%22%3E%3Cscript%3E")
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
}
