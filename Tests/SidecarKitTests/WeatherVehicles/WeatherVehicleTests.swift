import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// A Pirate Weather stand-in serving the reference sidecar's fixture.
final class FakePirateWeather: Sendable {
    let requests = Locked<[String]>([])
    let status = Locked(200)
    let server: HTTPServer

    init() throws {
        // Read now: a missing fixture fails the test here, naming its path.
        let fixtures = try LoadedFixtures(["sidecar/pirate.json"])
        var router = Router()
        let requests = self.requests
        let status = self.status
        router.add(
            Route("GET", "/forecast/:key/:where", parsesParameters: false) { request in
                requests.withLock { $0.append(request.rawPath + "?" + request.rawQuery) }
                let code = status.value
                guard code == 200 else { return .json(code, ["error": "nope"]) }
                return fixtures.response("sidecar/pirate.json")
            })
        server = try startLocalServer(router)
    }

    var url: String { "http://127.0.0.1:\(server.port)" }
}

@Suite("WeatherVehicles: weather (spec §9) and vehicle search (spec §10)")
struct WeatherVehicleTests {
    static func keys(_ object: Any?) -> Set<String> { Set((object as? [String: Any])?.keys.map { $0 } ?? []) }

    @Test func weatherHasEveryKeyTheIOSDecoderRequiresAndIsCached() async throws {
        let pirate = try FakePirateWeather()
        try await TestSidecar.run({
            $0.pirateWeatherKey = "PW-KEY"
            $0.pirateWeatherURL = pirate.url
        }) { (app: TestSidecar) async throws in
            let response = try await app.send("GET", "/api/v1/regions/1/weather")
            #expect(response.status == 200)
            let body = try #require(response.json)
            let expected = try #require(
                try JSONSerialization.jsonObject(with: Data(SharedFixtures.bytes("ios/pugetsound-weather.json"))) as? [String: Any])
            #expect(Set(body.keys) == Set(expected.keys))
            #expect(Self.keys(body["current_forecast"]) == Self.keys(expected["current_forecast"]))
            let hourly = try #require(body["hourly_forecast"] as? [[String: Any]])
            #expect(hourly.count == 2)
            #expect(hourly.allSatisfy { Set($0.keys) == Self.keys((expected["hourly_forecast"] as? [Any])?.first) })
            #expect((body["retrieved_at"] as? String)?.hasSuffix("Z") == true)
            #expect(body["region_identifier"] as? Int == 1)
            #expect(body["region_name"] as? String == "Puget Sound")
            #expect(body["units"] as? String == "us")
            #expect(body["today_summary"] as? String == "Rain until evening.", "the day's summary, not the week's")
            let current = try #require(body["current_forecast"] as? [String: Any])
            #expect(current["time"] as? Int == 1_767_980_400)
            #expect(current["temperature_feels_like"] as? Double == 45.11)
            #expect(hourly[1]["icon"] as? String == "some-icon-we-have-never-seen")
            #expect(pirate.requests.value.first?.contains("/forecast/PW-KEY/47.") == true)
            #expect(pirate.requests.value.first?.contains("units=us") == true)

            _ = try await app.send("GET", "/api/v1/regions/1/weather.json")
            #expect(pirate.requests.value.count == 1, "cached for 30 minutes")
            app.clock.advance(seconds: 30 * 60)
            pirate.status.withLock { $0 = 500 }
            let failed = try await app.send("GET", "/api/v1/regions/1/weather")
            #expect(failed.status == 403)
            #expect(pirate.requests.value.count == 2)
            #expect(try await app.send("GET", "/api/v1/regions/99/weather").status == 404)
            #expect(!app.log.lines.contains { $0.contains("PW-KEY") }, "the key never reaches the log")
        }
        await pirate.server.shutdown()
    }

    @Test func weatherWithoutAKeyIs403() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            #expect(try await app.send("GET", "/api/v1/regions/1/weather").status == 403)
        }
    }

    @Test(
        "query rule",
        arguments: [
            (nil, nil), ("ab", nil), ("  ab  ", nil), ("abc", "abc"), (" 1_11 ", "1_11"), ("ABC", "abc"),
            (String(repeating: "x", count: 64), String(repeating: "x", count: 64)),
            (String(repeating: "x", count: 65), nil),
        ] as [(String?, String?)])
    func query(raw: String?, expected: String?) {
        #expect(VehicleSearchRules.normalizedQuery(raw) == expected)
    }

    @Test func matchingLowercasesTheQueryNotTheIds() {
        let fleet = [VehicleMatch(id: "1", name: "Metro", vehicle_id: "1_1156"), VehicleMatch(id: "9", name: "Bus Co", vehicle_id: "BUS_ABC1")]
        #expect(VehicleSearchRules.search("1_11", in: fleet).map(\.vehicle_id) == ["1_1156"])
        #expect(VehicleSearchRules.search("abc", in: fleet).isEmpty, "an upper-case id never matches: the reference's quirk, kept")
        let big = (0..<400).map { VehicleMatch(id: "1", name: "Metro", vehicle_id: "1_\($0)") }
        #expect(VehicleSearchRules.search("1_", in: big).count == 250)
    }

    @Test func vehicleSearchProxiesTheFleetAndCachesIt() async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        oba.state.withLock { $0.vehicles = ["1": ["1_1156", "1_1113", "1_2000"], "98": ["98_1101"]] }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vehicles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(clock: clock, { $0.regions = regions }) { (app: TestSidecar) async throws in
            let short = try await app.send("GET", "/api/v1/regions/1/vehicles?query=1_")
            #expect(short.text == "[]")
            #expect(oba.state.value.fleetRequests == 0, "no upstream call for a short query")
            let response = try await app.send("GET", "/api/v1/regions/1/vehicles?query=%201_11%20")
            #expect(response.status == 200)
            let matches = try JSONDecoder().decode([VehicleMatch].self, from: Data(response.body))
            #expect(Set(matches.map(\.vehicle_id)) == ["1_1156", "1_1113"])
            #expect(matches.allSatisfy { $0.id == "1" && $0.name == "Metro Transit" })
            let requests = oba.state.value.fleetRequests
            _ = try await app.send("GET", "/api/v1/regions/1/vehicles.json?query=2000")
            #expect(oba.state.value.fleetRequests == requests, "the fleet is cached")
            oba.setMode(.serverError)
            app.clock.advance(seconds: 31 * 60)
            let failed = try await app.send("GET", "/api/v1/regions/1/vehicles?query=1156")
            #expect(failed.status == 502)
            #expect(failed.json?["error"] != nil)
        }
        await oba.server.shutdown()
    }
}
