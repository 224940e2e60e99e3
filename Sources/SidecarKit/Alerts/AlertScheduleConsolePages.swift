import Core
import HTML
import HTTPServer

/// An alert's scheduled sends on its page: listed with their time in the
/// region's zone, added (at its start or a chosen time), cancelled while
/// still to go; a held one says why and offers sending it now. Sending to
/// everyone needs an admin, as a send does.
struct AlertScheduleConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [
            authoredAlertRoute("POST", "/admin/alerts/:alert/schedules", .sendToTestDevices) { request, context, alert in
                await add(request, context, alert)
            },
            authoredAlertRoute("POST", "/admin/alerts/:alert/schedules/cancel", .sendToTestDevices) { request, context, alert in
                await cancel(request, context, alert)
            },
        ]
    }

    /// The section of an alert's page.
    func section(_ session: ConsoleStore.Session, alert: ServiceAlert, schedules: [AlertSchedule], zone: ZoneInfo) -> HTML {
        let role = session.user.role
        guard ConsoleRules.may(role, .sendToTestDevices) else { return .empty }
        let rows: [[any HTMLContent]] = schedules.map { schedule in
            let when = RegionTime.display(schedule.runAt, zone) + (schedule.atStart ? " (its start)" : "")
            var state: [any HTMLContent] = [schedule.status.rawValue]
            if let reason = schedule.reason { state.append(": \(reason)") }
            if let send = schedule.sendID { state.append(" (send \(send))") }
            var actions: [any HTMLContent] = []
            if schedule.status == .held {
                actions.append(tag("a", [.href("/admin/alerts/\(alert.id)/send?audience=\(schedule.audience.rawValue)")], ["Send now…"]))
                actions.append(" ")
            }
            if schedule.isOpen && may(role, schedule.audience) {
                actions.append(
                    ConsoleLayout.postButton(
                        "Cancel", "/admin/alerts/\(alert.id)/schedules/cancel", session, hidden: [("schedule", String(schedule.id))]))
            }
            return [
                when, schedule.audience == .all ? "everyone" : "test devices", schedule.ifChanged == .hold ? "wait for an editor" : "do not send",
                tag("span", [], state), HTML.join(actions),
            ]
        }
        let audiences: [(value: String, label: String)] =
            ConsoleRules.may(role, .sendToEveryone) && !alert.test ? [("all", "Everyone"), ("test", "Test devices")] : [("test", "Test devices")]
        return tag(
            "section", [.id("schedules")],
            [
                tag("h2", [], ["Scheduled sends"]),
                ConsoleLayout.table(
                    caption: "Sends that go later, times in \(zone.identifier)", headers: ["When", "To", "If the alert changes", "State", ""],
                    rows: rows, empty: "None scheduled."),
                ConsoleLayout.form(
                    "/admin/alerts/\(alert.id)/schedules", session,
                    [
                        tag(
                            "div", [.class("columns")],
                            [
                                ConsoleLayout.field(
                                    "Send at", name: "at_time", value: nil, type: "datetime-local",
                                    hint: zoneHint(zone) + " Leave empty to send at its start."),
                                ConsoleLayout.select("To", name: "audience", options: audiences, selected: audiences.first?.value),
                                ConsoleLayout.select(
                                    "If the alert is edited, withdrawn or ended first", name: "if_changed",
                                    options: [("hold", "Wait for an editor"), ("skip", "Do not send")], selected: "hold"),
                            ]),
                        tag(
                            "p", [.class("hint")],
                            ["A running server sends it within 10 seconds of its time, once, whichever of its instances looks first."]),
                        tag("div", [.class("actions")], [tag("button", [Attribute("type", "submit")], ["Schedule send"])]),
                    ]),
            ])
    }

    func may(_ role: ConsoleRole, _ audience: AlertSend.Audience) -> Bool {
        ConsoleRules.may(role, audience == .all ? .sendToEveryone : .sendToTestDevices)
    }

    func add(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let audience = request.parameters["audience"] ?? "test"
        guard may(context.session.user.role, AlertSend.Audience(rawValue: audience) ?? .all) else {
            return ConsoleLayout.errorPage(403, "Not allowed", "Scheduling a send to everyone needs an admin, as sending does.")
        }
        let zone = await zone(regionID: alert.regionID)
        var at = "start"
        if let typed = request.parameters["at_time"]?.trimmingWhitespace(), !typed.isEmpty {
            guard let instant = RegionTime.parse(typed, zone) else {
                return ConsoleLayout.errorPage(422, "Not scheduled", "Send at must be a date and time such as 2026-12-01T08:00.")
            }
            at = Timestamp.format(instant)
        }
        do {
            _ = try await administration(context.session).schedule(
                alertID: alert.id, at: at, audience: audience, ifChanged: request.parameters["if_changed"])
            return .seeOther("/admin/alerts/\(alert.id)?done=scheduled#schedules")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not scheduled", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }

    func cancel(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        guard let id = request.parameters["schedule"].flatMap({ Int64($0) }) else { return notFound() }
        do {
            let schedule = try await administration(context.session).schedule(id: id, alertID: alert.id)
            guard may(context.session.user.role, schedule.audience) else {
                return ConsoleLayout.errorPage(403, "Not allowed", "Cancelling a send to everyone needs an admin, as sending does.")
            }
            // A refresh or a second click finds it cancelled already: nothing else happens.
            if schedule.isOpen { try await administration(context.session).cancelSchedule(id: id) }
            return .seeOther("/admin/alerts/\(alert.id)?done=schedule-cancelled#schedules")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not cancelled", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }
}

extension AlertScheduleConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
