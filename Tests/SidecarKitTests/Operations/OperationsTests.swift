import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 14: running the sidecar behind proxies, with metrics and logs an
/// operator's tools can read.
@Suite("Operations: proxies, logs and metrics")
struct OperationsTests {
    static let registrations = "/api/v2/regions/1/push_registrations"

    @Test func throttlesCountTheClientBehindATrustedProxyAndIgnoreEveryoneElsesHeaders() async throws {
        try await TestSidecar.run({ configuration in
            configuration.trustedProxies = try? TrustedProxies("127.0.0.1")
            configuration.pushRegistrationLimit = 3
        }) { (app: TestSidecar) async throws in
            func register(_ token: String, forwardedFor: String, source: String) async throws -> Int {
                let body = RawHTTPClient.form([("token", token), ("operating_system", "ios")])
                let response = try await app.send(
                    "POST", Self.registrations,
                    headers: [
                        "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": forwardedFor,
                    ], body: body, source: source)
                return response.status
            }
            // Two riders behind the proxy each get their own budget.
            var statuses: [Int] = []
            for index in 0..<4 { statuses.append(try await register("rider-a\(index)", forwardedFor: "203.0.113.7", source: "127.0.0.1")) }
            for index in 0..<3 { statuses.append(try await register("rider-b\(index)", forwardedFor: "203.0.113.8", source: "127.0.0.1")) }
            #expect(statuses == [204, 204, 204, 429, 204, 204, 204])
            // A client reaching the server directly cannot escape its budget
            // by inventing X-Forwarded-For values.
            var direct: [Int] = []
            for index in 0..<5 { direct.append(try await register("rider-c\(index)", forwardedFor: "198.51.100.\(index)", source: "127.0.0.2")) }
            #expect(direct == [204, 204, 204, 429, 429])
            #expect(app.log.lines.contains { $0.contains("status=429") && $0.contains("client=203.0.113.7") })
            #expect(app.log.lines.contains { $0.contains("status=429") && $0.contains("client=127.0.0.2") })
        }
    }

    @Test func trustedProxyFlags() throws {
        guard
            case .serve(let configuration) = try CommandLineInterface.parse(
                ["serve", "--trusted-proxies", "10.0.0.0/8,::1", "--client-ip-header", "CF-Connecting-IP"], environment: [:])
        else {
            Issue.record("not serve")
            return
        }
        #expect(configuration.trustedProxies?.contains("10.9.8.7") == true)
        #expect(configuration.serverConfiguration.trustedProxies?.clientIPHeader == "cf-connecting-ip")
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--trusted-proxies", "10.0.0.0/99"], environment: [:]) }
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--client-ip-header", "X-Real-IP"], environment: [:]) }
        #expect(throws: CommandLineError.self) {
            try CommandLineInterface.parse(["serve", "--trusted-proxies", "::1", "--client-ip-header", "Bad Header"], environment: [:])
        }
    }

    static let hostileValues: [(name: String, value: String)] = [
        ("plain", "abc"), ("spaces", "a b"), ("quotes", "say \"hi\""), ("a newline forging a line", "x\n2026-01-01 ERROR forged"),
        ("carriage return", "x\ry"), ("tab", "a\tb"), ("control bytes", "\u{01}\u{1F}\u{7F}"), ("backslash", #"C:\path"#),
        ("unicode", "Zürich ✓ 東京"), ("equals", "a=b"), ("empty", ""),
    ]

    @Test(arguments: hostileValues)
    func aLogLineIsOneLineInEitherFormat(_ example: (name: String, value: String)) throws {
        let sink = MemorySink()
        Logger(level: .info, format: .json, sink: sink).info("event", [("value", example.value), ("level", "shadow"), ("value", "again")])
        Logger(level: .info, format: .text, sink: sink).info("event", [("value", example.value)])
        let (json, text) = (sink.lines[0], sink.lines[1])
        #expect(!json.contains("\n") && !json.contains("\r") && !text.contains("\n") && !text.contains("\r"), "\(example.name)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String])
        #expect(object["value"] == example.value, "\(example.name)")
        #expect(object["level"] == "info" && object["field_level"] == "shadow" && object["value_"] == "again" && object["message"] == "event")
        #expect(object["time"]?.hasSuffix("Z") == true)
        #expect(Array(object.keys).sorted() == ["field_level", "level", "message", "time", "value", "value_"])
    }

    @Test func jsonLogsCarryNoSecretsAtDebug() async throws {
        try await TestSidecar.run({ configuration in
            configuration.logFormat = .json
            configuration.gorushWebhookSecret = "WEBHOOK-SECRET-1"
        }) { (app: TestSidecar) async throws in
            let token = "a1b2c3SECRETTOKEN"
            _ = try await app.post(Self.registrations + "?app_uid=RIDER-UID-123&key=org.example", [("token", token), ("operating_system", "ios")])
            _ = try await app.send("DELETE", Self.registrations + "?token=\(token)&app_uid=RIDER-UID-123")
            _ = try await app.send("GET", "/admin/api/regions", headers: ["Authorization": "Bearer ADMIN-KEY-GUESS"])
            _ = try await app.send(
                "POST", "/webhooks/gorush", headers: ["Authorization": "Bearer WEBHOOK-SECRET-1", "Content-Type": "application/json"],
                body: Array(#"{"logs":[{"type":"failed-push","token":"a1b2c3SECRETTOKEN","error":"Unregistered"}]}"#.utf8))
            let lines = app.log.lines
            #expect(lines.count > 5)
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["message"] is String && object?["level"] is String, "\(line)")
                for secret in [token, "RIDER-UID", "org.example", "ADMIN-KEY-GUESS", "WEBHOOK-SECRET-1"] {
                    #expect(!line.contains(secret), "\(line)")
                }
            }
            #expect(lines.contains { $0.contains(#""route":"/api/v2/regions/:region/push_registrations""#) && $0.contains(#""client":"127.0.0.1""#) })
        }
    }

    /// The exposition as `series -> value` (series written as exposed).
    static func scrape(_ app: TestSidecar) async throws -> (text: String, values: [String: Double]) {
        let port = try #require(app.sidecar.metricsServer?.port)
        let response = try await RawHTTPClient.send(port: port, RawHTTPClient.request("GET", "/metrics"))
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        var values: [String: Double] = [:]
        for line in response.text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            values[String(line[..<space])] = Double(line[line.index(after: space)...])
        }
        return (response.text, values)
    }

    @Test func metricsCountAKnownSequence() async throws {
        try await AlarmRouteTests.run(configure: { $0.metricsListen = .init(host: "127.0.0.1", port: 0) }) { app, oba, gorush in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 900, clock: app.clock), AlarmRouteTests.trip("t2", departsIn: 900, clock: app.clock)])
            #expect(try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "ios-device")).status == 201)
            #expect(
                try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t2", push: "android-device", os: "android")).status == 201
            )
            #expect(try await app.post(Self.registrations, [("token", "r1-00000"), ("operating_system", "ios")]).status == 204)
            #expect(try await app.post(Self.registrations, [("token", "r2-00000"), ("operating_system", "android")]).status == 204)
            #expect(try await app.post(Self.registrations, [("token", "r3-00000")]).status == 422)
            #expect(try await app.send("GET", "/no/such/page").status == 404)
            #expect(try await app.send("BREW", "/healthz").status == 405)
            let checker = app.sidecar.alarmChecker
            _ = await checker.runCycle()
            app.clock.advance(seconds: 600)
            // t2's bus left early: its alarm expires instead of firing.
            oba.update("t2") { $0.departure = app.clock.now().epochMillis - 120_000 }
            let report = await checker.runCycle()
            #expect(report.fired == 1 && report.expired == 1)
            #expect(gorush.notifications.count == 1)

            let (text, values) = try await Self.scrape(app)
            let route = "/api/v2/regions/:region/push_registrations"
            #expect(values["sidecar_http_requests_total{route=\"\(route)\",method=\"POST\",status=\"204\"}"] == 2)
            #expect(values["sidecar_http_requests_total{route=\"\(route)\",method=\"POST\",status=\"422\"}"] == 1)
            #expect(values["sidecar_http_requests_total{route=\"/api/v2/regions/:region/alarms\",method=\"POST\",status=\"201\"}"] == 2)
            #expect(values["sidecar_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"}"] == 1)
            #expect(
                values["sidecar_http_requests_total{route=\"unmatched\",method=\"other\",status=\"405\"}"] == 1,
                "a made-up method makes no new series")
            #expect(values["sidecar_http_request_duration_seconds_count{route=\"\(route)\",method=\"POST\"}"] == 3)
            #expect(values["sidecar_http_request_duration_seconds_bucket{route=\"\(route)\",method=\"POST\",le=\"+Inf\"}"] == 3)
            #expect(values["sidecar_alarms_fired_total"] == 1)
            #expect(values["sidecar_alarms_expired_total"] == 1)
            #expect(values["sidecar_alarms_reaped_total"] == 0)
            #expect(values["sidecar_alarm_cycle_duration_seconds_count"] == 2)
            #expect(values["sidecar_alarm_cycle_upstream_requests_sum"] == 2, "one stop request per cycle")
            #expect(values["sidecar_pushes_total{transport=\"gorush\",platform=\"ios\",outcome=\"delivered\"}"] == 1)
            #expect((values["sidecar_upstream_requests_total{upstream=\"oba\",status=\"200\"}"] ?? 0) >= 4)
            #expect(values["sidecar_upstream_requests_total{upstream=\"gorush\",status=\"200\"}"] == 1)
            #expect(values["sidecar_push_registrations{region=\"1\",platform=\"ios\"}"] == 2, "r1 and the alarm's ios-device")
            #expect(values["sidecar_push_registrations{region=\"1\",platform=\"android\"}"] == 2)
            #expect(values["sidecar_alert_sends_in_progress"] == 0)
            #expect(values["sidecar_build_info{version=\"\(CommandLineInterface.version)\"}"] == 1)
            #expect((values["sidecar_process_resident_memory_bytes"] ?? 0) > 1_000_000)
            #expect((values["sidecar_process_open_fds"] ?? 0) > 3)
            #expect(values["sidecar_process_cpu_seconds_total"] != nil && values["sidecar_process_start_time_seconds"] != nil)
            // Every family announces its help and type, and every name is ours.
            for line in text.split(separator: "\n") {
                #expect(line.hasPrefix("sidecar_") || line.hasPrefix("# HELP sidecar_") || line.hasPrefix("# TYPE sidecar_"), "\(line)")
            }
            // The metrics listener is not the rider API, and the rider API has no metrics.
            #expect(try await app.send("GET", "/metrics").status == 404)
        }
    }

    @Test func metricsListenFlag() throws {
        #expect(SidecarConfiguration.ListenAddress("127.0.0.1:9464") == .init(host: "127.0.0.1", port: 9464))
        #expect(SidecarConfiguration.ListenAddress("[::1]:9464") == .init(host: "::1", port: 9464))
        for bad in ["9464", ":9464", "::1:9464", "host:99999", "host:", "a b:1"] {
            #expect(SidecarConfiguration.ListenAddress(bad) == nil, "\(bad)")
        }
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--metrics-listen", "9464"], environment: [:]) }
    }

    @Test func debugLogsSayWhatTheLoopsAndThrottlesDecidedButNoToken() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "secret-device-token"))
            _ = await app.sidecar.alarmChecker.runCycle()
            for _ in 0..<31 {
                _ = try await app.post("/api/v2/regions/1/push_registrations", [("token", "secret-device-token"), ("operating_system", "ios")])
            }
            let lines = app.log.lines
            #expect(lines.contains { $0.contains("DEBUG alarm stop checked") && $0.contains("stop=1_11420") && $0.contains("wait=1") })
            #expect(
                lines.contains {
                    $0.contains("DEBUG upstream request") && $0.contains("method=arrivals-and-departures-for-stop")
                        && $0.contains("duration_ms=")
                })
            #expect(lines.contains { $0.contains("DEBUG throttled limiter=push_registrations key=127.0.0.1") })
            #expect(!lines.contains { $0.contains("secret-device-token") || $0.contains("TEST-KEY") }, "never a token or a key")
        }
    }
}
