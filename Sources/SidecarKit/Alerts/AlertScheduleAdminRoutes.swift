import Core
import HTTPServer

/// Scheduled sends in the admin API: listed with the alert, made and
/// changed with the push scope (they push), cancelled until they go.
struct AlertScheduleAdminRoutes: Sendable {
    let admin: AdminAPI

    static let fields: [String: AdminField] = ["at": .text, "audience": .text, "if_changed": .text]

    var routes: [Route] {
        [
            admin.route("GET", "/alerts/:alert/schedules", on: .alert) { request, key in await list(request, key) },
            admin.route("POST", "/alerts/:alert/schedules", on: .alert, .push, accepts: Self.fields, idempotent: true) { request, key in
                await create(request, key)
            },
            admin.route("PATCH", "/alerts/:alert/schedules/:schedule", on: .alert, .push, accepts: ["at": .text, "if_changed": .text]) {
                request, key in await edit(request, key)
            },
            admin.route("DELETE", "/alerts/:alert/schedules/:schedule", on: .alert, .push) { request, key in await cancel(request, key) },
        ]
    }

    func administration(for key: ApiKeyStore.Record) -> AlertAdministration { admin.administration(for: key) }

    /// The alert the path names, if the key may act on its region.
    func alertID(_ request: Request, _ key: ApiKeyStore.Record) async throws -> Int64 {
        let id = try admin.id(request, .alert)
        let alert = try await admin.administration.alert(id: id)
        guard key.allows(region: alert.regionID) else { throw AdministrationError.notFound("No alert \(id)") }
        return id
    }

    func scheduleID(_ request: Request) throws -> Int64 {
        guard let id = request.pathParameters["schedule"].flatMap({ Int64($0) }) else { throw AdministrationError.notFound("No such scheduled send") }
        return id
    }

    func list(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let id = try await alertID(request, key)
            let schedules = try await admin.administration.schedules.list(alertID: id).map(AdminJSON.schedule)
            return .json(200, JSONValue.object(["schedules": .array(schedules)]))
        } catch { return admin.failure(error) }
    }

    func create(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let id = try await alertID(request, key)
            let created = try await administration(for: key).schedule(
                alertID: id, at: request.parameters["at"] ?? "", audience: request.parameters["audience"],
                ifChanged: request.parameters["if_changed"])
            return .json(201, AdminJSON.schedule(created))
        } catch { return admin.failure(error) }
    }

    func edit(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await alertID(request, key)
            let id = try scheduleID(request)
            _ = try await admin.administration.schedule(id: id, alertID: alert)
            let changed = try await administration(for: key).reschedule(
                id: id, at: request.parameters["at"], ifChanged: request.parameters["if_changed"])
            return .json(200, AdminJSON.schedule(changed))
        } catch { return admin.failure(error) }
    }

    func cancel(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await alertID(request, key)
            let id = try scheduleID(request)
            _ = try await admin.administration.schedule(id: id, alertID: alert)
            try await administration(for: key).cancelSchedule(id: id)
            return .empty(204)
        } catch { return admin.failure(error) }
    }
}

extension AlertScheduleAdminRoutes: Feature {
    init(_ context: FeatureContext) { self.init(admin: AdminAPI(context)) }
}
