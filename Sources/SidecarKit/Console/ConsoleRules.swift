import Core

/// Issue 15: who may do what in the admin console, and the account rules.
/// Pure functions, tested table by table.

/// A console account's role. Each includes what the one before may do.
enum ConsoleRole: String, Sendable, CaseIterable, Comparable {
    /// Reads every page of its regions.
    case viewer
    /// Also authors, translates, publishes and sends to test devices.
    case editor
    /// Also sends to everyone and manages API keys and accounts.
    case admin

    var rank: Int { ConsoleRole.allCases.firstIndex(of: self)! }
    static func < (lhs: ConsoleRole, rhs: ConsoleRole) -> Bool { lhs.rank < rhs.rank }
}

/// Something a console user may be allowed to do.
enum ConsoleAction: Sendable, CaseIterable {
    case read
    case author
    case sendToTestDevices
    case sendToEveryone
    case manageKeys
    /// Set a region's agency id and time zone.
    case manageRegion

    /// The least role allowed.
    var minimumRole: ConsoleRole {
        switch self {
        case .read: return .viewer
        case .author, .sendToTestDevices: return .editor
        case .sendToEveryone, .manageKeys, .manageRegion: return .admin
        }
    }
}

enum ConsoleRules {
    static func may(_ role: ConsoleRole, _ action: ConsoleAction) -> Bool { role >= action.minimumRole }

    /// A user limited to some regions sees only those (nil: every region).
    static func mayAccess(region: Int, allowed: Set<Int>?) -> Bool { allowed?.contains(region) ?? true }

    /// Whether a user whose regions are `allowed` may see and revoke a key
    /// scoped to `keyRegions` (nil: every region): only keys whose regions
    /// all lie within the user's own. A user of every region manages all.
    static func mayManageKey(keyRegions: Set<Int>?, allowed: Set<Int>?) -> Bool {
        guard let allowed else { return true }
        guard let keyRegions else { return false }
        return keyRegions.isSubset(of: allowed)
    }

    static let minimumPasswordLength = 12
    static let maximumPasswordLength = 1024

    /// Problems with a new password (empty when acceptable).
    static func passwordProblems(_ password: String, email: String) -> [String] {
        var problems: [String] = []
        if password.count < minimumPasswordLength { problems.append("the password must have at least \(minimumPasswordLength) characters") }
        if password.utf8.count > maximumPasswordLength { problems.append("the password must have at most \(maximumPasswordLength) bytes") }
        if !email.isEmpty && password.lowercased() == email.lowercased() { problems.append("the password must not be the email address") }
        if password.count >= minimumPasswordLength && Set(password).count < 4 { problems.append("the password repeats too few characters") }
        return problems
    }

    /// Emails are stored lower-cased; a plausible address has one `@`, text
    /// on both sides, a dot in the domain, no spaces or controls, at most 254 bytes.
    static func normalizedEmail(_ raw: String) -> String? {
        let email = raw.trimmingWhitespace().lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
            !parts[1].hasSuffix("."),
            email.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !"<>\"',;".unicodeScalars.contains($0) })
        else { return nil }
        return email
    }

    /// A session ends after this long without a request.
    static let idleSeconds: Int64 = 12 * 3600
    /// And in any case this long after login.
    static let absoluteSeconds: Int64 = 7 * 24 * 3600
    /// How often `last_seen_at` is written (not on every request).
    static let touchEverySeconds: Int64 = 60

    static func sessionIsLive(createdAt: EpochSeconds, lastSeenAt: EpochSeconds, now: EpochSeconds) -> Bool {
        now.seconds(since: lastSeenAt) < idleSeconds && now.seconds(since: createdAt) < absoluteSeconds && lastSeenAt <= now.adding(seconds: 60)
    }

    /// Failed logins allowed per account in `loginWindowSeconds` before
    /// that account is refused for the rest of the window, and attempts
    /// per client address.
    static let failuresPerAccount = 10
    static let attemptsPerClient = 30
    static let loginWindowSeconds = 900
}
