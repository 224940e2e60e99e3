import Foundation
import HTTPServer
import Testing
import TestSupport
@testable import SidecarKit

/// Every bad input gets a clear 4xx in the route's error shape and leaves the
/// server answering (the foundation issue's list).
@Suite("Bad inputs against push_registrations")
struct BadInputTests {
    static let path = "/api/v2/regions/1/push_registrations"

    static func expectMessagesShape(_ response: RawResponse, status: Int, mentioning fragment: String) {
        #expect(response.status == status, "\(response.text)")
        #expect(response.json?["error"] as? String != nil, "\(response.text)")
        let messages = response.json?["messages"] as? [String] ?? []
        #expect(messages.contains { $0.contains(fragment) }, "\(messages)")
    }

    @Test func eachBadInputIsAClear4xxAndTheServerStaysUp() async throws {
        try await TestSidecar.run({ $0.pushRegistrationLimit = 0 }) { (app: TestSidecar) async throws in
            let json = ["Content-Type": "application/json"]
            let form = ["Content-Type": "application/x-www-form-urlencoded"]

            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: json, body: Array(#"{"token": "abc", "#.utf8)),
                                     status: 422, mentioning: "not valid JSON")
            // Valid JSON that is not an object carries no parameters (Rails' _json).
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: json, body: Array(#"["token"]"#.utf8)),
                                     status: 422, mentioning: "Token can't be blank")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: json, body: Array(#"{"token": false, "operating_system": "ios"}"#.utf8)),
                                     status: 422, mentioning: "Token can't be blank")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: ["Content-Type": "text/plain"],
                                                        body: Array(#"{"token":"abc","operating_system":"ios"}"#.utf8)),
                                     status: 422, mentioning: "Unsupported Content-Type")
            // JSON sent as a form is read as a form: nothing it meant arrives.
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: form, body: Array(#"{"token":"abc","operating_system":"ios"}"#.utf8)),
                                     status: 422, mentioning: "can't be blank")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: form, body: Array("token=%zz&operating_system=ios".utf8)),
                                     status: 422, mentioning: "percent-encoding")
            Self.expectMessagesShape(try await app.send("POST", Self.path + "?token=%E0%A4%A&operating_system=ios"),
                                     status: 422, mentioning: "percent-encoding")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: form, body: Array("token=%FF%FE&operating_system=ios".utf8)),
                                     status: 422, mentioning: "UTF-8")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: form, body: Array("token=".utf8) + [0xC3, 0x28] + Array("&operating_system=ios".utf8)),
                                     status: 422, mentioning: "UTF-8")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: json, body: Array(#"{"token":""#.utf8) + [0xFF] + Array(#"","operating_system":"ios"}"#.utf8)),
                                     status: 422, mentioning: "JSON")
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: form, body: [UInt8](repeating: 0x61, count: (1 << 20) + 1)),
                                     status: 413, mentioning: "exceeds")
            let tenThousand = (0..<10_000).map { "p\($0)=1" }.joined(separator: "&") + "&token=t&operating_system=ios"
            Self.expectMessagesShape(try await app.send("POST", Self.path, headers: form, body: Array(tenThousand.utf8)),
                                     status: 422, mentioning: "more than 1000 parameters")
            let queryFlood = try await app.send("POST", Self.path + "?" + (0..<10_000).map { "q\($0)=1" }.joined(separator: "&"))
            #expect((400..<500).contains(queryFlood.status))
            Self.expectMessagesShape(try await app.post(Self.path, [("token", String(repeating: "a", count: 5000)), ("operating_system", "ios")]),
                                     status: 422, mentioning: "Token is too long")
            for region in ["abc", "-3", "99999999999999999999"] {
                let response = try await app.post("/api/v2/regions/\(region)/push_registrations", [("token", "t"), ("operating_system", "ios")])
                #expect(response.status == 404)
                #expect(response.text == #"{"error":"Couldn't find Region"}"#)
            }
            // A client that hangs up mid-body.
            var partial = Array("POST \(Self.path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\n".utf8)
            partial += Array("token=abc&operating_system=i".utf8)
            try await RawHTTPClient.send(port: app.port, partial, closeAfterSend: true)

            #expect(try await app.send("GET", "/healthz").status == 200)
            #expect(try await app.post(Self.path, [("token", "after"), ("operating_system", "ios")]).status == 204)
            #expect(try await app.pushStore.count() == 1, "no bad input stored anything")
        }
    }
}

@Suite("Health and start-up")
struct HealthAndStartupTests {
    @Test func healthzAnswersWhenTheDatabaseDoes() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let response = try await app.send("GET", "/healthz")
            #expect(response.status == 200)
            #expect(response.json?["status"] as? String == "ok")
        }
    }

    @Test func aMalformedRegionsFileIsAStartupErrorWithExitCode2() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-regions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("regions.json")
        try Data("{\"data\": ".utf8).write(to: file)
        var configuration = SidecarConfiguration()
        configuration.regions = file.path
        configuration.database = directory.appendingPathComponent("db.sqlite3").path
        do {
            _ = try await Sidecar.prepare(configuration: configuration, logger: Logger(level: .error, sink: MemorySink()))
            Issue.record("started with a malformed regions file")
        } catch {
            #expect(error.exitCode == 2)
            #expect(error.description.contains(file.path))
        }
        configuration.regions = directory.appendingPathComponent("missing.json").path
        do {
            _ = try await Sidecar.prepare(configuration: configuration, logger: Logger(level: .error, sink: MemorySink()))
            Issue.record("started with a missing regions file")
        } catch {
            #expect(error.exitCode == 2)
        }
    }

    @Test func withoutRegionsTheBundledSampleServesRegions0And1() async throws {
        try await TestSidecar.run({ $0.regions = nil }) { (app: TestSidecar) async throws in
            #expect(app.sidecar.regions.all.map(\.id) == [0, 1])
            #expect(try await app.post("/api/v2/regions/1/push_registrations", [("token", "t"), ("operating_system", "ios")]).status == 204)
        }
    }
}

@Suite("Bad inputs against the rider services")
struct RiderServiceBadInputTests {
    @Test func malformedAndOversizedBodiesAreClear4xxInEachRoutesShape() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let json = ["Content-Type": "application/json"]
            let survey = try await app.send("POST", "/api/v1/survey_responses", headers: json, body: Array(#"{"survey_id": "#.utf8))
            #expect(survey.status == 422)
            #expect(survey.json?["errors"] != nil, "the survey routes' shape")
            let ghost = try await app.send("POST", "/api/v2/regions/1/ghost_bus_reports", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                           body: [UInt8](repeating: 0x61, count: (1 << 20) + 10))
            #expect(ghost.status == 413)
            let badForm = try await app.send("POST", "/api/v2/regions/1/ghost_bus_reports", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                             body: Array("user_identifier=%GG".utf8))
            #expect(badForm.status == 422)
            #expect(badForm.json?["messages"] != nil)
            #expect(try await app.send("GET", "/api/v1/regions/abc/surveys?user_id=x").status == 404)
            #expect(try await app.send("GET", "/api/v1/regions/-3/weather").status == 404)
            #expect(try await app.send("GET", "/api/v1/regions/99999999999999999999/vehicles?query=abc").status == 404)
            #expect(try await app.send("GET", "/healthz").status == 200)
        }
    }
}
