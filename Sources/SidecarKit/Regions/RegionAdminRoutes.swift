import Core
import HTTPServer

/// Regions in the admin API: the directory's regions the key may act on,
/// with the settings this server keeps for each (agency and time zone).
struct RegionAdminRoutes: Sendable {
    let admin: AdminAPI

    var routes: [Route] {
        [
            admin.route("GET", "/regions", on: .none, accepts: AdminConventions.paging) { request, key in await regions(request, key) },
            admin.route(
                "PUT", "/regions/:region", on: .region,
                accepts: ["agency_id": .text, "timezone": .text, "push_pace_per_minute": .scalar, "requires_approval": .boolean]
            ) {
                request, key in
                await setRegion(request, key)
            },
        ]
    }

    var administration: AlertAdministration { admin.administration }
    func administration(for key: ApiKeyStore.Record) -> AlertAdministration { admin.administration(for: key) }
    func failure(_ error: any Error) -> Response { admin.failure(error) }

    func regions(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let page = try await admin.page(request, list: "regions")
            let list = try await administration.regionList().filter { key.allows(region: $0.region.id) }.sorted { $0.region.id < $1.region.id }
            return page.response(list, request: request, id: { Int64($0.region.id) }, json: { AdminJSON.region($0.region, $0.settings) })
        } catch { return failure(error) }
    }

    func setRegion(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let id = try admin.regionID(request)
            let region = try administration.region(id)
            let current = try await administration.regionList().first { $0.region.id == id }?.settings
            try AdminConventions.checkIfMatch(request, current: AdminJSON.region(region, current))
            let settings = try await administration(for: key).setRegion(
                id: id, agencyID: request.parameters["agency_id"],
                timezone: request.parameters["timezone"], pushPace: request.parameters["push_pace_per_minute"],
                requireApproval: request.parameters["requires_approval"])
            return AdminConventions.tagged(200, AdminJSON.region(region, settings))
        } catch { return failure(error) }
    }

}

extension RegionAdminRoutes: Feature {
    init(_ context: FeatureContext) { self.init(admin: AdminAPI(context)) }
}
