import Core
import HTTPServer

/// Approval requests in the admin API: listed per region. A key asks
/// (publishing or sending to everyone answers 202 with the request) and
/// never decides: people approve in the console or the CLI.
struct ApprovalAdminRoutes: Sendable {
    let admin: AdminAPI

    var routes: [Route] {
        [admin.route("GET", "/regions/:region/approvals", on: .region) { request, key in await list(request, key) }]
    }

    func list(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let requests = try await admin.administration.approvals.list(regionID: regionID, now: admin.administration.now)
            return .json(200, JSONValue.object(["approvals": .array(requests.map { AdminJSON.approval($0, now: admin.administration.now) })]))
        } catch { return admin.failure(error) }
    }
}

extension ApprovalAdminRoutes: Feature {
    init(_ context: FeatureContext) { self.init(admin: AdminAPI(context)) }
}
