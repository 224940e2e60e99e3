import Core
import Foundation
import HTTPServer
import QRCode
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 16: the links the apps make and follow.
@Suite("Links: rules")
struct LinkRulesTests {
    @Test(
        arguments: [
            // What the iOS app writes, whole seconds, milliseconds.
            ("1710273600.0", Int64(1_710_273_600_000)), ("1698307200.0", 1_698_307_200_000), ("1710273600", 1_710_273_600_000),
            ("1710273600000", 1_710_273_600_000), ("1710273600.5", 1_710_273_600_500), (" 1710273600.0 ", 1_710_273_600_000),
        ] as [(String, Int64)])
    func serviceDatesInEveryFormTheAppsUse(text: String, millis: Int64) {
        #expect(LinkRules.serviceDateMillis(text)?.value == millis)
    }

    @Test(arguments: ["", "abc", "1e10", "-1710273600", "0", ".5", "1.2.3", "1710273600.0abc", "NaN", "inf", "99999999999999999999", "１７１０"])
    func serviceDatesThatAreNotNumbersAreRefused(text: String) {
        #expect(LinkRules.serviceDateMillis(text) == nil)
    }

    /// Values with `?`, `&`, `#`, `=`, spaces and non-ASCII survive the round trip.
    @Test(
        arguments: [
            ("Puget Sound", "https://api.pugetsound.onebusaway.org", "https://sidecar.example.org", nil),
            (
                "Région d'essai & co #1", "https://oba.example.com/api?key=a&b=c#frag", "https://obaco.example.com/api?a=1&b=2",
                "https://otp.example.com/?x=y z"
            ),
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
        #expect(
            !LinkRules.problems(.init(name: "X", obaURL: "oba.example.com", sidecarURL: nil, otpURL: nil)).isEmpty,
            "a bare host is refused by the app")
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
        let stopComponents = try #require(
            (((stopJSON["applinks"] as? [String: Any])?["details"] as? [[String: Any]])?.first)?["components"]
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
        let url = LinkRules.redirect(
            template: "https://plan.example.org/stop?id={stop_id}&r={region_id}&t={trip_id}&x={unknown}",
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

    @Test(arguments: [
        ("https://plan.example.org/stop?id={stop_id}", true), ("https://plan.example.org?stop={stop_id}", true),
        ("https://plan.example.org#{stop_id}", true), ("https://plan.example.org{stop_id}", false), ("https://{region_id}.example.org/", false),
        ("https://plan.example.org:{stop_id}/", false), ("https://user{stop_id}@plan.example.org/", false), ("https://plan.example.org/", true),
    ])
    func redirectTemplatesKeepPlaceholdersOutOfTheAuthority(_ template: String, _ accepted: Bool) {
        #expect((LinkRules.redirect(template: template, values: [:]) != nil) == accepted)
    }
}
