import Core
import Database
import Foundation
import HTTPClient
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// One token rule everywhere: the rider routes refuse what the relay would,
/// the relay refuses a bad token alone, and the binder never stalls behind
/// tokens that cannot be bound.
@Suite("Push tokens: one rule, from the routes to the relay")
struct RelayTokenTests {
    @Test(arguments: [
        ("0a1b2c3d", true), (String(repeating: "ab", count: 32), true),
        (
            "dXk3Z2l0aHVi:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7B338qju59zJMjw2DELjzEvxwYv7hH5Ynpc1ODQ0aT4U4OFEeco8ohsN5PjL1iC2dNtk2BAokeMCg2ZXKqpc8FXKmhX94kIxQ",
            true
        ),
        ("8f3b1c4e-9d2a-4b6f-a1e7-0c5d9e2f7a13", true), ("abc", false), ("", false), ("has space", false), ("tok/en12", false),
        ("ÿÿÿÿÿÿÿÿ", false), (String(repeating: "a", count: 4097), false), (String(repeating: "a", count: 4096), true),
    ])
    func theRuleTakesEveryProvidersTokens(token: String, valid: Bool) {
        #expect(PushToken.isValid(token) == valid)
        #expect(RelayProtocol.isToken(token) == valid, "the relay's rule is the same")
    }

    /// Push registrations, alarms and Live Activities refuse a token outside
    /// the rule with 422 in their own shape; an unknown region is 404 first.
    @Test func everyRouteRefusesABadTokenInItsShape() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let bad = "ab"
            for (path, fields) in [
                ("/api/v2/regions/1/push_registrations", [("token", bad), ("operating_system", "ios")]),
                ("/api/v2/regions/1/alarms", [("user_push_id", bad), ("operating_system", "ios"), ("stop_id", "1_1"), ("trip_id", "t1")]),
                (
                    "/api/v2/regions/1/live_activities",
                    [
                        ("activity_id", "a1"), ("push_token", bad), ("stop_id", "1_1"), ("route_short_name", "10"),
                        ("trip_headsign", "Downtown"),
                    ]
                ),
            ] {
                let response = try await app.post(path, fields)
                #expect(response.status == 422, "\(path): \(response.status)")
                let messages = response.json?["messages"] as? [String] ?? []
                #expect(messages.contains { $0.contains("is not a push token a provider issues (\(PushToken.rule))") }, "\(path): \(messages)")
                let unknown = try await app.post(path.replacingOccurrences(of: "/1/", with: "/999/"), fields)
                #expect(unknown.status == 404, "an unknown region is 404 before the token is read")
            }
            #expect(try await app.pushStore.count() == 0)
        }
    }

    /// The probe: one 2-character token failed a batch of up to 100 riders.
    @Test(.enabled(if: TestBackend.isSQLite, "a relay database of its own: once, on the SQLite run"))
    func aBadTokenIsRefusedAloneAndTheRestAreSent() async throws {
        let http = RelayTests.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let a = try relay.client("a", http: http)
            for token in ["a0000001", "a0000002"] { #expect(await a.register(token: token, platform: .ios) == .bound) }
            let outcomes = await a.send(["a0000001", "ab", "a0000002"].map { PushMessage(token: $0, platform: .ios, title: "Detour") })
            #expect(outcomes[0] == .delivered && outcomes[2] == .delivered, "\(outcomes)")
            guard case .terminal(let reason) = outcomes[1] else {
                Issue.record("the bad token: \(outcomes[1])")
                return
            }
            #expect(reason.contains("not a push token"))
            #expect(relay.apns.sent.value.map(\.token).sorted() == ["a0000001", "a0000002"])
        }
    }

    /// The probe: 200 refused tokens stopped every later token from ever
    /// being bound. Now a refused token is marked and never asked again, and
    /// a round walks past them.
    @Test(.enabled(if: TestBackend.isSQLite, "a relay database of its own: once, on the SQLite run"))
    func fiveHundredBadTokensDoNotHoldUpAGoodOne() async throws {
        let http = RelayTests.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("binder-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = SidecarConfiguration()
            configuration.database = directory.appendingPathComponent("sidecar.sqlite3").path
            let database = try await configuration.openMigrated { _ in }.database
            // Stored before the rule (old rows), and Android tokens this relay has no FCM for.
            try await database.write { connection in
                for index in 0..<500 {
                    let (token, os) = index % 2 == 0 ? ("b\(index)", "ios") : ("android-token-\(index)", "android")
                    try connection.execute(
                        "INSERT INTO push_registrations (region_id, token, operating_system, created_at, last_seen_at) VALUES (1, \(token), \(os), 0, 0)"
                    )
                }
                try connection.execute(
                    "INSERT INTO alarms (token, region_id, api_version, user_push_id, operating_system, seconds_before, message, next_check_at, created_at) VALUES ('al', 1, 2, 'zz-good-alarm-token', 'ios', 60, 'm', 0, 0)"
                )
            }
            let binder = RelayBinder(
                database: database, transport: try relay.client("a", http: http), clock: SystemClock(),
                logger: Logger(level: .error, sink: MemorySink()))
            var rounds = 0
            while rounds < 10 {
                rounds += 1
                _ = await binder.bindPending()
                let bound = try await database.read { connection in
                    try connection.queryOne("SELECT bound_at FROM relay_bound_tokens WHERE token = 'zz-good-alarm-token'")?.int("bound_at") ?? 0
                }
                if bound > 0 { break }
            }
            #expect(rounds <= 2, "the good token waited \(rounds) rounds behind 500 bad ones")
            let refused = try await database.read { connection in
                try connection.queryOne("SELECT COUNT(*) AS n FROM relay_bound_tokens WHERE refused_at IS NOT NULL")?.count("n") ?? 0
            }
            #expect(refused == 500, "each bad token marked once")
            #expect(await binder.bindPending() == 0 && relay.apns.sent.value.isEmpty, "never asked again")
            await database.close()
        }
    }

    @Test func aPassingFailureBacksOffPerToken() {
        #expect(RelayBinder.retryDelayMillis(failures: 1) == 30_000)
        #expect(RelayBinder.retryDelayMillis(failures: 2) == 60_000)
        #expect(RelayBinder.retryDelayMillis(failures: 40) == 86_400_000)
    }

    /// Version 25 removes stored tokens outside the rule, and says how many.
    @Test func theMigrationRemovesTokensNoProviderIssuesAndSaysSo() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = SidecarConfiguration()
        configuration.database = directory.appendingPathComponent("old.sqlite3").path
        let old = try configuration.openDatabase(readers: 1)
        _ = try await old.migrate(Array(Migrations.sidecar.prefix(24)))
        try await old.write { connection in
            for token in ["ab", "good-token-1", "has space", "0a1b2c3d4e5f"] {
                try connection.execute(
                    "INSERT INTO push_registrations (region_id, token, operating_system, created_at, last_seen_at) VALUES (1, \(token), 'ios', 0, 0)")
            }
        }
        await old.close()
        let said = Locked<[String]>([])
        let (database, applied) = try await configuration.openMigrated { line in said.withLock { $0.append(line) } }
        #expect(applied.contains(25))
        #expect(said.value.contains { $0.contains("migration 25 removed 2 push registrations, 0 alarms and 0 Live Activities") }, "\(said.value)")
        #expect(try await PushRegistrationStore(database: database).count() == 2)
        await database.close()
    }
}
