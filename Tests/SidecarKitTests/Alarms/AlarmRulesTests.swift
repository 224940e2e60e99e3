import Core
import HTTPServer
import OBA
import Push
import Testing

@testable import SidecarKit

@Suite("Alarms: rules (spec §5)")
struct AlarmRulesTests {
    @Test(
        "seconds_before",
        arguments: [
            ("300", 300), ("300.0", 300), ("299.9", 299), (" 120 ", 120), ("1", 1), ("0.5", 600), ("0", 600), ("-5", 600),
            ("abc", 600), ("", 600), ("nan", 600), ("inf", 600), ("1e300", 604_800), ("600", 600), ("1e3", 1000),
        ])
    func secondsBefore(raw: String, expected: Int) {
        #expect(AlarmRules.secondsBefore(raw) == expected)
    }

    @Test func absentSecondsBeforeIs600() { #expect(AlarmRules.secondsBefore(nil) == 600) }

    @Test(
        "messages",
        arguments: [
            ("44", "Ballard", 600, "The 44 to Ballard leaves in 10 minutes"),
            ("44", "", 600, "The 44 leaves in 10 minutes"),
            ("44", nil, 60, "The 44 leaves in 1 minute"),
            ("E Line", "Aurora Village", 90, "The E Line to Aurora Village leaves in 1 minute"),
            ("10", "Downtown", 30, "The 10 to Downtown leaves in 1 minute"),
            ("10", "Downtown", 179, "The 10 to Downtown leaves in 2 minutes"),
            (nil, nil, 600, "The bus leaves in 10 minutes"),
            ("  ", nil, 300, "The bus leaves in 5 minutes"),
        ] as [(String?, String?, Int, String)])
    func messages(route: String?, headsign: String?, seconds: Int, expected: String) {
        #expect(AlarmRules.message(route: route, headsign: headsign, secondsBefore: seconds) == expected)
    }

    @Test func messageFallsBackToTheRouteReference() {
        let entry = ArrivalAndDeparture(routeId: "1_100002", routeShortName: "", tripHeadsign: "Downtown Seattle")
        let references = References(routes: [RouteReference(id: "1_100002", shortName: "10", longName: "Long")])
        #expect(AlarmRules.message(for: entry, references: references, secondsBefore: 300) == "The 10 to Downtown Seattle leaves in 5 minutes")
    }

    @Test(
        "fire decision at the boundaries (seconds until departure, seconds_before)",
        arguments: [
            (601, 600, AlarmRules.Decision.wait), (600, 600, .fire), (599, 600, .fire), (1, 600, .fire), (0, 600, .fire),
            (-1, 600, .expire), (-3600, 600, .expire), (61, 60, .wait), (60, 60, .fire),
        ] as [(Int64, Int, AlarmRules.Decision)])
    func decisions(seconds: Int64, before: Int, expected: AlarmRules.Decision) {
        #expect(AlarmRules.decide(secondsUntilDeparture: seconds, secondsBefore: before) == expected)
    }

    @Test(
        "seconds until departure round down",
        arguments: [
            (10_999 as Int64, 10 as Int64), (10_000, 10), (0, 0), (-1, -1), (-500, -1), (-1000, -1), (-1001, -2), (999, 0),
        ])
    func secondsUntil(difference: Int64, expected: Int64) {
        #expect(AlarmRules.secondsUntilDeparture(EpochMillis(1_000_000 + difference), currentTime: 1_000_000) == expected)
    }

    @Test func predictedWhenPredictedAndPositiveElseScheduled() {
        #expect(ArrivalAndDeparture(predicted: true, predictedDepartureTime: 5, scheduledDepartureTime: 9).effectiveDepartureTime == 5)
        #expect(ArrivalAndDeparture(predicted: true, predictedDepartureTime: 0, scheduledDepartureTime: 9).effectiveDepartureTime == 9)
        #expect(ArrivalAndDeparture(predicted: false, predictedDepartureTime: 5, scheduledDepartureTime: 9).effectiveDepartureTime == 9)
        #expect(ArrivalAndDeparture(predicted: nil, predictedDepartureTime: 5, scheduledDepartureTime: 9).effectiveDepartureTime == 9)
    }

    @Test(
        "failure streak",
        arguments: [
            (AlarmRules.LookupOutcome.notFound, 0, 1), (.notFound, 2, 3), (.found, 2, 0), (.transient, 2, 2), (.transient, 0, 0),
        ])
    func streak(outcome: AlarmRules.LookupOutcome, previous: Int, expected: Int) {
        #expect(AlarmRules.streak(after: outcome, previous: previous) == expected)
    }

    @Test func nextCheckSkipsOnlyWhatCannotFire() {
        let now: EpochMillis = 1_000_000_000
        // Near firing: next cycle.
        #expect(
            AlarmRules.nextCheck(nowMillis: now, secondsUntilDeparture: 700, secondsBefore: 600, intervalSeconds: 60) == now.adding(millis: 60_000))
        #expect(
            AlarmRules.nextCheck(nowMillis: now, secondsUntilDeparture: 600 + 900 + 119, secondsBefore: 600, intervalSeconds: 60)
                == now.adding(millis: 60_000))
        // 90 minutes out with a 10-minute alarm: slack 4800 s, (4800 - 900) / 120 = 32 intervals.
        #expect(
            AlarmRules.nextCheck(nowMillis: now, secondsUntilDeparture: 5400, secondsBefore: 600, intervalSeconds: 60)
                == now.adding(millis: 32 * 60_000))
    }

    func alarm(os: PushPlatform, stopSequence: Int? = 3, vehicle: String? = "1_4361") -> Alarm {
        Alarm(
            id: 1, token: "t", regionID: 1, apiVersion: .v2, userPushID: "device-token", operatingSystem: os, apnsSandbox: true,
            stopID: "1_570", tripID: "1_604370", serviceDate: 1_754_809_200_000, vehicleID: vehicle, stopSequence: stopSequence,
            secondsBefore: 600, message: "The 44 to Ballard leaves in 10 minutes", failureCount: 0, departureEstimate: nil,
            nextCheckAt: 0, createdAt: 0)
    }

    @Test func iosPayloadIsExactlyArrivalAndDeparture() {
        let push = AlarmRules.push(for: alarm(os: .ios))
        #expect(push.platform == .ios)
        #expect(push.apnsSandbox)
        #expect(push.title == "OneBusAway")
        #expect(push.body == "The 44 to Ballard leaves in 10 minutes")
        #expect(
            push.data == [
                "arrival_and_departure": .object([
                    "region_id": .integer(1), "stop_id": .string("1_570"), "trip_id": .string("1_604370"),
                    "service_date": .integer(1_754_809_200_000), "vehicle_id": .string("1_4361"), "stop_sequence": .integer(3),
                ])
            ])
    }

    @Test func missingTripFieldsAreNulls() {
        let push = AlarmRules.push(for: alarm(os: .ios, stopSequence: nil, vehicle: nil))
        guard case .object(let fields)? = push.data["arrival_and_departure"] else {
            Issue.record("no object")
            return
        }
        #expect(Set(fields.keys) == ["region_id", "stop_id", "trip_id", "service_date", "vehicle_id", "stop_sequence"])
        #expect(fields["vehicle_id"] == .null)
        #expect(fields["stop_sequence"] == .null)
    }

    @Test func androidPayloadIsAJSONString() throws {
        let push = AlarmRules.push(for: alarm(os: .android))
        #expect(push.platform == .android)
        #expect(!push.apnsSandbox, "sandbox is meaningless off iOS")
        #expect(Set(push.data.keys) == ["arrival_and_departure"])
        guard case .string(let text)? = push.data["arrival_and_departure"] else {
            Issue.record("not a string")
            return
        }
        #expect(
            text == #"{"region_id":1,"service_date":1754809200000,"stop_id":"1_570","stop_sequence":3,"trip_id":"1_604370","vehicle_id":"1_4361"}"#)
    }

    func parse(_ fields: [String: String], version: AlarmAPIVersion) -> Result<AlarmRequest, ValidationFailure> {
        AlarmRequest.parse(Parameters(fields.mapValues { .string($0) }), version: version)
    }

    @Test func onlyThePushIDAndOnV2TheOperatingSystemAreValidated() throws {
        #expect(throws: ValidationFailure(["Push identifier can't be blank", "Operating system can't be blank"])) {
            try parse([:], version: .v2).get()
        }
        #expect(throws: ValidationFailure(["Operating system is not included in the list"])) {
            try parse(["user_push_id": "push-0001", "operating_system": "symbian"], version: .v2).get()
        }
        #expect(throws: ValidationFailure(["Push identifier can't be blank"])) { try parse(["operating_system": "ios"], version: .v1).get() }
        let v1 = try parse(["user_push_id": "push-0001", "operating_system": "symbian", "apns_sandbox": "1"], version: .v1).get()
        #expect(v1.operatingSystem == .ios)
        #expect(!v1.apnsSandbox, "v1 has no apns_sandbox")
        let bare = try parse(["user_push_id": "push-0001", "operating_system": "android"], version: .v2).get()
        #expect(bare.stopID == nil && bare.tripID == nil && bare.serviceDate == nil && bare.stopSequence == nil)
        #expect(bare.secondsBefore == 600)
        let full = try parse(
            [
                "user_push_id": "push-0001", "operating_system": "ios", "stop_id": "1_570", "trip_id": "1_604370",
                "service_date": "1754809200000", "stop_sequence": "0", "vehicle_id": "1_4361", "seconds_before": "300.0",
                "apns_sandbox": "true",
            ], version: .v2
        ).get()
        #expect(full.serviceDate == 1_754_809_200_000)
        #expect(full.stopSequence == 0)
        #expect(full.secondsBefore == 300)
        #expect(full.apnsSandbox)
        #expect(
            try parse(["user_push_id": "push-0001", "operating_system": "ios", "service_date": "2025-08-10"], version: .v2).get().serviceDate == nil)
    }

    // MARK: The text at firing

    @Test(
        "minutes remaining, rounded down; now under a minute",
        arguments: [
            (Int64(-5), "leaves now"), (0, "leaves now"), (59, "leaves now"), (60, "leaves in 1 minute"), (119, "leaves in 1 minute"),
            (120, "leaves in 2 minutes"), (299, "leaves in 4 minutes"), (300, "leaves in 5 minutes"), (3_599, "leaves in 59 minutes"),
        ])
    func departurePhrase(seconds: Int64, expected: String) {
        #expect(AlarmRules.departurePhrase(secondsUntilDeparture: seconds) == expected)
    }

    @Test(
        "the text pushed at firing",
        arguments: [
            ("44", "Ballard", Int64(300), "The 44 to Ballard leaves in 5 minutes"),
            ("44", "Ballard", 61, "The 44 to Ballard leaves in 1 minute"),
            ("44", "Ballard", 30, "The 44 to Ballard leaves now"),
            ("E Line", "", 600, "The E Line leaves in 10 minutes"),
            ("E Line", nil, 600, "The E Line leaves in 10 minutes"),
            (nil, "Ballard", 300, "stored text"),
            ("  ", "Ballard", 300, "stored text"),
        ] as [(String?, String?, Int64, String)])
    func firingMessage(route: String?, headsign: String?, seconds: Int64, expected: String) {
        #expect(AlarmRules.firingMessage(route: route, headsign: headsign, secondsUntilDeparture: seconds, stored: "stored text") == expected)
    }

    @Test("minutes from the predicted time when predicted, else the scheduled one")
    func minutesFromPredictedAndScheduledTimes() throws {
        let now: EpochMillis = 1_767_225_600_000
        let predicted = ArrivalAndDeparture(
            routeShortName: "44", tripHeadsign: "Ballard", predicted: true,
            predictedDepartureTime: now.adding(millis: 290_000), scheduledDepartureTime: now.adding(millis: 600_000))
        let scheduled = ArrivalAndDeparture(
            routeShortName: "44", tripHeadsign: "Ballard", predicted: false,
            predictedDepartureTime: 0, scheduledDepartureTime: now.adding(millis: 600_000))
        for (entry, expected) in [(predicted, "The 44 to Ballard leaves in 4 minutes"), (scheduled, "The 44 to Ballard leaves in 10 minutes")] {
            let departure = try #require(entry.effectiveDepartureTime)
            let seconds = AlarmRules.secondsUntilDeparture(departure, currentTime: now)
            #expect(
                AlarmRules.firingMessage(
                    route: AlarmRules.routeName(of: entry, references: nil), headsign: entry.tripHeadsign,
                    secondsUntilDeparture: seconds, stored: "x") == expected)
        }
    }
}
