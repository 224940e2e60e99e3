import Core
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

@Suite("GhostBus: reports (spec §8)")
struct GhostBusTests {
    static let valid: [String: String] = [
        "user_identifier": "b94e83ae", "trip_identifier": "1_604370", "service_date": "1754809200000",
        "wait_duration_minutes": "10",
    ]

    func parse(_ changes: [String: String]) -> Result<GhostBusReport, ValidationFailure> {
        GhostBusRules.parse(Parameters(Self.valid.merging(changes) { $1 }.mapValues { .string($0) }))
    }

    @Test(
        "validation",
        arguments: [
            (["user_identifier": ""], "User identifier can't be blank"),
            (["trip_identifier": " "], "Trip identifier can't be blank"),
            (["service_date": "2025-08-10"], "Service date can't be blank"),
            (["service_date": "1754809200000.5"], "Service date can't be blank"),
            (["wait_duration_minutes": "7"], "Wait duration minutes is not included in the list"),
            (["wait_duration_minutes": "10.0"], "Wait duration minutes is not included in the list"),
            (["wait_duration_minutes": ""], "Wait duration minutes is not included in the list"),
            (["comment": String(repeating: "c", count: 1001)], "Comment is too long (maximum is 1000 characters)"),
            (["user_latitude": "90.5"], "User latitude must be between -90 and 90"),
            (["user_longitude": "-180.01"], "User longitude must be between -180 and 180"),
            (["user_latitude": "north"], "User latitude is not a number"),
        ])
    func rejects(changes: [String: String], message: String) {
        #expect(throws: ValidationFailure([message])) { try parse(changes).get() }
    }

    @Test func acceptsWhatTheAppsSend() throws {
        for wait in ["5", "10", "15", "20", "30"] { #expect(throws: Never.self) { try parse(["wait_duration_minutes": wait]).get() } }
        let android = try parse([
            "predicted": "1", "stop_latitude": "0.0", "user_latitude": "47.6", "user_longitude": "-122.3",
            "comment": String(repeating: "c", count: 1000), "scheduled_arrival_at": "1754809800000",
            "predicted_arrival_at": "2025-08-10T07:00:00Z", "stop_sequence": "3",
        ]).get()
        #expect(android.predicted == true)
        #expect(android.scheduledArrivalAt == 1_754_809_800_000)
        #expect(android.predictedArrivalAt == nil, "an ISO date is not fuzzily parsed")
        #expect(android.stopSequence == 3)
        #expect(try parse(["predicted": "0"]).get().predicted == false)
    }

    @Test func csvCellsAreSafeInSpreadsheets() {
        #expect(CSV.cell("=HYPERLINK(\"http://x\")") == "\"'=HYPERLINK(\"\"http://x\"\")\"")
        #expect(CSV.cell("+1") == "\"'+1\"")
        #expect(CSV.cell("-2") == "\"'-2\"")
        #expect(CSV.cell("@SUM(A1)") == "\"'@SUM(A1)\"")
        #expect(CSV.cell("plain, text") == "\"plain, text\"")
        #expect(CSV.cell(nil) == "")
    }

    static func run(
        _ configure: @escaping (inout SidecarConfiguration) -> Void = { _ in },
        _ body: (TestSidecar, FakeOBA) async throws -> Void
    ) async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ghost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(
            clock: clock,
            {
                $0.regions = regions
                configure(&$0)
            }
        ) { app in try await body(app, oba) }
        await oba.server.shutdown()
    }

    static let path = "/api/v2/regions/1/ghost_bus_reports"

    @Test func createsDedupesAndEnriches() async throws {
        try await Self.run { app, oba in
            let fields = Self.valid.map { ($0.key, $0.value) } + [("predicted", "1"), ("comment", "=cmd|' /C calc'!A0")]
            let created = try await app.post(Self.path, fields)
            #expect(created.status == 201)
            let id = try #require(created.json?["id"] as? String)
            #expect(id.count == 20 && id.allSatisfy(\.isHexDigit))
            let duplicate = try await app.post(Self.path, fields)
            #expect(duplicate.status == 422)
            #expect(duplicate.json?["error"] as? String == "already_reported")
            #expect(duplicate.json?["messages"] as? [String] == ["User identifier has already been taken"])
            // The same user, another service date: a new report.
            #expect(try await app.post(Self.path, fields.map { $0.0 == "service_date" ? ($0.0, "1754895600000") : $0 }).status == 201)

            let store = GhostBusStore(database: app.sidecar.database)
            #expect(try await app.eventually { try await store.report(publicID: id)?.tripSnapshot != nil })
            let stored = try #require(try await store.report(publicID: id))
            #expect(stored.tripSnapshot?.contains("1_18196913") == true)
            #expect(stored.report.predicted == true)
            #expect(oba.state.value.tripDetailRequests >= 1)

            // The race path: the unique index catches it, and it is still already_reported.
            let report = try GhostBusRules.parse(Parameters(Self.valid.mapValues { .string($0) })).get()
            #expect(try await store.insert(report, regionID: 1, now: 0, checkFirst: false) == .duplicateRace)

            let zone = try #require(ZoneInfo.named("America/Los_Angeles"))
            let csv = try await store.exportCSV(regionID: 1, zone: zone)
            #expect(csv.hasPrefix("\"public_id\",\"created_at\""))
            #expect(csv.contains("\"'=cmd|' /C calc'!A0\""))
            // Times in the region's zone with their offset; a service date is the instant of its local midnight.
            #expect(csv.contains(",2025-08-10T00:00:00-07:00,"), "\(csv)")
            #expect(!csv.contains(",\"1754895600000\","), "no raw epoch milliseconds")
        }
    }

    /// Issue 39: a report's trip-details lookups count against
    /// `--upstream-lookup-limit` like every other lookup: 20 reports from
    /// one address with a budget of 3 cost the OneBusAway server 3 requests,
    /// and every report is still stored.
    @Test func snapshotLookupsCountAgainstTheLookupBudget() async throws {
        try await Self.run({
            $0.upstreamLookupLimit = 3
            $0.ghostBusPeerLimit = 100
        }) { app, oba in
            let store = GhostBusStore(database: app.sidecar.database)
            var ids: [String] = []
            for index in 0..<20 {
                let fields = Self.valid.map { ($0.key, $0.key == "user_identifier" ? "budget-\(index)" : $0.value) }
                let created = try await app.post(Self.path, fields)
                #expect(created.status == 201)
                ids.append(try #require(created.json?["id"] as? String))
            }
            // Every capture has ended: 3 with a snapshot, 17 refused a lookup.
            #expect(
                try await app.eventually {
                    var captured = 0
                    for id in ids where try await store.report(publicID: id)?.tripSnapshot != nil { captured += 1 }
                    return captured == 3 && app.log.lines.filter { $0.contains("lookup budget is spent") }.count == 17
                })
            #expect(oba.state.value.tripDetailRequests == 3)
        }
    }

    /// Any Int64 a rider sends for a time is stored; every way staff read it
    /// (the admin API's list and CSV, the console's CSV) answers, never traps.
    @Test func extremeTimesFromARiderExportWithoutBringingTheServerDown() async throws {
        try await Self.run { app, _ in
            for (index, extreme) in [Int64.min, Int64.max, -1, -999].enumerated() {
                let fields =
                    Self.valid.map { ($0.key, $0.value) }.filter { $0.0 != "user_identifier" && $0.0 != "service_date" } + [
                        ("user_identifier", "extreme-\(index)"), ("service_date", String(extreme)), ("scheduled_arrival_at", String(extreme)),
                        ("predicted_arrival_at", String(extreme)), ("prediction_last_updated_at", String(extreme)),
                    ]
                #expect(try await app.post(Self.path, fields).status == 201)
            }
            let store = GhostBusStore(database: app.sidecar.database)
            let csv = try await store.exportCSV(regionID: 1, zone: try #require(ZoneInfo.named("America/Los_Angeles")))
            #expect(csv.split(separator: "\n").count == 5)
            #expect(csv.contains("1969-12-31T15:59:59-08:00"), "-1 ms is the second before 1970")
            let key = try await ApiKeyStore(database: app.sidecar.database).create(name: "read", regions: [1], actor: "cli:test", now: 0).key
            for path in ["/admin/api/regions/1/ghost-bus-reports", "/admin/api/regions/1/ghost-bus-reports.csv"] {
                let answer = try await app.send("GET", path, headers: ["Authorization": "Bearer \(key)"])
                #expect(answer.status == 200, "\(path)")
                #expect(answer.text.contains("extreme-3"), "\(path): every row")
            }
            #expect(try await app.send("GET", "/healthz").status == 200, "still serving")
        }
    }

    @Test func enrichmentRetriesThreeTimesWithoutMakingTheRiderWait() async throws {
        try await Self.run({
            $0.runsAlarmChecker = false
            $0.runsLiveActivityUpdater = false
        }) { app, oba in
            // Only the pruner, the alert feed watcher, the alert source poller
            // and the schema watch sleep on the clock now.
            #expect(try await app.eventually { app.clock.sleeperCount == 4 })
            oba.setMode(.serverError)
            let created = try await app.post(Self.path, Self.valid.map { ($0.key, $0.value) })
            #expect(created.status == 201)
            let id = try #require(created.json?["id"] as? String)
            let store = GhostBusStore(database: app.sidecar.database)
            for _ in 0..<2 {
                #expect(try await app.eventually { app.clock.sleeperCount >= 5 }, "the enrichment waits to retry")
                app.clock.advance(seconds: 30)
            }
            #expect(try await app.eventually { try await store.report(publicID: id)?.snapshotAttempts == 3 })
            #expect(try await store.report(publicID: id)?.tripSnapshot == nil)
        }
    }

    @Test func jsonBodiesOverTheReadCapAre403() async throws {
        try await Self.run { app, _ in
            var big = Self.valid.mapValues { JSONValue.string($0) }
            big["comment"] = .string(String(repeating: "x", count: 9 * 1024))
            let body = JSONValue.object(big).encoded()
            let response = try await app.send("POST", Self.path, headers: ["Content-Type": "application/json"], body: body)
            #expect(response.status == 403)
            let small = try await app.send(
                "POST", Self.path, headers: ["Content-Type": "application/json"],
                body: JSONValue.object(Self.valid.mapValues { .string($0) }).encoded())
            #expect(small.status == 201)
        }
    }

    @Test func throttlesPerPeerAndPerUserIdentifierReadBodyFirst() async throws {
        try await Self.run { app, _ in
            for index in 0..<10 {
                let response = try await app.post(
                    Self.path,
                    [
                        ("user_identifier", "ip-user-\(index)"), ("trip_identifier", "t"),
                        ("service_date", "1"), ("wait_duration_minutes", "5"),
                    ], source: "127.0.0.5")
                #expect(response.status == 201)
            }
            let limited = try await app.post(
                Self.path,
                [
                    ("user_identifier", "ip-user-x"), ("trip_identifier", "t"), ("service_date", "1"),
                    ("wait_duration_minutes", "5"),
                ], source: "127.0.0.5")
            #expect(limited.status == 429)
            #expect(limited.header("Retry-After") != nil)

            // One device rotating addresses: 20 a day, counted from JSON bodies too.
            for index in 0..<20 {
                let body = JSONValue.object([
                    "user_identifier": .string("rotating"), "trip_identifier": .string("t\(index)"),
                    "service_date": .integer(1), "wait_duration_minutes": .integer(5),
                ]).encoded()
                let response = try await RawHTTPClient.send(
                    port: app.port,
                    RawHTTPClient.request(
                        "POST", Self.path + "?user_identifier=decoy", headers: ["Content-Type": "application/json"], body: body),
                    source: "127.0.1.\(index + 1)")
                #expect(response.status == 201, "\(index): \(response.text)")
            }
            let rotated = try await RawHTTPClient.send(
                port: app.port,
                RawHTTPClient.request(
                    "POST", Self.path, headers: ["Content-Type": "application/json"],
                    body: JSONValue.object([
                        "user_identifier": .string("rotating"), "trip_identifier": .string("t99"), "service_date": .integer(1),
                        "wait_duration_minutes": .integer(5),
                    ]).encoded()), source: "127.0.2.1")
            #expect(rotated.status == 429)
            // The decoy in the query was never counted: the body wins.
            #expect(
                try await app.post(
                    Self.path + "?x=1",
                    [
                        ("user_identifier", "decoy"), ("trip_identifier", "t"), ("service_date", "2"),
                        ("wait_duration_minutes", "5"),
                    ], source: "127.0.3.1"
                ).status == 201)
        }
    }

    @Test func refusedGhostBusReportsLeaveNothingInTheUserThrottle() async throws {
        try await TestSidecar.run({ _ in }) { app in
            for number in 0..<50 {
                let response = try await app.post(
                    "/api/v2/regions/1/ghost_bus_reports",
                    [("user_identifier", String(repeating: "u", count: 8000) + "\(number)"), ("trip_identifier", "t")],
                    source: "127.0.3.\(number + 1)")
                #expect(response.status == 422)
            }
            #expect(app.sidecar.limits.ghostBusUsers.trackedKeys == 0, "validation comes first")
            let valid = try await app.post(
                "/api/v2/regions/1/ghost_bus_reports",
                [
                    ("user_identifier", "rider-1"), ("trip_identifier", "t"),
                    ("service_date", "1"), ("wait_duration_minutes", "5"),
                ])
            #expect(valid.status == 201)
            // On PostgreSQL the counts live in the database, shared by every instance.
            #expect(app.sidecar.limits.ghostBusUsers.trackedKeys == (TestBackend.isSQLite ? 1 : 0))
        }
    }
}
