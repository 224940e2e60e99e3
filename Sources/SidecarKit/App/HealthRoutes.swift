import Database
import HTTPServer

/// `GET /healthz`: 200 when the database answers, 503 when it does not.
struct HealthRoutes: Sendable {
    let database: any Database

    var routes: [Route] {
        [Route("GET", "/healthz", parsesParameters: false) { _ in
            await database.ping() ? .json(200, ["status": "ok"]) : .json(503, ["status": "database unavailable"])
        }]
    }
}
