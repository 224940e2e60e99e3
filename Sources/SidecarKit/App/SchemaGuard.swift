import Database
import HTTPServer
import Synchronization

/// Rolling upgrades on one database: the first instance of a newer release
/// migrates the schema at its start; every older instance still running
/// notices within `intervalSeconds` and from then on refuses every write
/// (storage errors, so routes answer 503 and `/healthz` is unhealthy) and
/// says why once in the log. Reads keep being served. Replacing the older
/// instance ends it: the newer binary knows the schema.
final class SchemaGuard: Sendable {
    /// The newest migration this binary knows.
    let known: Int
    private let seen = Atomic<Int>(0)

    init(known: Int = Migrations.all.map(\.version).max() ?? 0) { self.known = known }

    /// The database's newer schema version, once one was seen.
    var newerSchema: Int? {
        let version = seen.load(ordering: .acquiring)
        return version > known ? version : nil
    }

    /// Records the schema version read; true the first time it is newer.
    func observe(_ version: Int) -> Bool {
        guard version > known else { return false }
        return seen.exchange(version, ordering: .acquiringAndReleasing) <= known
    }

    /// What a refused write and `/healthz` say.
    func refusal(_ version: Int) -> String {
        "the database's schema \(version) is newer than this sidecar knows (\(known)): a newer release migrated it; "
            + "this instance refuses writes until it is replaced by that release"
    }
}

/// The database as the server's features use it: every write passes the
/// schema guard first.
struct GuardedDatabase: Database {
    let inner: any Database
    let schema: SchemaGuard

    var dialect: SQLDialect { inner.dialect }

    func read<T: Sendable>(_ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T { try await inner.read(work) }

    @discardableResult
    func write<T: Sendable>(locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        if let newer = schema.newerSchema { throw DatabaseError.unavailable(schema.refusal(newer)) }
        return try await inner.write(locking: keys, work)
    }

    func submitWrite(
        locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> Void,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        if let newer = schema.newerSchema { return completion(DatabaseError.unavailable(schema.refusal(newer))) }
        inner.submitWrite(locking: keys, work, completion: completion)
    }

    @discardableResult
    func migrate(_ migrations: [Migration]) async throws -> [Int] { try await inner.migrate(migrations) }
    func close() async { await inner.close() }

    func healthProblems() async -> [HealthProblem] {
        var problems = await inner.healthProblems()
        if let newer = schema.newerSchema { problems.append(HealthProblem(check: "schema", detail: schema.refusal(newer))) }
        return problems
    }
}

/// The loop that reads the schema's version (one indexed `MAX`) and tells
/// the guard.
struct SchemaWatch: Feature {
    let database: any Database
    let schema: SchemaGuard
    let clock: any WallClock
    let logger: Logger
    let stop: StopSignal
    var intervalSeconds = 5.0

    init(_ context: FeatureContext, schema: SchemaGuard) {
        database = context.database
        self.schema = schema
        clock = context.clock
        logger = context.logger
        stop = context.work.stop
    }

    var jobs: [BackgroundJob] { [BackgroundJob(name: "schema watch") { await run() }] }

    func run() async {
        while !Task.isCancelled && !stop.isStopping {
            await checkOnce()
            do { try await clock.sleep(seconds: intervalSeconds) } catch { return }
        }
    }

    /// One look at the schema's version.
    func checkOnce() async {
        let read = try? await database.read { connection in
            try connection.queryOne("SELECT MAX(version) AS version FROM schema_migrations")?.optionalInt("version")
        }
        guard let version = read else { return }
        if schema.observe(Int(version)) { logger.error("writes refused: newer schema", [("reason", schema.refusal(Int(version)))]) }
    }
}
