import Core
import GTFSRealtime
import Testing

@testable import SidecarKit

/// Each app's display rules, replicated from its code (see
/// `AlertAppVisibility`), as the console and `alert show` report them.
@Suite("Alerts: what each app will not show")
struct AlertAppVisibilityTests {
    static let now: Int64 = 1_800_000_000

    static func entity(
        agency: String? = "1", severity: SeverityLevel? = .warning, active: [TimeRange]? = nil, communication: [TimeRange]? = nil
    ) -> FeedEntity {
        let shown = [TimeRange(start: UInt64(now - 600), end: UInt64(now + 3600))]
        return FeedEntity(
            id: "Alert_1",
            alert: Alert(
                activePeriods: active ?? shown, communicationPeriods: communication ?? shown,
                informedEntities: agency.map { [EntitySelector(agencyID: $0)] } ?? [EntitySelector(routeID: "44")],
                headerText: TranslatedString([.init(text: "Detour", language: "en")]), severityLevel: severity))
    }

    static func hours(_ value: Int64) -> UInt64 { UInt64(now + value * 3600) }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let entity: FeedEntity
        let known: Set<String>?
        let expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a WARNING that started 10 minutes ago: both show it", entity: entity(), known: ["1"], expected: []),
        Case(name: "region-wide (empty agency): both show it", entity: entity(agency: ""), known: ["1"], expected: []),
        Case(
            name: "INFO: iOS only lists it, Android never shows it", entity: entity(severity: .info), known: nil,
            expected: [
                "iOS: lists it without a banner (INFO: only WARNING and SEVERE interrupt)",
                "Android: never shows it (INFO: its dialog shows only WARNING and SEVERE)",
            ]),
        Case(
            name: "no severity at all", entity: entity(severity: nil), known: nil,
            expected: [
                "iOS: lists it without a banner (no severity: only WARNING and SEVERE interrupt)",
                "Android: never shows it (no severity: its dialog shows only WARNING and SEVERE)",
            ]),
        Case(
            name: "started 10 hours ago: past iOS's 8 hours, inside Android's 24",
            entity: entity(active: [TimeRange(start: hours(-10), end: hours(5))], communication: [TimeRange(start: hours(-10), end: hours(5))]),
            known: nil, expected: ["iOS: lists it without a banner (it started more than 8 hours ago)"]),
        Case(
            name: "started 30 hours ago: past both windows",
            entity: entity(active: [TimeRange(start: hours(-30), end: hours(5))], communication: [TimeRange(start: hours(-30), end: hours(5))]),
            known: nil,
            expected: [
                "iOS: lists it without a banner (it started more than 8 hours ago)",
                "Android: no longer shows it: it started more than 24 hours ago",
            ]),
        Case(
            name: "starts in 12 hours: iOS waits for 8 hours before, Android for its start",
            entity: entity(active: [TimeRange(start: hours(12), end: hours(20))], communication: [TimeRange(start: hours(12), end: hours(20))]),
            known: nil,
            expected: ["iOS: lists it without a banner until 8 hours before it starts", "Android: shows it from its start (not yet)"]),
        Case(
            name: "no period start: neither can place it",
            entity: entity(active: [TimeRange(start: nil, end: hours(5))], communication: []), known: nil,
            expected: [
                "iOS: lists it without a banner (no start in its first active_period)", "Android: never shows it: no period has a start",
            ]),
        Case(
            name: "an agency the OneBusAway server does not know: iOS drops it", entity: entity(agency: "KCM"), known: ["1", "40"],
            expected: ["iOS: drops it: agency KCM is not in the OneBusAway server's agencies-with-coverage"]),
        Case(
            name: "no agency_id in any selector: neither shows it", entity: entity(agency: nil), known: nil,
            expected: [
                "iOS: drops it: no informed entity carries an agency_id", "Android: never shows it: no informed entity carries an agency_id",
            ]),
    ]

    @Test(arguments: cases) func theAppsRules(_ example: Case) {
        let found = AlertAppVisibility.findings(
            example.entity, stamp: EpochSeconds(Self.now), now: EpochSeconds(Self.now), knownAgencies: example.known)
        #expect(found.map(\.line) == example.expected)
    }
}
