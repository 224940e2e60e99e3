import Core
import Testing

@testable import SidecarKit

/// An editor types the zone the way people say it: an abbreviation is
/// answered with the place it usually means, and a fixed-offset zone is
/// taken only from a region that keeps one offset all year.
@Suite("Console: the time-zone field")
struct ConsoleTimeZoneTests {
    static func outcome(_ raw: String, fixedOffset: Bool = false) -> (zone: String?, message: String?) {
        switch AlertAdministration.timeZone(raw, fixedOffset: fixedOffset) {
        case .success(let zone): return (zone, nil)
        case .failure(let failure): return (nil, failure.messages.first)
        }
    }

    @Test(arguments: [
        ("PST", "America/Los_Angeles"), ("pdt", "America/Los_Angeles"), ("Eastern", "America/New_York"), ("CST", "America/Chicago"),
        ("IST", "Asia/Kolkata"), ("AKST", "America/Anchorage"),
    ])
    func anAbbreviationIsAnsweredWithThePlaceItMeans(_ typed: String, _ meant: String) {
        let (zone, message) = Self.outcome(typed)
        #expect(zone == nil)
        #expect(message?.contains("is an abbreviation") == true && message?.contains("use \(meant)") == true, "\(message ?? "")")
    }

    @Test func aFixedOffsetZoneNeedsTheNoDaylightTimeTick() {
        let refused = Self.outcome("MST")
        #expect(refused.zone == nil)
        #expect(refused.message?.contains("America/Denver") == true)
        #expect(refused.message?.contains("no daylight time") == true, "the way to keep MST is named")
        #expect(Self.outcome("mst", fixedOffset: true).zone == "MST", "Arizona's way")
        #expect(Self.outcome("HST", fixedOffset: true).zone == "HST")
        #expect(Self.outcome("PST", fixedOffset: true).zone == nil, "PST is no tzdata zone: still refused")
        #expect(Self.outcome("America/Phoenix").zone == "America/Phoenix")
        #expect(Self.outcome("none").zone == nil && Self.outcome("none").message == nil)
    }
}
