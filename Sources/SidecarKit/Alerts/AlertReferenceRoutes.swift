import Core
import FoundationEssentials
import GTFSRealtime
import HTTPServer

/// Alerts in the Go reference's admin contract: list, create, show, edit,
/// delete, publish, unpublish and translations under
/// `/regions/{regionId}/alerts`. Each reads the reference's body, checks
/// what the reference checks first with its words, then hands the same
/// fields to `AlertAdministration` as `/admin/api`, the CLI and the console
/// (so its limits, language rules, URL rules and publish-time checks hold
/// here too), and answers with the reference's alert object.
struct AlertReferenceRoutes: Sendable {
    let api: ReferenceAdminAPI
    let store: AlertStore

    /// The most alerts one list answers (the reference returns them all).
    static let listLimit = 5_000

    var routes: [Route] {
        [
            api.route("GET", "/regions/:regionId/alerts", .operatorOrKey) { call in await list(call) },
            api.route("POST", "/regions/:regionId/alerts", .operatorOrKey) { call in await create(call) },
            api.route("GET", "/regions/:regionId/alerts/:alertId", .operatorOrKey) { call in await show(call) },
            api.route("PATCH", "/regions/:regionId/alerts/:alertId", .operatorOrKey) { call in await edit(call) },
            api.route("DELETE", "/regions/:regionId/alerts/:alertId", .operatorOrKey) { call in await delete(call) },
            api.route("POST", "/regions/:regionId/alerts/:alertId/publish", .operatorOrKey) { call in await publish(call, true) },
            api.route("POST", "/regions/:regionId/alerts/:alertId/unpublish", .operatorOrKey) { call in await publish(call, false) },
            api.route("PUT", "/regions/:regionId/alerts/:alertId/translations/:lang", .operatorOrKey) { call in await translate(call) },
            api.route("DELETE", "/regions/:regionId/alerts/:alertId/translations/:lang", .operatorOrKey) { call in await untranslate(call) },
        ]
    }

    /// The reference's alert object; `translations` are filled in on a single alert only.
    static func json(_ alert: ServiceAlert, translations: [AlertTranslation] = []) -> ReferenceJSON {
        .object([
            ("id", .integer(alert.id)), ("region_id", .integer(alert.regionID)), ("agency_id", .string(alert.agencyID)),
            ("header", .string(alert.header)), ("description", .string(alert.description)), ("url", .string(alert.url ?? "")),
            ("cause", .string(alert.cause.name)), ("effect", .string(alert.effect.name)), ("severity", .string(alert.severity.name)),
            ("start_time", .time(alert.startsAt)), ("end_time", .time(alert.endsAt)), ("published", .bool(alert.published)),
            ("is_test", .bool(alert.test)), ("created_at", .time(alert.createdAt)), ("updated_at", .time(alert.updatedAt)),
            (
                "translations",
                .array(
                    translations.sorted { $0.language < $1.language }.map { translation in
                        .object([
                            ("language", .string(translation.language)), ("header", .string(translation.header)),
                            ("description", .string(translation.description)), ("stale", .bool(translation.sourceVersion != alert.sourceVersion)),
                        ])
                    })
            ),
        ])
    }

    /// The alert the path names, in the path's region (another region's is 404 alike).
    func alert(_ call: ReferenceAdminAPI.Call) async throws -> ServiceAlert {
        let id = try call.pathID("alertId", named: "id")
        guard let alert = try await store.find(id: id), alert.regionID == call.regionID else { throw ReferenceFailure.status(404, "alert not found") }
        return alert
    }

    func full(_ alert: ServiceAlert) async throws -> Response {
        ReferenceAdminAPI.json(200, Self.json(alert, translations: try await store.translations(alertID: alert.id)))
    }

    func list(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let rows = try await store.alerts(regionID: call.regionID, after: 0, limit: Self.listLimit + 1)
            return ReferenceAdminAPI.list(rows, limit: Self.listLimit) { kept in
                kept.sorted { ($0.startsAt.value, $0.id) > ($1.startsAt.value, $1.id) }.map { Self.json($0) }
            }
        } catch { return api.failure(error, notFound: "alert") }
    }

    func create(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let body = try call.body()
            if let region = body["region_id"], region != .null {
                throw ReferenceFailure.badRequest("region_id is not accepted; the region comes from the path")
            }
            var fields = try ReferenceAlertInput.fields(body, creating: true)
            guard fields["header"]?.isEmpty == false else { throw ReferenceFailure.badRequest("header is required") }
            try await ReferenceAlertInput.checkWindow(
                fields, previous: nil, regionID: call.regionID, zone: zoneName(call.regionID), now: api.clock.nowSeconds)
            if fields["agency_id"]?.isEmpty != false {
                fields["agency_id"] = nil
                let agency = try await RegionSettingsStore(database: store.database).settings(regionID: call.regionID)?.agencyID
                guard agency?.isEmpty == false else {
                    throw ReferenceFailure.badRequest(
                        "no agency_id given and region \(call.regionID) has no default agency id; set one with PATCH /api/admin/v1/regions/\(call.regionID) or pass agency_id"
                    )
                }
            }
            let saved = try await api.administration(for: call.caller).create(regionID: call.regionID, fields: fields)
            return ReferenceAdminAPI.json(201, Self.json(saved.alert))
                .adding(header: "Location", "\(ReferenceAdminAPI.prefix)/regions/\(call.regionID)/alerts/\(saved.alert.id)")
        } catch { return api.failure(error, notFound: "alert") }
    }

    func show(_ call: ReferenceAdminAPI.Call) async -> Response {
        do { return try await full(try await alert(call)) } catch { return api.failure(error, notFound: "alert") }
    }

    func edit(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alert(call)
            let body = try call.body()
            let fields = try ReferenceAlertInput.fields(body, creating: false)
            try await ReferenceAlertInput.checkWindow(
                fields, previous: alert, regionID: call.regionID, zone: zoneName(call.regionID), now: api.clock.nowSeconds)
            let saved = fields.isEmpty ? alert : try await api.administration(for: call.caller).edit(id: alert.id, fields: fields).alert
            return try await full(saved)
        } catch { return api.failure(error, notFound: "alert") }
    }

    func delete(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            try await api.administration(for: call.caller).delete(id: try await alert(call).id)
            return .empty(204)
        } catch { return api.failure(error, notFound: "alert") }
    }

    /// Publishes or withdraws. Sidecar's publish-time errors (an end already
    /// past) refuse with 409; under two-person approval the answer is 202 with the request.
    func publish(_ call: ReferenceAdminAPI.Call, _ published: Bool) async -> Response {
        do {
            let alert = try await alert(call)
            let saved = try await api.administration(for: call.caller).setPublished(id: alert.id, published).alert
            return try await full(saved)
        } catch { return api.failure(error, notFound: "alert", invalidStatus: 409) }
    }

    /// `{header?, description?}` for one language; a field not given keeps
    /// the stored translation's (the reference stores each field apart).
    func translate(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alert(call)
            let language = try Self.language(call)
            let body = try call.body()
            let header = try RegionReferenceRoutes.optionalString(body, "header")
            let description = try RegionReferenceRoutes.optionalString(body, "description")
            guard header != nil || description != nil else { throw ReferenceFailure.badRequest("provide header and/or description") }
            let stored = try await store.translations(alertID: alert.id).first { $0.language == language }
            _ = try await api.administration(for: call.caller).translate(
                id: alert.id, language: language, header: header ?? stored?.header, description: description ?? stored?.description)
            return try await full(try await self.alert(call))
        } catch { return api.failure(error, notFound: "alert") }
    }

    func untranslate(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alert(call)
            let language = try Self.language(call)
            let tag = (try? api.administration.catalogLanguage(language).get()) ?? language
            try await api.administration(for: call.caller).deleteTranslation(id: alert.id, language: tag)
            return .empty(204)
        } catch { return api.failure(error, notFound: "alert") }
    }

    /// The path's language, trimmed and lowercased as the reference reads it.
    static func language(_ call: ReferenceAdminAPI.Call) throws(ReferenceFailure) -> String {
        let raw = call.request.pathParameters["lang"] ?? ""
        let language = raw.trimmingWhitespace().lowercased()
        guard !language.isEmpty else { throw .badRequest("invalid language \"\(raw)\": must be a BCP-47 tag such as es") }
        return language
    }

    func zoneName(_ regionID: Int) async -> String? {
        (try? await RegionSettingsStore(database: store.database).settings(regionID: regionID))??.timezone
    }
}

extension AlertReferenceRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) { self.init(api: api, store: context.stores.alerts) }
}

extension AlertReferenceRoutes: Feature {}
