import Foundation
import HTTPServer
import Push
import Synchronization
import TestSupport

@testable import SidecarKit

/// A OneBusAway REST API server whose predictions the test programs.
final class FakeOBA: Sendable {
    /// One trip's visit to the fake stop(s).
    struct Trip: Sendable {
        var stopID: String
        var tripID: String
        var serviceDate: Int64
        var departure: Int64
        var predicted = true
        var stopSequence = 4
        var vehicleID: String? = "1_7012"
        var route = "10"
        var headsign = "Downtown Seattle"
    }

    enum Mode: Sendable { case normal, notFound, serverError }

    struct State: Sendable {
        var trips: [Trip] = []
        var mode = Mode.normal
        var stopRequests = 0
        var tripRequests = 0
        /// When set, each trip request is held until `tripRequests` reaches
        /// it (a barrier): asked one after another, they never meet.
        var tripBarrier = 0
        var tripsInFlight = 0
        var maxTripsInFlight = 0
        var keys: [String] = []
        var vehicles: [String: [String]] = [:]
        var fleetRequests = 0
        var tripDetailRequests = 0
        /// Run as each stop request is answered (a test makes time pass).
        var whileAnsweringStop: (@Sendable () -> Void)? = nil
        /// Routes, stops and trips the server knows, as `route/1_44`.
        var entities: Set<String> = []
        var entityRequests = 0
    }

    let state = Locked(State())
    let server: HTTPServer
    let now: @Sendable () -> Int64

    init(now: @escaping @Sendable () -> Int64) throws {
        self.now = now
        // Read now: a missing fixture fails the test here, naming its path.
        let fixtures = try LoadedFixtures([
            "ios/arrival-and-departure-for-stop-1_11420.json", "ios/2_agencies_with_coverage.json",
            "ios/trip_details_1_18196913.json",
        ])
        var router = Router()
        let state = self.state
        router.add(
            Route("GET", "/api/where/arrival-and-departure-for-stop/:stop") { request in
                let stop = String(request.pathParameters["stop"]!.dropLast(5))
                let (mode, trips, barrier) = state.withLock { value -> (Mode, [Trip], Int) in
                    value.tripRequests += 1
                    value.tripsInFlight += 1
                    value.maxTripsInFlight = max(value.maxTripsInFlight, value.tripsInFlight)
                    value.keys.append(request.parameters["key"] ?? "")
                    return (value.mode, value.trips, value.tripBarrier)
                }
                defer { state.withLock { $0.tripsInFlight -= 1 } }
                // The barrier's deadline only catches a checker that asks one at a time.
                let deadline = ContinuousClock.now + .seconds(30)
                while barrier > 0, state.withLock({ $0.tripRequests }) < barrier, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(2))
                }
                switch mode {
                case .serverError: return .json(500, ["error": "boom"])
                case .notFound: return .json(404, ["code": 404])
                case .normal: break
                }
                // The iOS app's own fixture answers for its stop and trip.
                if stop == "1_11420", request.parameters["tripId"] == "1_40989208" {
                    return fixtures.response("ios/arrival-and-departure-for-stop-1_11420.json")
                }
                guard
                    let trip = trips.first(where: {
                        $0.stopID == stop && $0.tripID == request.parameters["tripId"]
                            && String($0.serviceDate) == request.parameters["serviceDate"]
                    })
                else {
                    return .bytes(
                        200, contentType: "application/json", Array(#"{"code":404,"currentTime":\#(now()),"text":"not found","version":2}"#.utf8))
                }
                return .bytes(200, contentType: "application/json", FakeOBA.envelope(entry: FakeOBA.entry(trip), now: now()))
            })
        router.add(
            Route("GET", "/api/where/arrivals-and-departures-for-stop/:stop") { request in
                let stop = String(request.pathParameters["stop"]!.dropLast(5))
                let (mode, trips, hook) = state.withLock { value -> (Mode, [Trip], (@Sendable () -> Void)?) in
                    value.stopRequests += 1
                    value.keys.append(request.parameters["key"] ?? "")
                    return (value.mode, value.trips, value.whileAnsweringStop)
                }
                hook?()
                switch mode {
                case .serverError: return .json(503, ["error": "busy"])
                case .notFound: return .json(404, ["code": 404])
                case .normal: break
                }
                let after = Int64(request.parameters["minutesAfter"] ?? "35") ?? 35
                let visible = trips.filter { $0.stopID == stop && $0.departure <= now() + after * 60_000 && $0.departure >= now() - 300_000 }
                let list = visible.map { String(decoding: FakeOBA.entry($0), as: UTF8.self) }.joined(separator: ",")
                let entry = #"{"stopId":"\#(stop)","arrivalsAndDepartures":[\#(list)]}"#
                return .bytes(200, contentType: "application/json", FakeOBA.envelope(entry: Array(entry.utf8), now: now()))
            })
        router.add(
            Route("GET", "/api/where/agencies-with-coverage.json") { _ in
                let mode = state.withLock { value -> Mode in
                    value.fleetRequests += 1
                    return value.mode
                }
                if mode == .serverError { return .json(500, ["error": "boom"]) }
                return fixtures.response("ios/2_agencies_with_coverage.json")
            })
        router.add(
            Route("GET", "/api/where/vehicles-for-agency/:agency") { request in
                let agency = String(request.pathParameters["agency"]!.dropLast(5))
                let ids = state.withLock { value -> [String] in
                    value.fleetRequests += 1
                    return value.vehicles[agency] ?? []
                }
                let list = ids.map { #"{"vehicleId":"\#($0)","status":"SCHEDULED"}"# }.joined(separator: ",")
                return .bytes(
                    200, contentType: "application/json",
                    Array(#"{"code":200,"currentTime":1,"text":"OK","version":2,"data":{"list":[\#(list)],"references":{}}}"#.utf8))
            })
        router.add(
            Route("GET", "/api/where/trip-details/:trip") { request in
                let mode = state.withLock { value -> Mode in
                    value.tripDetailRequests += 1
                    return value.mode
                }
                switch mode {
                case .serverError: return .json(500, ["error": "boom"])
                case .notFound: return .json(404, ["code": 404])
                case .normal: return fixtures.response("ios/trip_details_1_18196913.json")
                }
            })
        // `route/ID.json`, `stop/ID.json`, `trip/ID.json`: known ids answer
        // an entry, others the envelope's 404 as OneBusAway does.
        for method in ["route", "stop", "trip"] {
            router.add(
                Route("GET", "/api/where/\(method)/:id") { request in
                    let id = String(request.pathParameters["id"]!.dropLast(5))
                    let (mode, known) = state.withLock { value -> (Mode, Bool) in
                        value.entityRequests += 1
                        return (value.mode, value.entities.contains("\(method)/\(id)"))
                    }
                    if mode == .serverError { return .json(500, ["error": "boom"]) }
                    guard known else {
                        return .bytes(
                            404, contentType: "application/json", Array(#"{"code":404,"currentTime":1,"text":"resource not found","version":2}"#.utf8)
                        )
                    }
                    return .bytes(
                        200, contentType: "application/json",
                        Array(#"{"code":200,"currentTime":1,"text":"OK","version":2,"data":{"entry":{"id":"\#(id)"},"references":{}}}"#.utf8))
                })
        }
        server = try startLocalServer(router)
    }

    var baseURL: String { "http://127.0.0.1:\(server.port)/" }

    static func entry(_ trip: Trip) -> [UInt8] {
        let predicted = trip.predicted ? trip.departure : 0
        let vehicle = trip.vehicleID.map { "\"\($0)\"" } ?? "null"
        return Array(
            """
            {"stopId":"\(trip.stopID)","tripId":"\(trip.tripID)","routeId":"1_100002","routeShortName":"\(trip.route)",
             "tripHeadsign":"\(trip.headsign)","serviceDate":\(trip.serviceDate),"stopSequence":\(trip.stopSequence),
             "vehicleId":\(vehicle),"predicted":\(trip.predicted),"predictedDepartureTime":\(predicted),
             "scheduledDepartureTime":\(trip.departure),"predictedArrivalTime":\(predicted),"scheduledArrivalTime":\(trip.departure),
             "lastUpdateTime":\(trip.departure - 60_000)}
            """.utf8)
    }

    static func envelope(entry: [UInt8], now: Int64) -> [UInt8] {
        Array(#"{"code":200,"currentTime":\#(now),"text":"OK","version":2,"data":{"entry":"#.utf8) + entry
            + Array(#","references":{"routes":[{"id":"1_100002","shortName":"10"}]}}}"#.utf8)
    }

    func set(_ trips: [Trip]) { state.withLock { $0.trips = trips } }
    func update(_ tripID: String, _ change: @Sendable (inout Trip) -> Void) {
        state.withLock { value in
            for index in value.trips.indices where value.trips[index].tripID == tripID { change(&value.trips[index]) }
        }
    }
    func setMode(_ mode: Mode) { state.withLock { $0.mode = mode } }
    var counts: (stop: Int, trip: Int) {
        let value = state.value
        return (value.stopRequests, value.tripRequests)
    }
}

/// A gorush gateway that records every request body.
final class FakeGorush: Sendable {
    let bodies = Locked<[[UInt8]]>([])
    /// Tokens to report as failed (token → gorush error text).
    let failures = Locked<[String: String]>([:])
    /// Requests still to answer with HTTP 500 (a gateway that is down); -1 = every one.
    let outage = Locked(0)
    let server: HTTPServer

    init() throws {
        var router = Router()
        let bodies = self.bodies
        let failures = self.failures
        let outage = self.outage
        router.add(
            Route("POST", "/api/push", parsesParameters: false) { request in
                let down = outage.withLock { remaining -> Bool in
                    guard remaining != 0 else { return false }
                    if remaining > 0 { remaining -= 1 }
                    return true
                }
                if down { return .json(500, ["error": "gorush is down"]) }
                let json = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
                bodies.withLock { $0.append(request.body) }
                let failing = failures.value
                let notifications = json["notifications"] as? [[String: Any]] ?? []
                var logs: [String] = []
                for notification in notifications {
                    for token in notification["tokens"] as? [String] ?? [] {
                        if let error = failing[token] {
                            logs.append(#"{"type":"failed-push","platform":"ios","token":"\#(token)","message":"x","error":"\#(error)"}"#)
                        }
                    }
                }
                return .bytes(
                    200, contentType: "application/json",
                    Array(#"{"counts":\#(notifications.count),"logs":[\#(logs.joined(separator: ","))],"success":"ok"}"#.utf8))
            })
        server = try startLocalServer(router)
    }

    var url: String { "http://127.0.0.1:\(server.port)" }

    /// Every notification received so far.
    var notifications: [[String: Any]] {
        bodies.value.flatMap { body in
            ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
        }
    }

    /// Every device token pushed to so far, once per push.
    var tokens: [String] { notifications.flatMap { $0["tokens"] as? [String] ?? [] } }
}

extension FakeOBA {
    /// A regions directory with region 1 served by this fake.
    func regionsFile(in directory: URL) throws -> String {
        let file = directory.appendingPathComponent("regions-\(UUID().uuidString).json")
        try Data(
            #"{"data":{"list":[{"id":1,"regionName":"Puget Sound","obaBaseUrl":"\#(baseURL)","sidecarBaseUrl":null},{"id":0,"regionName":"Tampa Bay","obaBaseUrl":"\#(baseURL)","sidecarBaseUrl":null}]}}"#
                .utf8
        ).write(to: file)
        return file.path
    }
}

/// A transport that asks for a stop as soon as its first batch is sent,
/// like a SIGTERM arriving mid-page.
struct StoppingTransport: PushTransport {
    let inner: any PushTransport
    let stop: StopSignal
    var name: String { inner.name }
    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        let outcomes = await inner.send(messages)
        stop.stop()
        return outcomes
    }
}
