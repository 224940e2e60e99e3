import Core
import FoundationEssentials
import HTTPServer

/// Alerts in the admin API: authoring, publishing, translations and sends,
/// for a key of the alert's region (sending needs the push scope). The same
/// operations as the CLI and the console, through `AlertAdministration`.
struct AlertAdminRoutes: Sendable {
    let admin: AdminAPI
    let store: AlertStore
    let sends: AlertSendRunner

    var routes: [Route] {
        let page = AdminConventions.paging
        return [
            admin.route("GET", "/regions/:region/alerts", on: .region, accepts: page) { request, key in await listAlerts(request, key) },
            admin.route("POST", "/regions/:region/alerts", on: .region, accepts: Self.authoringFields, idempotent: true) { request, key in
                await createAlert(request, key)
            },
            admin.route("GET", "/alerts/:alert", on: .alert) { request, key in await showAlert(request, key) },
            admin.route("PATCH", "/alerts/:alert", on: .alert, accepts: Self.authoringFields) { request, key in await editAlert(request, key) },
            admin.route("PUT", "/alerts/:alert", on: .alert, accepts: Self.authoringFields) { request, key in await editAlert(request, key) },
            admin.route("DELETE", "/alerts/:alert", on: .alert) { request, key in await deleteAlert(request, key) },
            admin.route("POST", "/alerts/:alert/publish", on: .alert) { request, key in await publish(request, key, true) },
            admin.route("POST", "/alerts/:alert/unpublish", on: .alert) { request, key in await publish(request, key, false) },
            admin.route("GET", "/alerts/:alert/checks", on: .alert) { request, key in await checks(request, key) },
            admin.route("POST", "/alerts/:alert/acknowledge", on: .alert, accepts: ["codes": .text]) { request, key in
                await acknowledge(request, key)
            },
            admin.route("PUT", "/alerts/:alert/translations/:language", on: .alert, accepts: ["header": .text, "description": .text]) {
                request, key in await translate(request, key)
            },
            admin.route("POST", "/alerts/:alert/sends", on: .alert, .push, accepts: ["audience": .text, "messages": .object], idempotent: true) {
                request, key in await send(request, key)
            },
            admin.route("GET", "/alerts/:alert/sends", on: .alert, accepts: page) { request, key in await listSends(request, key) },
        ]
    }

    var administration: AlertAdministration { admin.administration }
    func administration(for key: ApiKeyStore.Record) -> AlertAdministration { admin.administration(for: key) }
    func failure(_ error: any Error) -> Response { admin.failure(error) }

    /// The alert the path names, if the key may act on its region.
    func scopedAlert(_ request: Request, _ key: ApiKeyStore.Record) async throws -> ServiceAlert {
        let id = try admin.id(request, .alert)
        // The kit found it a moment ago: read again only outside a route.
        let alert = try await AdminResolved.reuse(ServiceAlert.self, matching: { $0.id == id }, else: { try await administration.alert(id: id) })
        guard let alert else { throw AdministrationError.notFound("No alert \(id)") }
        guard key.allows(region: alert.regionID) else { throw AdministrationError.notFound("No alert \(id)") }
        return alert
    }

    static let authoringFields: [String: AdminField] = [
        "header": .text, "description": .text, "url": .text, "cause": .text, "effect": .text, "severity": .text, "start": .text,
        "end": .text, "impact_start": .text, "impact_end": .text, "test": .boolean, "agency_id": .text, "region_wide": .boolean,
        "scope": .text, "scope_check": .boolean,
    ]

    func listAlerts(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let page = try await admin.page(request, list: "alerts:\(regionID)")
            let rows = try await store.alerts(regionID: regionID, after: page.after, limit: page.limit + 1)
            return page.response(rows, request: request, id: \.id, json: { AdminJSON.alert($0) })
        } catch { return failure(error) }
    }

    func createAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let saved = try await administration(for: key).create(
                regionID: try admin.regionID(request), fields: AdminAPI.fields(request, Self.authoringFields))
            return AdminConventions.tagged(201, AdminJSON.alert(saved.alert, warnings: saved.warnings))
        } catch { return failure(error) }
    }

    /// An alert with its translations and sends, tagged with the digest of
    /// exactly that body (a strong ETag changes whenever any byte would).
    func showAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            return AdminConventions.tagged(200, try await fullAlert(alert))
        } catch { return failure(error) }
    }

    /// The alert as `GET /admin/api/alerts/:alert` answers it.
    private func fullAlert(_ alert: ServiceAlert) async throws -> JSONValue {
        AdminJSON.alert(alert, translations: try await store.translations(alertID: alert.id), sends: try await store.sends.list(alertID: alert.id))
    }

    /// The alert the path names, checked against `If-Match`: the tag of
    /// the alert alone (from a create or an edit) or of the alert as read
    /// (with its translations and sends) passes while it is current.
    func currentAlert(_ request: Request, _ key: ApiKeyStore.Record) async throws -> ServiceAlert {
        let alert = try await scopedAlert(request, key)
        if request.header("if-match") != nil {
            try AdminConventions.checkIfMatch(request, current: [AdminJSON.alert(alert), try await fullAlert(alert)])
        }
        return alert
    }

    func editAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await currentAlert(request, key)
            let saved = try await administration(for: key).edit(id: alert.id, fields: AdminAPI.fields(request, Self.authoringFields))
            return AdminConventions.tagged(200, AdminJSON.alert(saved.alert, warnings: saved.warnings))
        } catch { return failure(error) }
    }

    func deleteAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            try await administration(for: key).delete(id: try await currentAlert(request, key).id)
            return .empty(204)
        } catch { return failure(error) }
    }

    func publish(_ request: Request, _ key: ApiKeyStore.Record, _ published: Bool) async -> Response {
        do {
            let alert = try await currentAlert(request, key)
            let saved = try await administration(for: key).setPublished(id: alert.id, published)
            return AdminConventions.tagged(200, AdminJSON.alert(saved.alert, warnings: saved.warnings))
        } catch { return failure(error) }
    }

    /// The publish-time checks of an alert as it stands (its scope asked of
    /// OneBusAway, at most 3 s a lookup).
    func checks(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            let findings = try await administration(for: key).publishChecks(alert, askingOneBusAway: true)
            return .json(200, AdminJSON.checks(findings, acknowledged: alert.acknowledgedChecks)).adding(header: "Cache-Control", "no-store")
        } catch { return failure(error) }
    }

    func acknowledge(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await currentAlert(request, key)
            let codes = (request.parameters["codes"] ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
            let saved = try await administration(for: key).acknowledge(id: alert.id, codes: codes)
            let findings = try await administration(for: key).publishChecks(saved, askingOneBusAway: false)
            return .json(200, AdminJSON.checks(findings, acknowledged: saved.acknowledgedChecks)).adding(header: "Cache-Control", "no-store")
        } catch { return failure(error) }
    }

    func translate(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            // If-Match names the alert's version: a translation of text that
            // changed since it was read is refused.
            let alert = try await currentAlert(request, key)
            let translation = try await administration(for: key).translate(
                id: alert.id, language: request.pathParameters["language"] ?? "",
                header: request.parameters["header"],
                description: request.parameters["description"])
            return .json(200, AdminJSON.translation(translation, current: translation.sourceVersion))
        } catch { return failure(error) }
    }

    /// Starts (or resumes) a send in the background; 202 with its state
    /// (the route admits only a key with the push scope). `messages` is the
    /// caller's push text by language instead of the alert's.
    func send(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        guard sends.transport != nil else {
            return failure(
                AdministrationError.invalid(["This server has no push transport configured (gorush, APNs and FCM, or a relay): its operator sets one"]
                ))
        }
        guard let audience = AlertSend.Audience(rawValue: request.parameters["audience"]?.presence ?? "all") else {
            return failure(AdministrationError.invalid(["audience must be all or test"]))
        }
        do {
            let alert = try await scopedAlert(request, key)
            let messages = try administration.pushMessages(request.parameters.value("messages"))
            let (send, _) = try await administration(for: key).startSend(id: alert.id, audience: audience, messages: messages)
            sends.launch(send)
            // A paced send says when its last device gets it, as the console's confirmation does.
            var answer = AdminJSON.send(send)
            if case .object(var fields) = answer, let pace = try await RegionSettingsStore(database: store.database).sendPace(for: alert) {
                let left = try await store.sends.audienceCount(regionID: alert.regionID, audience: audience) - send.targeted
                fields["paced_per_minute"] = .integer(Int64(pace))
                fields["last_device_at"] = AdminJSON.time(AlertSendPacing.lastDevice(audience: left, pace: pace, now: administration.now))
                answer = .object(fields)
            }
            return .json(202, answer)
        } catch { return failure(error) }
    }

    func listSends(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            let page = try await admin.page(request, list: "sends:\(alert.id)")
            return page.response(try await store.sends.list(alertID: alert.id), request: request, id: \.id, json: AdminJSON.send)
        } catch { return failure(error) }
    }
}

extension AlertAdminRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(admin: AdminAPI(context), store: context.stores.alerts, sends: context.alertSends)
    }
}
