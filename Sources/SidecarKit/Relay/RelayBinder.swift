import Core
import Database
import Push
import Synchronization

/// Binds the tokens riders register (push registrations, alarms, Live
/// Activities) at the relay in the background: a rider's request never
/// waits for the relay. The backlog is walked in token order, a page at a
/// time from where the last round stopped, so no token waits behind others
/// for ever. A token the relay refuses (or one outside the token rule) is
/// marked and never asked again; one that failed for a passing reason waits
/// its own backoff (30 s, doubling, up to a day).
struct RelayBinder: Sendable {
    let database: any Database
    let transport: RelayTransport
    let clock: any WallClock
    let logger: Logger
    var intervalSeconds = 5.0
    /// Tokens asked in one round, at most.
    var roundSize = 200
    /// Bindings are renewed well inside the relay's 180-day lapse.
    static let renewMillis: Int64 = 30 * 86_400_000
    static let firstRetryMillis: Int64 = 30_000
    static let longestRetryMillis: Int64 = 86_400_000
    /// Where the next round starts (the last token asked; "" from the top).
    let cursor = BinderCursor()

    /// The server's stop signal: the loop ends once it is raised.
    var stop: StopSignal? = nil

    func run() async {
        await clock.repeatEvery(seconds: intervalSeconds, stop: stop) { _ = await bindPending() }
    }

    /// The wait after the `failures`-th passing failure.
    static func retryDelayMillis(failures: Int) -> Int64 {
        min(firstRetryMillis << Int64(min(max(failures - 1, 0), 20)), longestRetryMillis)
    }

    /// Tokens to ask, in token order after `after`: not bound here since
    /// the renewal age, not refused, not waiting their backoff.
    func pending(after: String, limit: Int) async throws -> [(token: String, platform: PushPlatform)] {
        let now = clock.nowMillis
        let stale = now.adding(millis: -Self.renewMillis)
        // The condition on another table's token column. Each store that holds tokens applies it.
        let unbound: @Sendable (String) -> SQL = { column in
            """
            NOT EXISTS (SELECT 1 FROM relay_bound_tokens b WHERE b.token = \(raw: column)
                AND (b.bound_at > \(stale) OR b.refused_at IS NOT NULL OR COALESCE(b.retry_at, 0) > \(now)))
            """
        }
        return try await database.read { connection in
            var merged: [String: PushPlatform] = [:]
            for found in [
                try PushRegistrationStore.tokens(connection, where: unbound, after: after, limit: limit),
                try AlarmStore.tokens(connection, where: unbound, after: after, limit: limit),
                try LiveActivityStore.tokens(connection, where: unbound, after: after, limit: limit),
            ] {
                for entry in found where merged[entry.token] == nil { merged[entry.token] = entry.platform }
            }
            // The first `limit` of the three lists merged: every token below the
            // last one taken is in some list's first `limit`.
            return merged.sorted { $0.key < $1.key }.prefix(limit).map { ($0.key, $0.value) }
        }
    }

    /// One round: up to `roundSize` tokens asked of the relay (tokens
    /// outside the rule are marked refused without asking, and do not
    /// count), from where the last round stopped, wrapping once to the
    /// start. Returns how many tokens were bound.
    @discardableResult
    func bindPending() async -> Int {
        var bound = 0, refused = 0, failed = 0, asked = 0
        var after = cursor.value
        var wrapped = after.isEmpty
        rounds: while asked < roundSize && stop?.isStopping != true {
            let page: [(token: String, platform: PushPlatform)]
            do { page = try await pending(after: after, limit: roundSize) } catch {
                logger.warning("relay binding: cannot read tokens", [("error", "\(error)")])
                break
            }
            if page.isEmpty {
                if wrapped { break }
                (after, wrapped) = ("", true)
                continue
            }
            for (token, platform) in page {
                if stop?.isStopping == true || asked >= roundSize { break rounds }
                let outcome: RelayTransport.Registration
                if PushToken.isValid(token) {
                    asked += 1
                    outcome = await transport.register(token: token, platform: platform)
                } else {
                    outcome = .refused("not a push token (\(PushToken.rule))")
                }
                let now = clock.nowMillis
                switch outcome {
                case .bound:
                    bound += 1
                    try? await record(token) { "bound_at = \(now), refused_at = NULL, reason = NULL, retry_at = NULL, failures = 0" }
                case .refused(let reason):
                    refused += 1
                    try? await record(token) { "refused_at = \(now), reason = \(reason)" }
                case .failed(let reason):
                    failed += 1
                    try? await database.write { connection in
                        let failures =
                            (try connection.queryOne("SELECT failures FROM relay_bound_tokens WHERE token = \(token)")?.count("failures") ?? 0) + 1
                        let retry = now.adding(millis: Self.retryDelayMillis(failures: failures))
                        try Self.upsert(connection, token, "retry_at = \(retry), failures = \(Int64(failures)), reason = \(reason)")
                    }
                case .serverRefused(let code):
                    // Nothing can be bound now: the next round tries again from here.
                    logger.error("relay binding: the relay refuses this server", [("code", code), ("server", transport.identity.serverID)])
                    break rounds
                }
                after = token
                cursor.value = token
            }
        }
        if refused > 0 || failed > 0 {
            logger.warning(
                "relay binding: some tokens not bound", [("bound", String(bound)), ("refused", String(refused)), ("retrying", String(failed))])
        }
        return bound
    }

    private func record(_ token: String, _ assignments: @escaping @Sendable () -> SQL) async throws {
        try await database.write { connection in try Self.upsert(connection, token, assignments()) }
    }

    static func upsert(_ connection: any SQLConnection, _ token: String, _ assignments: SQL) throws {
        try connection.execute("INSERT INTO relay_bound_tokens (token, bound_at) VALUES (\(token), 0) ON CONFLICT (token) DO NOTHING")
        try connection.execute("UPDATE relay_bound_tokens SET \(assignments) WHERE token = \(token)")
    }
}

extension RelayBinder {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "RelayBinder",
        [
            15: [
                .table(
                    "relay_bound_tokens",
                    """
                    token TEXT PRIMARY KEY,
                    bound_at BIGINT NOT NULL
                    """)
            ],
            25: [
                .same("ALTER TABLE relay_bound_tokens ADD COLUMN refused_at BIGINT"),
                .same("ALTER TABLE relay_bound_tokens ADD COLUMN reason TEXT"),
                .same("ALTER TABLE relay_bound_tokens ADD COLUMN retry_at BIGINT"),
                .same("ALTER TABLE relay_bound_tokens ADD COLUMN failures BIGINT NOT NULL DEFAULT 0"),
            ],
        ])
}

extension RelayBinder: Feature {
    /// The binder of a server that pushes through a relay; nil otherwise.
    init?(_ context: FeatureContext) {
        guard context.configuration.pushTransport == .relay,
            let relay = (context.transport as? RelayTransport) ?? (context.transport as? MeasuredTransport)?.inner as? RelayTransport
        else { return nil }
        self.init(database: context.database, transport: relay, clock: context.clock, logger: context.logger, stop: context.stop)
        context.logger.info("pushing through the relay", [("relay", relay.baseURL), ("server_id", relay.identity.serverID)])
    }

    var jobs: [BackgroundJob] { [BackgroundJob(name: "relay binder", run: run)] }
}

/// Where a binder's next round starts, shared by its copies.
final class BinderCursor: Sendable {
    private let token = Mutex("")
    var value: String {
        get { token.withLock { $0 } }
        set { token.withLock { $0 = newValue } }
    }
}
