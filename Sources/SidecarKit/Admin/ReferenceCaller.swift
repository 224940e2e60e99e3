/// Who calls the Go reference's admin contract: a key presented as a bearer
/// (`obask_…` region key, `obasp_…` service principal, or one of Sidecar's
/// own keys), or a console account signed in through
/// `POST /api/admin/v1/session`, which is what the reference calls an
/// operator. A console account acts with its own role and regions, exactly
/// as it does in the console.
enum ReferenceCaller: Sendable {
    case key(ApiKeyStore.Record)
    case person(ConsoleStore.User)

    /// Who did it, as a key's `created_by` and `revoked_by` and the audit log record it.
    var actorTag: String {
        switch self {
        case .key(let key): return key.actorTag
        case .person(let user): return "user:" + user.email
        }
    }

    /// The name the administration code records changes under: the console's
    /// `user:<email>` for a person (so two-person approval knows a person
    /// asked), `apikey:<name>#<id>` for a key.
    var actingName: String {
        switch self {
        case .key(let key): return "apikey:\(key.name)#\(key.id)"
        case .person(let user): return "user:" + user.email
        }
    }

    /// The per-caller request budget's key.
    var limiterKey: String {
        switch self {
        case .key(let key): return "key:\(key.id)"
        case .person(let user): return "user:\(user.id)"
        }
    }

    /// The principal that mints a key, recorded on it; nil for anyone else.
    var mintingPrincipalID: Int64? {
        guard case .key(let key) = self, key.isPrincipal else { return nil }
        return key.id
    }

    /// Whether this caller may act on a region: a key within its regions, a
    /// person within their account's.
    func allows(region: Int) -> Bool {
        switch self {
        case .key(let key): return !key.isPrincipal && key.allows(region: region)
        case .person(let user): return ConsoleRules.mayAccess(region: region, allowed: user.regions)
        }
    }

    /// Whether this caller may mint a key of one region, with or without `push`.
    func mayGrant(region: Int, push: Bool) -> Bool {
        switch self {
        case .key(let key): return key.mayGrant(regions: [region], push: push, admin: false)
        case .person(let user):
            return ConsoleRules.may(user.role, .manageKeys) && ConsoleRules.mayAccess(region: region, allowed: user.regions)
        }
    }
}
