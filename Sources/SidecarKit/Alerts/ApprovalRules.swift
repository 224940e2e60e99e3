import Core

/// A request that a second person approve publishing an alert or sending
/// it to everyone, in a region that asks for two people.
struct ApprovalRequest: Sendable, Equatable {
    enum Action: String, Sendable, CaseIterable {
        case publish
        /// A send to everyone.
        case send
        var words: String { self == .publish ? "publishing" : "sending to everyone" }
    }
    enum Status: String, Sendable { case pending, approved, rejected }
    var id: Int64
    var regionID: Int
    var alertID: Int64
    var action: Action
    var requestedBy: String
    var requestedAt: EpochSeconds
    var status: Status
    var decidedBy: String?
    var decidedAt: EpochSeconds?

    var expiresAt: EpochSeconds { requestedAt.adding(seconds: ApprovalRules.lifetimeSeconds) }
}

/// The rules of two-person approval. Pure.
enum ApprovalRules {
    /// A request no one decided within a day lapses (asked again, it is new).
    static let lifetimeSeconds: Int64 = 24 * 3600

    /// Whether a request still waits.
    static func isOpen(_ request: ApprovalRequest, now: EpochSeconds) -> Bool {
        request.status == .pending && now < request.expiresAt
    }

    /// A person, not a key or a job: console users (`user:`) and operators at
    /// the CLI (`cli:`) decide; API keys and the scheduler only ask.
    static func isPerson(_ actor: String) -> Bool { actor.hasPrefix("user:") || actor.hasPrefix("cli:") }

    /// Why `actor` may not decide `request` (nil: they may).
    static func refusal(_ request: ApprovalRequest, by actor: String, now: EpochSeconds) -> String? {
        if request.status != .pending { return "request \(request.id) was already \(request.status.rawValue)" }
        if now >= request.expiresAt {
            return "request \(request.id) lapsed at \(Timestamp.format(request.expiresAt)) (a day after it was made); ask again"
        }
        if !isPerson(actor) { return "an approval is a person's: an API key or a job can ask, not approve" }
        if actor == request.requestedBy { return "the person who asked cannot approve their own request: a second person must" }
        return nil
    }
}
