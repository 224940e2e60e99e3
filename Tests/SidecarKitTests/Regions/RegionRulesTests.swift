import Foundation
import TestSupport
import Testing

@testable import SidecarKit

@Suite("Regions: path segments (spec §1.2 and §2.4)")
struct RegionPathTests {
    @Test(
        "leading integer",
        arguments: [
            ("1", 1), ("0", 0), ("1-puget-sound", 1), ("12-x", 12), ("01", 1), ("7-", 7), ("3--", 3),
        ])
    func parses(segment: String, expected: Int) {
        #expect(RegionPath.regionID(fromSegment: segment) == expected)
    }

    @Test("not a region id", arguments: ["abc", "-3", "", "99999999999999999999", "+1", " 1", "puget-1", "0.5", "7abc", "42.json", "1_2"])
    func refuses(segment: String) {
        #expect(RegionPath.regionID(fromSegment: segment) == nil)
    }

    @Test func slugs() {
        #expect(Region(id: 1, name: "Puget Sound", obaBaseURL: nil, sidecarBaseURL: nil, bounds: []).slug == "1-puget-sound")
        #expect(Region(id: 4, name: "Washington, D.C.", obaBaseURL: nil, sidecarBaseURL: nil, bounds: []).slug == "4-washington-d-c")
        #expect(Region(id: 6, name: "Bear Transit (beta)", obaBaseURL: nil, sidecarBaseURL: nil, bounds: []).slug == "6-bear-transit-beta")
        #expect(Region(id: 13, name: "Mayagüez", obaBaseURL: nil, sidecarBaseURL: nil, bounds: []).slug == "13-mayag-ez")
    }
}

@Suite("Regions: directory documents")
struct RegionsDocumentTests {
    @Test(
        "the apps' fixtures parse",
        arguments: [
            ("ios/regions-v3.json", 17), ("ios/regions-just-puget-sound.json", 1), ("ios/regions-puget-sound-no-sidecar.json", 1),
            ("android/regions_v3.json", 0), ("ios/decoder-failure__regions-v3.json", 0),
        ])
    func parsesFixtures(path: String, minimum: Int) throws {
        let regions = try RegionsDocument.parse(try SharedFixtures.bytes(path))
        #expect(regions.count >= max(minimum, 1))
        if minimum == 17 {
            let puget = try #require(regions.first { $0.id == 1 })
            #expect(puget.name == "Puget Sound")
            #expect(puget.obaBaseURL == "https://api.pugetsound.onebusaway.org/")
            #expect(puget.bounds.count == 9)
            #expect(regions.contains { $0.id == 0 }, "region 0 is a real region")
        }
    }

    @Test func aRegionWithoutASidecarParses() throws {
        let regions = try RegionsDocument.parse(try SharedFixtures.bytes("ios/regions-puget-sound-no-sidecar.json"))
        #expect(regions.first?.sidecarBaseURL == nil)
    }

    @Test(
        "malformed documents are refused with a reason",
        arguments: [
            ("not json", "invalid JSON"),
            (#"{"data": {}}"#, "missing data.list"),
            (#"{"data": {"list": []}}"#, "empty"),
            (#"{"data": {"list": [{"id": "one", "regionName": "x"}]}}"#, "wrong type"),
            (#"{"data": {"list": [{"id": 1}]}}"#, "regionName"),
            (#"{"data": {"list": [{"id": 1, "regionName": "a"}, {"id": 1, "regionName": "b"}]}}"#, "twice"),
            (#"{"data": {"list": [{"id": -2, "regionName": "a"}]}}"#, "negative"),
        ])
    func refuses(document: String, reason: String) {
        do {
            _ = try RegionsDocument.parse(Array(document.utf8))
            Issue.record("accepted \(document)")
        } catch {
            #expect(error.description.contains(reason), "\(error.description)")
        }
    }
}
