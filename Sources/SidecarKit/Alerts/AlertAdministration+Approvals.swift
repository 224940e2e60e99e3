import Core

/// Two-person approval: in a region that asks for it, publishing an alert
/// and sending it to everyone wait for a second person (not the one who
/// asked, and never an API key or a job), who approves or rejects the
/// request in the console or the CLI; requests lapse after a day.
extension AlertAdministration {
    var approvals: ApprovalStore { ApprovalStore(database: store.database) }

    /// Asks for approval, and stops the action, when the region wants two people.
    func requireApproval(_ alert: ServiceAlert, _ action: ApprovalRequest.Action) async throws {
        guard try await RegionSettingsStore(database: store.database).settings(regionID: alert.regionID)?.requiresApproval == true else { return }
        let request = try await approvals.ask(regionID: alert.regionID, alertID: alert.id, action: action, by: actor, now: now)
        if request.requestedAt == now && request.requestedBy == actor {
            await record(
                "alert.approval.request", region: alert.regionID, target: "alert \(alert.id)", detail: "request \(request.id); \(action.rawValue)")
        }
        throw AdministrationError.approvalPending(
            requestID: request.id,
            message:
                "Region \(alert.regionID) asks a second person to approve \(action.words): request \(request.id) waits for them "
                + "(the alert's page in the console, or sidecar approval approve \(request.id)); it lapses in a day")
    }

    /// Approves a request and does what it asked; the send it starts, if any,
    /// is returned for the caller to run.
    func approve(requestID: Int64) async throws -> (request: ApprovalRequest, send: AlertSend?) {
        guard let request = try await approvals.find(id: requestID) else { throw AdministrationError.notFound("No approval request \(requestID)") }
        if let refusal = ApprovalRules.refusal(request, by: actor, now: now) { throw AdministrationError.invalid([refusal]) }
        guard try await approvals.decide(id: requestID, status: .approved, by: actor, now: now) else {
            throw AdministrationError.invalid(["request \(requestID) was decided a moment ago by someone else"])
        }
        await record("alert.approval.approve", region: request.regionID, target: "alert \(request.alertID)", detail: "request \(requestID)")
        var send: AlertSend?
        switch request.action {
        case .publish: _ = try await setPublished(id: request.alertID, true, approved: true)
        case .send: send = try await startSend(id: request.alertID, audience: .all, approved: true).0
        }
        return (try await approvals.find(id: requestID) ?? request, send)
    }

    /// Rejects (or, for the one who asked, withdraws) a pending request.
    func reject(requestID: Int64) async throws -> ApprovalRequest {
        guard let request = try await approvals.find(id: requestID) else { throw AdministrationError.notFound("No approval request \(requestID)") }
        guard ApprovalRules.isOpen(request, now: now) else { throw AdministrationError.invalid(["request \(requestID) no longer waits"]) }
        guard ApprovalRules.isPerson(actor) else {
            throw AdministrationError.invalid(["an approval is a person's: an API key or a job cannot decide it"])
        }
        guard try await approvals.decide(id: requestID, status: .rejected, by: actor, now: now) else {
            throw AdministrationError.invalid(["request \(requestID) was decided a moment ago by someone else"])
        }
        await record("alert.approval.reject", region: request.regionID, target: "alert \(request.alertID)", detail: "request \(requestID)")
        return try await approvals.find(id: requestID) ?? request
    }
}
