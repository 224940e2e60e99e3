import Core
import Foundation
import OBA
import TestSupport
import Testing

@testable import SidecarKit

/// A Track started from a vehicle follows that trip: OneBusAway/onebusaway-ios
/// PR #1381 (merged 2026-09-04, closing #1334) pins the content to the tapped
/// trip, a bookmark's Track still packs up to three same-route-and-headsign
/// arrivals, and a trip missing from the list falls back to the departure
/// the app already pinned, never to another vehicle.
@Suite("LiveActivities: the tracked trip (iOS PR #1381)")
struct TrackedTripTests {
    static let day: Int64 = 1_796_169_600_000
    static let now = EpochMillis(day + 10 * 3600 * 1000)

    static func visit(
        _ trip: String, inMinutes minutes: Int64, serviceDate: Int64 = day, sequence: Int = 7, cancelled: Bool = false,
        vehicle: String = "v"
    ) -> ArrivalAndDeparture {
        let time = EpochMillis(now.value + minutes * 60_000)
        return ArrivalAndDeparture(
            stopId: "1_100", tripId: trip, routeId: "1_44", routeShortName: "44", tripHeadsign: "Ballard", serviceDate: EpochMillis(serviceDate),
            stopSequence: sequence, vehicleId: vehicle, predicted: true, predictedArrivalTime: time, predictedDepartureTime: time,
            scheduledArrivalTime: time, scheduledDepartureTime: time, lastUpdateTime: now,
            tripStatus: cancelled ? .init(status: "CANCELED") : nil)
    }

    static func outcome(_ entries: [ArrivalAndDeparture], _ visit: ContentStateBuilder.TrackedVisit) -> ContentStateBuilder.TrackedOutcome {
        ContentStateBuilder.tracked(entries, visit: visit, routeShortName: "44", tripHeadsign: "Ballard", currentTime: now)
    }

    static func times(_ state: ContentState) -> [Int64] { state.arrivals.map { $0.departureTime.millis.millis(since: now) / 60_000 } }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let entries: [ArrivalAndDeparture]
        let visit: ContentStateBuilder.TrackedVisit
        /// Minutes from now of the arrivals shown; nil: the bus has gone.
        let shown: [Int64]?
        let cancelled: Bool
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "two vehicles on one route and headsign, the later one tracked: only the later one",
            entries: [visit("early", inMinutes: 3, vehicle: "a"), visit("later", inMinutes: 12, vehicle: "b")],
            visit: .init(tripID: "later", serviceDate: day, stopSequence: 7), shown: [12], cancelled: false),
        Case(
            name: "the earlier one tracked: it alone, not the three-arrival pack",
            entries: [visit("early", inMinutes: 3), visit("later", inMinutes: 12), visit("last", inMinutes: 20)],
            visit: .init(tripID: "early", serviceDate: day, stopSequence: 7), shown: [3], cancelled: false),
        Case(
            name: "the tracked trip cancelled: the route and headsign's next buses, without it",
            entries: [visit("early", inMinutes: 3, cancelled: true), visit("later", inMinutes: 12), visit("last", inMinutes: 20)],
            visit: .init(tripID: "early", serviceDate: day, stopSequence: 7), shown: [12, 20], cancelled: true),
        Case(
            name: "the tracked trip missing from the stop's list: gone, never another vehicle",
            entries: [visit("later", inMinutes: 12)],
            visit: .init(tripID: "early", serviceDate: day, stopSequence: 7), shown: nil, cancelled: false),
        Case(
            name: "the tracked bus has left the stop: gone",
            entries: [visit("early", inMinutes: -2), visit("later", inMinutes: 12)],
            visit: .init(tripID: "early", serviceDate: day, stopSequence: 7), shown: nil, cancelled: false),
        Case(
            name: "service day rollover: the same trip id on the next service day is another bus",
            entries: [visit("night", inMinutes: 5, serviceDate: day + 86_400_000), visit("night", inMinutes: 30)],
            visit: .init(tripID: "night", serviceDate: day, stopSequence: 7), shown: [30], cancelled: false),
        Case(
            name: "a service date sent in seconds is the same day",
            entries: [visit("night", inMinutes: 5, serviceDate: day + 86_400_000), visit("night", inMinutes: 30)],
            visit: .init(tripID: "night", serviceDate: (day + 86_400_000) / 1000, stopSequence: 7), shown: [5], cancelled: false),
        Case(
            name: "a loop visits the stop twice: the registered stop sequence",
            entries: [visit("loop", inMinutes: 4, sequence: 2), visit("loop", inMinutes: 40, sequence: 19)],
            visit: .init(tripID: "loop", serviceDate: day, stopSequence: 19), shown: [40], cancelled: false),
        Case(
            name: "no service date or sequence registered: the trip's next visit",
            entries: [visit("loop", inMinutes: 40, sequence: 19), visit("loop", inMinutes: 4, sequence: 2)],
            visit: .init(tripID: "loop", serviceDate: nil, stopSequence: nil), shown: [4], cancelled: false),
    ]

    @Test(arguments: cases) func theTrackedTripRule(_ example: Case) {
        switch Self.outcome(example.entries, example.visit) {
        case .pinned(let state):
            #expect(!example.cancelled)
            #expect(Self.times(state) == example.shown)
        case .cancelled(let state):
            #expect(example.cancelled)
            #expect(Self.times(state) == example.shown)
        case .gone:
            #expect(example.shown == nil)
        }
    }

    /// A bookmark's Track (no trip) keeps the spec's three-arrival pack, and a
    /// cancelled trip is no arrival there either.
    @Test func aBookmarkTrackPacksUpToThreeWithoutCancelledTrips() {
        let entries = [
            Self.visit("a", inMinutes: 2, cancelled: true), Self.visit("b", inMinutes: 5), Self.visit("c", inMinutes: 9),
            Self.visit("d", inMinutes: 14), Self.visit("e", inMinutes: 30),
        ]
        let state = ContentStateBuilder.build(entries, routeShortName: "44", tripHeadsign: "Ballard", currentTime: Self.now)
        #expect(Self.times(state) == [5, 9, 14])
    }

    /// The app's `TripAttributes.ContentState` (OneBusAway/onebusaway-ios
    /// `OBAKitCore/Models/TripAttributes.swift`): `arrivals` of
    /// `departure_time`, `schedule_status` (one of four), `schedule_deviation`
    /// and `is_arrival`, every key required.
    struct AppContentState: Decodable {
        enum Status: String, Decodable { case early, onTime = "on_time", delayed, unknown }
        struct ArrivalInfo: Decodable {
            let departureTime: Int
            let scheduleStatus: Status
            let scheduleDeviation: Int
            let isArrival: Bool
            enum CodingKeys: String, CodingKey {
                case departureTime = "departure_time"
                case scheduleStatus = "schedule_status"
                case scheduleDeviation = "schedule_deviation"
                case isArrival = "is_arrival"
            }
        }
        let arrivals: [ArrivalInfo]
    }

    /// The pinned content decodes as the app decodes the fixture it ships.
    @Test func thePinnedStateDecodesAsTheAppsContentState() throws {
        let fixture = try JSONDecoder().decode(AppContentState.self, from: Data(try SharedFixtures.bytes("ios/live_activity_content_state.json")))
        #expect(fixture.arrivals.count == 3, "the mirror reads the app's own fixture")
        guard case .pinned(let state) = Self.outcome([Self.visit("t", inMinutes: 6)], .init(tripID: "t", serviceDate: Self.day, stopSequence: 7))
        else {
            Issue.record("not pinned")
            return
        }
        let decoded = try JSONDecoder().decode(AppContentState.self, from: Data(state.json.encoded()))
        #expect(decoded.arrivals.count == 1)
        #expect(decoded.arrivals.first?.departureTime == Int(Self.now.value / 1000 + 360))
        #expect(decoded.arrivals.first?.scheduleStatus == .onTime)
    }
}
