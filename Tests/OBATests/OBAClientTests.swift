import Core
import Foundation
import HTTPClient
import HTTPServer
import TestSupport
import Testing

@testable import OBA

@Suite("OneBusAway REST API decoding on the apps' fixtures")
struct OBADecodingTests {
    @Test func arrivalAndDepartureForStop() throws {
        let response = try OBAClient.decode(
            status: 200, body: try SharedFixtures.bytes("ios/arrival-and-departure-for-stop-1_11420.json"),
            as: ArrivalAndDeparture.self)
        #expect(response.currentTime == 1_538_843_618_369)
        let entry = response.entry
        #expect(entry.stopId == "1_11420")
        #expect(entry.tripId == "1_40989208")
        #expect(entry.routeShortName == "10")
        #expect(entry.tripHeadsign == "Downtown Seattle")
        #expect(entry.serviceDate == 1_538_809_200_000)
        #expect(entry.stopSequence == 4)
        #expect(entry.vehicleId == "1_7012")
        #expect(entry.predicted == true)
        #expect(entry.predictedDepartureTime == 1_538_844_086_000)
        #expect(entry.effectiveDepartureTime == 1_538_844_086_000)
        #expect(entry.tripStatus?.scheduleDeviation == 989)
        #expect(response.references?.route(id: "1_100002") != nil)
    }

    @Test(
        "arrivals-and-departures-for-stop fixtures decode",
        arguments: [
            "ios/arrivals-and-departures-for-stop-1_10914.json", "ios/arrivals-and-departures-for-stop-1_10914-duplicates.json",
            "ios/arrivals-and-departures-for-stop-1_75414.json", "ios/arrivals-and-departures-for-stop-1739-rvtd.json",
            "ios/arrivals_and_departures_for_stop_hart_6497.json", "ios/arrivals-and-departures_1_29270.json",
            "android/arrivals_and_departures_for_stop_97_256_duplicate_vehicles.json", "ios/arrivals_and_departures_for_stop_15th-galer.json",
        ])
    func stopArrivals(path: String) throws {
        let response = try OBAClient.decode(status: 200, body: try SharedFixtures.bytes(path), as: StopArrivals.self)
        #expect(!response.entry.arrivalsAndDepartures.isEmpty)
        #expect(response.currentTime.value > 0)
        #expect(response.entry.arrivalsAndDepartures.allSatisfy { $0.tripId != nil && $0.scheduledDepartureTime != nil })
    }

    @Test func emptyArrivalsAreAnEntryNotAFailure() throws {
        let response = try OBAClient.decode(
            status: 200, body: try SharedFixtures.bytes("ios/arrivals_and_departures_empty.json"), as: StopArrivals.self)
        #expect(response.entry.arrivalsAndDepartures.isEmpty)
    }

    @Test func tripDetailsStayRawJSON() throws {
        let response = try OBAClient.decode(status: 200, body: try SharedFixtures.bytes("ios/trip_details_1_18196913.json"), as: JSONValue.self)
        guard case .object(let entry) = response.entry else {
            Issue.record("not an object")
            return
        }
        #expect(entry["tripId"] == .string("1_18196913"))
    }

    @Test(
        "not found versus transient",
        arguments: [
            (404, #"{"code":404,"text":"resource not found"}"#, OBAError.notFound),
            (200, #"{"code":404,"currentTime":1,"text":"resource not found","version":2}"#, .notFound),
            (200, #"{"code":200,"currentTime":1,"data":{"entry":null,"references":{}}}"#, .notFound),
            (200, #"{"code":200,"currentTime":1,"data":{"references":{}}}"#, .notFound),
            (200, #"{"code":200,"currentTime":1}"#, .notFound),
            (500, "Internal Server Error", .transient("HTTP 500")),
            (503, "", .transient("HTTP 503")),
            (429, "", .transient("HTTP 429")),
            (401, #"{"code":401,"text":"permission denied"}"#, .transient("HTTP 401")),
            (200, #"{"code":401,"text":"permission denied"}"#, .transient("OBA code 401: permission denied")),
        ])
    func classifies(status: Int, body: String, expected: OBAError) {
        #expect(throws: expected) { try OBAClient.decode(status: status, body: Array(body.utf8), as: ArrivalAndDeparture.self) }
    }

    @Test func malformedBodiesAreTransient() {
        for body in ["<html>gateway</html>", "", #"{"code":200,"currentTime":1,"data":{"entry":{"stopSequence":"four"}}}"#] {
            do {
                _ = try OBAClient.decode(status: 200, body: Array(body.utf8), as: ArrivalAndDeparture.self)
                Issue.record("decoded \(body)")
            } catch {
                guard case .transient = error else {
                    Issue.record("\(error) for \(body)")
                    continue
                }
            }
        }
    }

    @Test func urls() {
        #expect(
            OBAClient.url(
                baseURL: "https://api.tampa.onebusaway.org/api/", method: "arrival-and-departure-for-stop",
                id: "Hillsborough Area Regional Transit_4041",
                apiKey: "KEY", query: [("tripId", "1_2"), ("serviceDate", "5")])
                == "https://api.tampa.onebusaway.org/api/api/where/arrival-and-departure-for-stop/Hillsborough%20Area%20Regional%20Transit_4041.json?key=KEY&tripId=1_2&serviceDate=5"
        )
        #expect(
            OBAClient.url(baseURL: "http://oba", method: "trip-details", id: "1/2", apiKey: nil, query: [])
                == "http://oba/api/where/trip-details/1%2F2.json")
    }
}

@Suite("OneBusAway client over HTTP")
struct OBAClientLiveTests {
    @Test func sendsTheKeyAndParametersAndClassifiesTransportFailures() async throws {
        let fixtures = try LoadedFixtures(["ios/arrival-and-departure-for-stop-1_11420.json"])
        var router = Router()
        router.add(
            Route("GET", "/api/where/arrival-and-departure-for-stop/:stop") { request in
                guard request.parameters["key"] == "K", request.parameters["tripId"] == "1_40989208",
                    request.parameters["serviceDate"] == "1538809200000", request.parameters["stopSequence"] == "4",
                    request.pathParameters["stop"] == "1_11420.json"
                else { return .json(400, ["error": "bad"]) }
                return fixtures.response("ios/arrival-and-departure-for-stop-1_11420.json")
            })
        let server = try startLocalServer(router)
        let port = server.port
        // Only a hang times out: the suites share two cores; a refused
        // connection fails at once anyway.
        let client = OBAClient(http: HTTPClient.patient())
        let response = try await client.arrivalAndDeparture(
            baseURL: "http://127.0.0.1:\(port)/", apiKey: "K", stopID: "1_11420",
            tripID: "1_40989208", serviceDate: 1_538_809_200_000, vehicleID: nil, stopSequence: 4)
        #expect(response.entry.routeShortName == "10")
        await #expect(throws: OBAError.notFound) {
            try await client.arrivalsAndDepartures(baseURL: "http://127.0.0.1:\(port)", apiKey: "K", stopID: "x", minutesBefore: 5, minutesAfter: 35)
        }
        await server.shutdown()
        do {
            _ = try await client.arrivalAndDeparture(
                baseURL: "http://127.0.0.1:\(port)/", apiKey: "K", stopID: "1_11420",
                tripID: "t", serviceDate: 1, vehicleID: nil, stopSequence: nil)
            Issue.record("a refused connection answered")
        } catch {
            guard case .transient = error else {
                Issue.record("refused connection was \(error)")
                return
            }
        }
    }
}
