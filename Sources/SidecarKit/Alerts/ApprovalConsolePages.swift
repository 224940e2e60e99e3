import Core
import HTML
import HTTPServer

/// Approval requests on an alert's page: what waits for a second person,
/// with Approve for anyone else allowed to do it, and Reject (or withdraw).
struct ApprovalConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [
            authoredAlertRoute("POST", "/admin/alerts/:alert/approvals/approve", .author) { request, context, alert in
                await decide(request, context, alert, approve: true)
            },
            authoredAlertRoute("POST", "/admin/alerts/:alert/approvals/reject", .author) { request, context, alert in
                await decide(request, context, alert, approve: false)
            },
        ]
    }

    static func mayApprove(_ role: ConsoleRole, _ action: ApprovalRequest.Action) -> Bool {
        ConsoleRules.may(role, action == .publish ? .author : .sendToEveryone)
    }

    /// The section of an alert's page (nothing when no request was made).
    func section(_ session: ConsoleStore.Session, alert: ServiceAlert, requests: [ApprovalRequest], zone: ZoneInfo) -> HTML {
        guard !requests.isEmpty else { return .empty }
        let me = "user:" + session.user.email
        let rows: [[any HTMLContent]] = requests.map { request in
            let open = ApprovalRules.isOpen(request, now: now)
            var actions: [any HTMLContent] = []
            if open && request.requestedBy != me && Self.mayApprove(session.user.role, request.action) {
                actions.append(
                    ConsoleLayout.postButton(
                        "Approve", "/admin/alerts/\(alert.id)/approvals/approve", session, style: "primary", hidden: [("request", String(request.id))]
                    ))
                actions.append(" ")
            }
            if open {
                actions.append(
                    ConsoleLayout.postButton(
                        request.requestedBy == me ? "Withdraw" : "Reject", "/admin/alerts/\(alert.id)/approvals/reject", session,
                        hidden: [("request", String(request.id))]))
            }
            let state = request.status == .pending && !open ? "lapsed" : request.status.rawValue
            return [
                request.action.words, request.requestedBy, RegionTime.display(request.requestedAt, zone),
                state + (request.decidedBy.map { " by \($0)" } ?? ""), HTML.join(actions),
            ]
        }
        return tag(
            "section", [.id("approvals")],
            [
                tag("h2", [], ["Approvals"]),
                ConsoleLayout.table(
                    caption: "This region asks a second person to approve publishing and sending to everyone (times in \(zone.identifier))",
                    headers: ["Asked for", "By", "When", "State", ""], rows: rows),
            ])
    }

    func decide(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert, approve: Bool) async -> Response {
        guard let id = request.parameters["request"].flatMap({ Int64($0) }) else { return notFound() }
        let administration = administration(context.session)
        do {
            guard let asked = try await administration.approvals.find(id: id), asked.alertID == alert.id else { return notFound() }
            // A refresh or a second click finds it decided: nothing is done twice.
            guard asked.status == .pending else { return .seeOther("/admin/alerts/\(alert.id)?done=\(asked.status.rawValue)#approvals") }
            if approve {
                guard Self.mayApprove(context.session.user.role, asked.action) else {
                    return ConsoleLayout.errorPage(403, "Not allowed", "Approving a send to everyone needs an admin, as sending does.")
                }
                let (_, send) = try await administration.approve(requestID: id)
                if let send { services.alertSends.launch(send) }
            } else {
                _ = try await administration.reject(requestID: id)
            }
            return .seeOther("/admin/alerts/\(alert.id)?done=\(approve ? "approved" : "rejected")#approvals")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, approve ? "Not approved" : "Not rejected", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }
}

extension ApprovalConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
