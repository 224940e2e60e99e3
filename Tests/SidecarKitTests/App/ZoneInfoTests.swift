import Core
import Foundation
import Testing

@testable import SidecarKit

/// The tz database reader behind the console's region times, checked against
/// instants whose offsets are known.
@Suite("App: time zones")
struct ZoneInfoTests {
    @Test(arguments: [
        // zone, instant (UTC), offset east of UTC
        ("America/Los_Angeles", "2026-01-01T00:00:00Z", -8 * 3600),
        ("America/Los_Angeles", "2026-07-01T00:00:00Z", -7 * 3600),
        ("America/Los_Angeles", "2026-03-08T09:59:59Z", -8 * 3600),  // just before spring forward (02:00 PST)
        ("America/Los_Angeles", "2026-03-08T10:00:00Z", -7 * 3600),
        ("America/Los_Angeles", "2026-11-01T08:59:59Z", -7 * 3600),  // just before fall back (02:00 PDT)
        ("America/Los_Angeles", "2026-11-01T09:00:00Z", -8 * 3600),
        ("America/Los_Angeles", "2045-07-01T00:00:00Z", -7 * 3600),  // past the file's transitions: the POSIX rule
        ("America/Los_Angeles", "2045-12-01T00:00:00Z", -8 * 3600),
        ("Europe/Berlin", "2026-03-29T00:59:59Z", 3600),
        ("Europe/Berlin", "2026-03-29T01:00:00Z", 7200),
        ("Asia/Kolkata", "2026-06-01T00:00:00Z", 19800),
        ("Australia/Sydney", "2026-01-15T00:00:00Z", 11 * 3600),  // southern summer
        ("Australia/Sydney", "2026-07-15T00:00:00Z", 10 * 3600),
        ("Australia/Sydney", "2050-01-15T00:00:00Z", 11 * 3600),
        ("UTC", "2026-07-01T00:00:00Z", 0),
    ])
    func offsets(zone: String, instant: String, offset: Int) throws {
        let info = try #require(ZoneInfo.named(zone))
        let seconds = Int64(try #require(ISO8601DateFormatter().date(from: instant)).timeIntervalSince1970)
        #expect(info.offset(at: seconds) == offset)
    }

    @Test(arguments: [
        // zone, wall-clock time, the instant it names
        ("America/Los_Angeles", "2026-12-01T08:00:00", "2026-12-01T16:00:00Z"),
        ("America/Los_Angeles", "2026-06-01T08:00:00", "2026-06-01T15:00:00Z"),
        ("America/Los_Angeles", "2026-03-08T02:30:00", "2026-03-08T10:30:00Z"),  // skipped: read as 03:30 PDT
        ("America/Los_Angeles", "2026-11-01T01:30:00", "2026-11-01T08:30:00Z"),  // repeated: the first (PDT)
        ("Europe/Berlin", "2026-12-24T18:00:00", "2026-12-24T17:00:00Z"),
        ("Asia/Kolkata", "2026-01-01T00:00:00", "2025-12-31T18:30:00Z"),
    ])
    func wallClockTimes(zone: String, local: String, expected: String) throws {
        let info = try #require(ZoneInfo.named(zone))
        let localSeconds = Int64(try #require(ISO8601DateFormatter().date(from: local + "Z")).timeIntervalSince1970)
        let instant = Int64(try #require(ISO8601DateFormatter().date(from: expected)).timeIntervalSince1970)
        #expect(info.instant(fromLocal: localSeconds) == instant)
    }

    @Test(arguments: ["", "../../etc/passwd", "/etc/passwd", "Nowhere/Atlantis", "America/Los Angeles", String(repeating: "A", count: 80)])
    func unknownOrHostileNamesAreRefused(name: String) {
        #expect(ZoneInfo.named(name) == nil)
    }

    @Test func civilDatesRoundTrip() {
        for seconds in stride(from: Int64(-5_000_000_000), through: 5_000_000_000, by: 86_399 * 37) {
            let date = CivilDate(epochSeconds: seconds)
            #expect(date.epochSeconds == seconds)
        }
        #expect(CivilDate(epochSeconds: 0) == CivilDate(year: 1970, month: 1, day: 1))
        #expect(CivilDate(epochSeconds: 951_782_400) == CivilDate(year: 2000, month: 2, day: 29))
    }

    @Test func posixRulesParse() {
        #expect(ZoneInfo(identifier: "x", tzif: Array("TZif2 not really".utf8)) == nil)
        #expect(ZoneInfo(identifier: "x", tzif: []) == nil)
    }

    /// `region set --timezone` refuses what is not a place and suggests only
    /// real places, close enough to have been meant (issue 35).
    @Test(
        arguments: [
            ("America/Los_Angelos", "America/Los_Angeles"), ("asia/kolkatta", "Asia/Kolkata"), ("Europe/Berlinn", "Europe/Berlin"),
            ("Factory", nil), ("xyzzy", nil), ("Etc/GMT+5", nil), ("nothing like a zone at all", nil),
        ] as [(String, String?)])
    func suggestionsAreRealPlaces(typed: String, suggested: String?) {
        #expect(ZoneCatalog.nearest(to: typed) == suggested)
        #expect(ZoneCatalog.nearest(to: typed) != "Factory")
    }

    @Test func markersAndOffsetsAreNoRegionZone() {
        for name in ["Factory", "Etc/GMT+5", "EST5EDT"] {
            guard case .failure = AlertAdministration.timeZone(name) else {
                Issue.record("\(name) was accepted as a region's zone")
                continue
            }
        }
        #expect((try? AlertAdministration.timeZone("America/Los_Angeles").get()) == "America/Los_Angeles")
        #expect((try? AlertAdministration.timeZone("UTC").get()) == "UTC")
    }
}
