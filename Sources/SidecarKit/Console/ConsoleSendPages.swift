import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Sending an alert: the confirmation, the start, and its live progress.
extension ConsoleRoutes {
    func sendsTable(alert: ServiceAlert, _ sendList: [AlertSend], zone: ZoneInfo) -> HTML {
        guard !sendList.isEmpty else { return tag("p", [.class("empty")], ["Not sent yet."]) }
        func cell(_ name: StaticString, _ value: any HTMLContent) -> HTML { tag("td", [Attribute("data-field", name.description)], [value]) }
        return tag("div", [.class("table-wrap"), Attribute("data-sends-url", "/admin/alerts/\(alert.id)/sends.json")], [
            tag("table", [.class("progress")], [
                tag("caption", [], ["Sends of this alert (updated live while one runs)"]),
                tag("thead", [], [tag("tr", [], ["Send", "Audience", "Status", "Targeted", "Delivered", "Failed", "Pruned", "Started"].map {
                    tag("th", [Attribute("scope", "col")], [$0])
                })]),
                tag("tbody", [], sendList.map { send in
                    tag("tr", [Attribute("data-send-id", String(send.id))], [
                        tag("td", [], [send.id]), tag("td", [], [send.audience.rawValue]), cell("status", send.status), cell("targeted", send.targeted),
                        cell("delivered", send.delivered), cell("failed", send.failed), cell("pruned", send.pruned),
                        tag("td", [], [RegionTime.display(send.startedAt, zone)]),
                    ])
                }),
            ]),
        ])
    }

    /// The audience a send form names, or the page refusing it.
    enum AudienceChoice { case chosen(AlertSend.Audience), refused(Response) }

    func audience(_ request: Request, _ session: ConsoleStore.Session) -> AudienceChoice {
        guard let audience = AlertSend.Audience(rawValue: request.parameters["audience"] ?? "") else {
            return .refused(ConsoleLayout.errorPage(422, "Choose an audience", "Send to test devices or to everyone."))
        }
        if audience == .all && !ConsoleRules.may(session.user.role, .sendToEveryone) {
            return .refused(ConsoleLayout.errorPage(403, "Not allowed", "Only an administrator may send to everyone. Send to test devices instead."))
        }
        return .chosen(audience)
    }

    func confirmSend(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let audience: AlertSend.Audience
        switch self.audience(request, context.session) {
        case .chosen(let chosen): audience = chosen
        case .refused(let response): return response
        }
        let count: Int
        do { count = try await alerts.audienceCount(regionID: alert.regionID, audience: audience) } catch { return unavailable(error) }
        let who = audience == .test ? "\(count) test device\(count == 1 ? "" : "s")" : "everyone: \(count) device\(count == 1 ? "" : "s")"
        let content: [any HTMLContent] = [
            tag("p", [], ["This pushes “", alert.header, "” to ", tag("strong", [], [who]), " in \(context.region?.name ?? "this region"). It cannot be undone."]),
            alert.published ? HTML.empty : tag("p", [.class("problems")], ["The alert is not published; publish it first."]),
            ConsoleLayout.form("/admin/alerts/\(alert.id)/sends", context.session, [
                tag("input", [Attribute("type", "hidden"), Attribute("name", "audience"), Attribute("value", audience.rawValue)]),
                tag("div", [.class("actions")], [
                    tag("button", [Attribute("type", "submit"), .class(audience == .all ? "danger" : "primary")], ["Send to \(who)"]),
                    tag("a", [.href("/admin/alerts/\(alert.id)")], ["Cancel"]),
                ]),
            ]),
        ]
        return ConsoleLayout.respond(200, ConsoleLayout.page("Send alert \(alert.id)?", context, content))
    }

    func startSend(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let audience: AlertSend.Audience
        switch self.audience(request, context.session) {
        case .chosen(let chosen): audience = chosen
        case .refused(let response): return response
        }
        guard sends.transport != nil else {
            return ConsoleLayout.errorPage(409, "No push transport", "This server has no push transport configured (--gorush-url or direct APNs/FCM).")
        }
        do {
            let (send, _) = try await administration(context.session).startSend(id: alert.id, audience: audience)
            sends.launch(send)
            return .seeOther("/admin/alerts/\(alert.id)?done=sending#sends")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not sent", error.messages.joined(separator: " "))
        } catch AlertStoreError.busy {
            return ConsoleLayout.errorPage(409, "Already sending", "This send is running on another server; its progress shows on the alert's page.")
        } catch { return unavailable(error) }
    }

    func sendsJSON(_ alert: ServiceAlert) async -> Response {
        do {
            return Response.json(200, JSONValue.array(try await alerts.sends(alertID: alert.id).map(AdminJSON.send)))
                .adding(header: "Cache-Control", "no-store")
        } catch { return unavailable(error) }
    }
}
