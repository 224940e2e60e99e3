import Core
import HTTPServer

/// An alert's pushes in the Go reference's admin contract
/// (`/regions/{regionId}/alerts/{id}/pushes`, `…/push_audience`): start one
/// (a key needs the `push` scope), list them, cancel one under way, and
/// count who would get it. A push is a Sidecar send, started, paced,
/// approved and audited exactly as `/admin/api` and the console start one.
/// Offered only by a server with a push transport, as the reference.
struct AlertPushReferenceRoutes: Sendable {
    let api: ReferenceAdminAPI
    let alerts: AlertReferenceRoutes
    let store: AlertStore
    let registrations: PushRegistrationStore
    let sends: AlertSendRunner

    var routes: [Route] {
        let offered: [(String, String, ReferenceAdminAPI.Allowed, ReferenceAdminAPI.Handler)] = [
            ("POST", "/regions/:regionId/alerts/:alertId/pushes", .operatorOrPushKey, { call in await start(call) }),
            ("GET", "/regions/:regionId/alerts/:alertId/pushes", .operatorOrKey, { call in await list(call) }),
            ("DELETE", "/regions/:regionId/alerts/:alertId/pushes/:pushId", .operatorOrPushKey, { call in await cancel(call) }),
            ("GET", "/regions/:regionId/alerts/:alertId/push_audience", .operatorOrKey, { call in await audience(call) }),
        ]
        // Without a transport the reference has no such routes: the same
        // plain 404 as any unknown path, whoever asks.
        guard sends.transport != nil else {
            return offered.map { method, path, _, _ in
                Route(method, ReferenceAdminAPI.prefix + path, parsesParameters: false) { _ in
                    .bytes(404, contentType: "text/plain; charset=utf-8", Array("404 page not found\n".utf8))
                }
            }
        }
        return offered.map { method, path, allowed, handler in api.route(method, path, allowed, handler) }
    }

    /// A send's state in the reference's words: under way is `sending`,
    /// done `sent`, stopped with pushes undelivered `failed`, cancelled `canceled`.
    static func status(_ send: AlertSend) -> String {
        switch send.status {
        case "running": "sending"
        case "done": "sent"
        case "cancelled": "canceled"
        default: send.status
        }
    }

    /// The reference's push object. `messages` is the caller's text, or the
    /// copy the alert gives each language it has when the caller gave none.
    static func json(_ send: AlertSend, alert: ServiceAlert, translations: [AlertTranslation]) -> ReferenceJSON {
        var languages = ["en"] + translations.map(\.language)
        if let given = send.messages { languages = Array(given.keys) }
        let messages = Set(languages).sorted().map { language -> (String, ReferenceJSON) in
            let copy = AlertPushRules.copy(for: alert, translations: translations, locale: language, messages: send.messages)
            return (language, .object([("title", .string(copy.title)), ("body", .string(copy.body))]))
        }
        return .object([
            ("id", .integer(send.id)), ("alert_id", .integer(send.alertID)), ("region_id", .integer(alert.regionID)),
            ("audience", .string(send.audience.rawValue)), ("status", .string(status(send))), ("device_count", .integer(send.targeted)),
            ("submitted_count", .integer(send.delivered)), ("failed_count", .integer(send.failed)), ("attempts", .integer(1)),
            ("last_error", .string(send.lastError ?? "")), ("messages", .object(messages)), ("failure_reasons", .array([])),
            ("created_at", .time(send.startedAt)), ("started_at", .time(send.startedAt)), ("completed_at", .time(send.finishedAt)),
        ])
    }

    /// The reference's checks of caller-supplied `messages`, before any
    /// other: English present, tags trimmed and lowercase, a body, a title of
    /// at most 48 characters and a body of at most 120.
    static func checkMessages(_ value: JSONValue) throws(ReferenceFailure) {
        guard case .object(let languages) = value else { throw .badRequest("invalid JSON body: messages must be an object") }
        guard languages["en"] != nil else { throw .badRequest("invalid push messages: messages must include \"en\"") }
        for (language, text) in languages.sorted(by: { $0.key < $1.key }) {
            guard !language.isEmpty, language == language.trimmingWhitespace().lowercased() else {
                throw .badRequest("invalid push messages: language \"\(language)\" must be a trimmed, lowercase tag")
            }
            guard case .object(let members) = text else { throw .badRequest("invalid JSON body: messages[\(language)] must be an object") }
            var title = "", body = ""
            for (name, member) in members {
                guard case .string(let string) = member else {
                    throw .badRequest("invalid JSON body: messages[\(language)].\(name) must be a string")
                }
                if name == "title" { title = string } else if name == "body" { body = string }
            }
            if body.trimmingWhitespace().isEmpty { throw .badRequest("invalid push messages: messages[\(language)].body must not be blank") }
            if title.count > 48 { throw .badRequest("invalid push messages: messages[\(language)].title is \(title.count) runes, max 48") }
            if body.count > 120 { throw .badRequest("invalid push messages: messages[\(language)].body is \(body.count) runes, max 120") }
        }
    }

    func start(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alerts.alert(call)
            let body = try call.body(emptyAllowed: true)
            var audience = AlertSend.Audience.all
            switch body["audience"] {
            case nil, .null?: break
            case .string(let text)?:
                switch text.trimmingWhitespace() {
                case "", "all": audience = .all
                case "test": audience = .test
                default: throw ReferenceFailure.badRequest("audience must be \"all\" or \"test\"")
                }
            default: throw ReferenceFailure.badRequest("invalid JSON body: audience must be a string")
            }
            var messages: AlertSend.Messages?
            if let given = body["messages"], given != .null {
                try Self.checkMessages(given)
                do { messages = try api.administration.pushMessages(given) } catch {
                    throw ReferenceFailure.badRequest("invalid push messages: " + error.messages.joined(separator: "; "))
                }
            }
            guard alert.published else { throw ReferenceFailure.status(409, "alert is not published") }
            if alert.test { audience = .test }
            if try await store.sends.list(alertID: alert.id).contains(where: { $0.status == "running" }) {
                throw ReferenceFailure.status(409, "a push for this alert is already queued or sending")
            }
            guard try await store.sends.audienceCount(regionID: alert.regionID, audience: audience) > 0 else {
                throw ReferenceFailure.status(409, "no registered devices in the audience")
            }
            let (send, _) = try await api.administration(for: call.caller).startSend(id: alert.id, audience: audience, messages: messages)
            sends.launch(send)
            return ReferenceAdminAPI.json(202, Self.json(send, alert: alert, translations: try await store.translations(alertID: alert.id)))
        } catch { return api.failure(error, notFound: "alert", invalidStatus: 409) }
    }

    /// The alert's pushes, newest first.
    func list(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alerts.alert(call)
            let translations = try await store.translations(alertID: alert.id)
            let rows = try await store.sends.list(alertID: alert.id).sorted { $0.id > $1.id }
            return ReferenceAdminAPI.json(200, .array(rows.map { Self.json($0, alert: alert, translations: translations) }))
        } catch { return api.failure(error, notFound: "alert") }
    }

    func cancel(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alerts.alert(call)
            let pushID = try call.pathID("pushId")
            guard let send = try await store.sends.send(id: pushID), send.alertID == alert.id else {
                return ReferenceAdminAPI.error(404, "alert push not found")
            }
            guard try await api.administration(for: call.caller).cancelSend(alertID: alert.id, sendID: send.id) else {
                return ReferenceAdminAPI.error(409, "alert push already completed")
            }
            return .empty(204)
        } catch { return api.failure(error, notFound: "alert push") }
    }

    /// Who a push of this alert would reach, by platform; `forced_test` when
    /// it is a test alert (its pushes go to test devices only).
    func audience(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let alert = try await alerts.alert(call)
            let counts = try await registrations.platformCounts(regionID: alert.regionID)
            return ReferenceAdminAPI.json(
                200,
                .object([
                    ("all", AlarmReferenceRoutes.json(counts.all)), ("test", AlarmReferenceRoutes.json(counts.test)),
                    ("forced_test", .bool(alert.test)),
                ]))
        } catch { return api.failure(error, notFound: "alert") }
    }
}

extension AlertPushReferenceRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) {
        self.init(
            api: api, alerts: AlertReferenceRoutes(api, context), store: context.stores.alerts, registrations: context.stores.pushRegistrations,
            sends: context.alertSends)
    }
}

extension AlertPushReferenceRoutes: Feature {}
