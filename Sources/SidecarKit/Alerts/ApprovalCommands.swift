import Core

/// Two-person approval from the CLI: `approval list|approve|reject`. The
/// operator at the CLI is a person (`cli:<login>`), so they may approve a
/// request someone else made.
enum ApprovalCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "approval list", id: nil, access: .reads, summary: "A region's approval requests of the last week, the newest first",
            options: [OperatorCommands.region],
            run: { c in
                let regionID = try c.region()
                let zone = await c.zone(regionID: regionID)
                for request in try await c.administration.approvals.list(regionID: regionID, now: c.now) {
                    c.output(line(request, zone: zone, now: c.now))
                }
                return 0
            }),
        OperatorCommand(
            name: "approval approve", id: "ID", access: .changes,
            summary: "Approve a request someone else made: the alert is published, or its send to everyone starts", options: [],
            notes: "A send it starts is run by a running server (it takes it up when its lease lapses).",
            run: { c in
                let (request, send) = try await c.administration.approve(requestID: try c.id())
                c.output(
                    "approved request \(request.id): alert \(request.alertID) "
                        + (send.map { "send \($0.id) started (a running server runs it)" } ?? "is published"))
                return 0
            }),
        OperatorCommand(
            name: "approval reject", id: "ID", access: .changes, summary: "Reject a request (or withdraw your own)", options: [],
            run: { c in
                let request = try await c.administration.reject(requestID: try c.id())
                c.output("rejected request \(request.id): alert \(request.alertID) is not \(request.action == .publish ? "published" : "sent")")
                return 0
            }),
    ]

    /// `4  alert 12  publish  pending  asked by user:ann@agency.org at 2026-12-01T08:00:00-08:00`.
    static func line(_ request: ApprovalRequest, zone: ZoneInfo, now: EpochSeconds) -> String {
        let status = request.status == .pending && !ApprovalRules.isOpen(request, now: now) ? "lapsed" : request.status.rawValue
        return "\(request.id)\talert \(request.alertID)\t\(request.action.rawValue)\t\(status)\tasked by \(request.requestedBy) at "
            + RegionTime.iso8601(request.requestedAt, zone) + (request.decidedBy.map { "\tdecided by \($0)" } ?? "")
    }
}
