import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// A send's live progress: the table on the alert's page and the JSON its
/// script polls (the failure's reason and Resume link included).
extension AlertSendConsolePages {
    /// `1,000`.
    static func grouped(_ number: Int) -> String {
        let digits = String(number)
        var output = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { output += "," }
            output.append(character)
        }
        return output
    }

    /// The failure in words staff can act on.
    static func plainError(_ send: AlertSend) -> String {
        guard let error = send.lastError?.presence else { return "the push provider kept failing" }
        return error
    }

    func sendsTable(alert: ServiceAlert, _ sendList: [AlertSend], remaining: [Int64: Int], session: ConsoleStore.Session, zone: ZoneInfo) -> HTML {
        guard !sendList.isEmpty else { return tag("p", [.class("empty")], ["Not sent yet."]) }
        func cell(_ name: StaticString, _ value: any HTMLContent) -> HTML { tag("td", [Attribute("data-field", name.description)], [value]) }
        var rows: [any HTMLContent] = []
        for send in sendList.reversed() {
            let settled = send.delivered + send.failed
            let total = max(send.audienceSize, send.targeted, 1)
            let percent = min(100, settled * 100 / total)
            rows.append(
                tag(
                    "tr", [Attribute("data-send-id", String(send.id))],
                    [
                        tag("td", [Attribute("data-label", "Send")], [send.id]),
                        tag("td", [Attribute("data-label", "Audience")], [send.audience == .all ? "everyone" : "test devices"]),
                        cell("status", send.shownStatus),
                        tag(
                            "td", [Attribute("data-label", "Progress")],
                            [
                                tag(
                                    "span", [.class("meter"), Attribute("role", "img"), Attribute("aria-label", "\(percent)% settled")],
                                    [
                                        tag("span", [Attribute("data-field", "bar"), Attribute("style", "width: \(percent)%")])
                                    ]),
                                tag(
                                    "span", [Attribute("data-field", "summary")],
                                    [
                                        "\(Self.grouped(send.delivered)) of \(Self.grouped(send.audienceSize)) delivered, \(Self.grouped(send.failed)) failed, "
                                            + "\(Self.grouped(send.pending)) pending"
                                    ]),
                            ]),
                        cell("pruned", send.pruned),
                        tag("td", [Attribute("data-label", "Started")], [RegionTime.display(send.startedAt, zone)]),
                    ]))
            if let since = send.stalledSince, send.status == "running" {
                rows.append(
                    tag(
                        "tr", [.class("failure"), Attribute("data-stalled-for", String(send.id))],
                        [
                            tag(
                                "td", [Attribute("colspan", "6")],
                                [
                                    tag("strong", [], ["No progress since \(RegionTime.display(since, zone)): "]),
                                    "\(send.lastError ?? "the push transport has not answered"). It goes on by itself when the transport answers.",
                                ])
                        ]))
            }
            if send.status == "failed" {
                let left = send.undelivered(remainingAfterCursor: remaining[send.id] ?? 0)
                var cells: [any HTMLContent] = [tag("strong", [], ["It stopped: ", Self.plainError(send), ". "])]
                if ConsoleRules.may(session.user.role, send.audience == .all ? .sendToEveryone : .sendToTestDevices), left > 0 {
                    cells.append(
                        tag(
                            "a", [.href("/admin/alerts/\(alert.id)/send?audience=\(send.audience.rawValue)"), .class("button secondary")],
                            ["Resume: \(Self.grouped(left)) not yet delivered"]))
                }
                rows.append(
                    tag("tr", [.class("failure"), Attribute("data-failure-for", String(send.id))], [tag("td", [Attribute("colspan", "6")], cells)]))
            }
        }
        return .join([
            tag(
                "p", [.class("lost"), Attribute("data-lost", "true"), Attribute("hidden", nil), Attribute("role", "status")],
                ["Lost contact with the server: the counts below are not current. Retrying…"]),
            // Said aloud when a send ends (the script fills it in).
            tag("p", [.class("notice"), Attribute("data-send-outcome", "true"), Attribute("aria-live", "polite"), Attribute("hidden", nil)], []),
            tag(
                "div", [.class("table-wrap"), Attribute("data-sends-url", "/admin/alerts/\(alert.id)/sends.json")],
                [
                    tag(
                        "table", [.class("progress stack"), Attribute("aria-live", "polite"), Attribute("aria-relevant", "text")],
                        [
                            tag("caption", [], ["Sends of this alert, newest first (updated live while one runs)"]),
                            tag(
                                "thead", [],
                                [
                                    tag(
                                        "tr", [],
                                        ["Send", "Audience", "Status", "Progress", "Pruned", "Started"].map {
                                            tag("th", [Attribute("scope", "col")], [$0])
                                        })
                                ]),
                            tag("tbody", [], rows),
                        ])
                ]),
        ])
    }

    /// The sends' progress the alert page polls: the admin API's shape, and
    /// for a failed send the reason in plain words and, when this user may
    /// resume it, the Resume link, so the page shows them without a reload.
    func sendsJSON(_ alert: ServiceAlert, _ session: ConsoleStore.Session) async -> Response {
        do {
            var items: [JSONValue] = []
            for send in try await alerts.sends.list(alertID: alert.id) {
                guard case .object(var fields) = AdminJSON.send(send) else { continue }
                if send.status == "failed" {
                    fields["reason"] = .string(Self.plainError(send))
                    let left = send.undelivered(
                        remainingAfterCursor: (try? await alerts.sends.audienceCount(
                            regionID: alert.regionID, audience: send.audience, after: send.cursor))
                            ?? 0)
                    if ConsoleRules.may(session.user.role, send.audience == .all ? .sendToEveryone : .sendToTestDevices), left > 0 {
                        fields["resume_href"] = .string("/admin/alerts/\(alert.id)/send?audience=\(send.audience.rawValue)")
                        fields["resume_label"] = .string("Resume: \(Self.grouped(left)) not yet delivered")
                    }
                }
                items.append(.object(fields))
            }
            return Response.json(200, JSONValue.array(items)).adding(header: "Cache-Control", "no-store")
        } catch { return unavailable(error) }
    }
}
