import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// The scheduler checks far-off alarms less often. This drives the real
/// alarm checker, minute by minute on the manual clock, against a fake
/// OneBusAway whose predictions follow traces that move within the bounds
/// the scheduler assumes (`AlarmRules.maxJumpSeconds` at once,
/// `maxDriftPerMinute` per minute), and shows it fires (or expires) every
/// alarm in the same minute as a naive loop that checks every alarm every
/// minute with `AlarmRules.decide`, while looking up far less.
@Suite("Alarms: scheduling against checking every minute")
struct AlarmSchedulingTests {
    /// Predicted departure (seconds from the start) at each minute: drifts by
    /// -60…+90 s a minute, with at most one earlier jump of up to 900 s.
    static func trace(minutes: Int, using generator: inout SplitMix) -> [Int64] {
        var departure = Int64.random(in: 120...(3 * 3600), using: &generator)
        let jumpMinute = Bool.random(using: &generator) ? Int.random(in: 0..<minutes, using: &generator) : -1
        var values: [Int64] = []
        for minute in 0..<minutes {
            if minute > 0 { departure += Int64.random(in: -AlarmRules.maxDriftPerMinute...90, using: &generator) }
            if minute == jumpMinute { departure -= Int64.random(in: 0...AlarmRules.maxJumpSeconds, using: &generator) }
            values.append(departure)
        }
        return values
    }

    enum Outcome: Equatable { case fire(Int), expire(Int), never }

    /// The oracle: every alarm checked every minute.
    static func naive(_ trace: [Int64], secondsBefore: Int) -> Outcome {
        for (minute, departure) in trace.enumerated() {
            switch AlarmRules.decide(secondsUntilDeparture: departure - Int64(minute) * 60, secondsBefore: secondsBefore) {
            case .wait: continue
            case .fire: return .fire(minute)
            case .expire: return .expire(minute)
            }
        }
        return .never
    }

    /// One rider's alarm: a trip of its own, told apart by its device.
    struct SimulatedAlarm {
        let device: String
        let trip: String
        let stop: String
        let secondsBefore: Int
        let trace: [Int64]
    }

    static let alarmCount = 300
    static let minutes = 240
    /// Alarms share stops, as they do in a city: one stop request serves several.
    static let stopCount = 8

    @Test func firesInTheSameMinuteAsCheckingEveryMinute() async throws {
        var generator = SplitMix(seed: 20261130)
        let alarms = (0..<Self.alarmCount).map { index in
            let trace = Self.trace(minutes: Self.minutes, using: &generator)
            let secondsBefore = [60, 300, 600, 900, 1200].randomElement(using: &generator)!
            return SimulatedAlarm(
                device: "sim-device-\(index)", trip: "sim-trip-\(index)", stop: "1_\(20_000 + index % Self.stopCount)",
                secondsBefore: secondsBefore, trace: trace)
        }
        let expected = alarms.map { Self.naive($0.trace, secondsBefore: $0.secondsBefore) }
        // The traces exercise every path: alarms that fire, and alarms whose bus leaves between checks.
        #expect(expected.contains { if case .fire = $0 { true } else { false } })
        #expect(expected.contains { if case .expire = $0 { true } else { false } })

        // One test client creates every alarm: its write and lookup budgets are off.
        try await AlarmRouteTests.run(configure: {
            $0.alarmLimit = 0
            $0.pushRegistrationLimit = 0
            $0.upstreamLookupLimit = 0
        }) { app, oba, gorush in
            let start = app.clock.now().epochMillis
            /// Every trip's predicted departure at `minute`, from its trace.
            func trips(atMinute minute: Int) -> [FakeOBA.Trip] {
                alarms.map {
                    FakeOBA.Trip(
                        stopID: $0.stop, tripID: $0.trip, serviceDate: AlarmRouteTests.serviceDate,
                        departure: start + $0.trace[minute] * 1000)
                }
            }
            oba.set(trips(atMinute: 0))
            for alarm in alarms {
                let response = try await app.post(
                    "/api/v2/regions/1/alarms",
                    AlarmRouteTests.alarmFields(
                        alarm.trip, stop: alarm.stop, push: alarm.device, secondsBefore: String(alarm.secondsBefore)))
                try #require(response.status == 201, "\(alarm.device): \(response.text)")
            }

            // Minute by minute: the predictions move, the checker runs one
            // cycle, and what happened to each alarm is read from outside.
            let store = AlarmStore(database: app.sidecar.database)
            let checker = app.sidecar.alarmChecker
            let before = oba.counts
            var observed: [String: Outcome] = [:]
            var checked = 0
            for minute in 0..<Self.minutes {
                oba.set(trips(atMinute: minute))
                checked += await checker.runCycle().checked
                let pushed = Set(gorush.tokens)
                let waiting = Set(try await store.due(atOrBefore: EpochMillis(.max)).map(\.userPushID))
                for alarm in alarms where observed[alarm.device] == nil {
                    if pushed.contains(alarm.device) {
                        observed[alarm.device] = .fire(minute)
                    } else if !waiting.contains(alarm.device) {
                        observed[alarm.device] = .expire(minute)  // gone without a push
                    }
                }
                if observed.count == alarms.count { break }
                app.clock.advance(seconds: 60)
            }
            let after = oba.counts
            #expect(gorush.tokens.count == Set(gorush.tokens).count, "no alarm pushed twice")

            var naiveChecks = 0
            for (alarm, expected) in zip(alarms, expected) {
                let actual = observed[alarm.device] ?? .never
                #expect(
                    actual == expected,
                    "\(alarm.device), \(alarm.secondsBefore) s before, departures \(alarm.trace.prefix(8))…: the checker \(actual), every minute \(expected)"
                )
                switch expected {
                case .fire(let minute), .expire(let minute): naiveChecks += minute + 1
                case .never: naiveChecks += Self.minutes
                }
            }
            // And it checks, and asks OneBusAway, much less often.
            let lookups = (after.stop - before.stop) + (after.trip - before.trip)
            #expect(checked * 2 < naiveChecks, "\(checked) alarm checks vs \(naiveChecks) checking every minute")
            #expect(lookups * 2 < naiveChecks, "\(lookups) OneBusAway requests vs \(naiveChecks) checking every minute")
        }
    }
}
