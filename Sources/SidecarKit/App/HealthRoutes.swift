import Core
import Database
import FoundationEssentials
import HTTPServer
import Synchronization

/// `GET /healthz` for load balancers and supervisors: 200 `{"status":"ok"}`
/// when storage really works (a fresh read of every table, a committed
/// write, the database file still the one open, room on the disk), else 503
/// `{"status":"unavailable","reason":...,"problems":[...]}`. The verdict is
/// kept for a second, so frequent probes cost one check a second.
struct HealthRoutes: Sendable {
    let database: any Database
    let logger: Logger
    /// How long an answer is reused (monotonic time: a cache, not a rule).
    var freshSeconds = 1.0
    let verdict = HealthVerdictCache()

    var routes: [Route] {
        [
            Route(
                "GET", "/healthz", parsesParameters: false,
                immediate: { _ in
                    verdict.fresh(maxAge: freshSeconds)
                }
            ) { _ in
                await check()
            }
        ]
    }

    /// The public answer names the checks that failed and nothing more (no
    /// path, no engine message: the port faces the internet); the details go
    /// to the log, and to `/healthz` on the metrics listener.
    func check() async -> Response {
        let problems = await database.healthProblems()
        let checks = problems.map(\.check)
        let response: Response =
            problems.isEmpty
            ? .json(200, ["status": "ok"])
            : .json(
                503,
                JSONValue.object([
                    "status": .string("unavailable"), "reason": .string("failing checks: " + checks.joined(separator: ", ")),
                    "problems": .array(checks.map(JSONValue.string)),
                ]))
        verdict.details.withLock { $0 = problems }
        if verdict.store(response, healthy: problems.isEmpty) {
            if problems.isEmpty {
                logger.info("storage is healthy again")
            } else {
                logger.error("storage is unhealthy", [("reason", problems.map(\.detail).joined(separator: "; "))])
            }
        }
        return response
    }

    /// For the private metrics listener: the last verdict with its details.
    func detailedRoute() -> Route {
        Route("GET", "/healthz", parsesParameters: false) { _ in
            _ = await check()
            let problems = verdict.details.withLock { $0 }
            return .json(
                problems.isEmpty ? 200 : 503,
                JSONValue.object([
                    "status": .string(problems.isEmpty ? "ok" : "unavailable"),
                    "problems": .array(problems.map { .object(["check": .string($0.check), "detail": .string($0.detail)]) }),
                ]))
        }
    }
}

/// The last health answer and when it was made.
final class HealthVerdictCache: Sendable {
    private struct Entry {
        var response: Response
        var healthy: Bool
        var at: ContinuousClock.Instant
    }
    private let entry = Mutex<Entry?>(nil)
    /// The last check's problems with their details.
    let details = Mutex<[HealthProblem]>([])

    func fresh(maxAge: Double) -> Response? {
        entry.withLock { entry in
            guard let entry, ContinuousClock.now - entry.at < .milliseconds(Int64(maxAge * 1000)) else { return nil }
            return entry.response
        }
    }

    /// Keeps the answer; true when health changed (worth a log line).
    func store(_ response: Response, healthy: Bool) -> Bool {
        entry.withLock { entry in
            let changed = entry.map { $0.healthy != healthy } ?? !healthy
            entry = Entry(response: response, healthy: healthy, at: .now)
            return changed
        }
    }
}

extension HealthRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(database: context.database, logger: context.logger, freshSeconds: context.configuration.healthCacheSeconds)
    }
}
