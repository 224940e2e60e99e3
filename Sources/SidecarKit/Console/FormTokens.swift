import Core
import Crypto

/// Tokens this server issued for a form: signed with a secret the database
/// keeps for every instance (HMAC-SHA-256), bound to a purpose and, for a
/// signed-in user, to their session, and valid for a while. A token the
/// client made up never verifies.
final class FormTokens: Sendable {
    let store: ConsoleStore
    static let lifetimeSeconds: Int64 = 3600
    private let secret: StoredSecret

    init(store: ConsoleStore) {
        self.store = store
        secret = StoredSecret(store: store, name: "form-token")
    }

    private func key() async throws -> [UInt8] { try await secret.value() }

    static func tag(_ key: [UInt8], purpose: String, nonce: String, expires: EpochSeconds) -> String {
        Base64URL.encode(HMACSHA256.tag(key: key, Array("\(purpose)\n\(nonce)\n\(expires.value)".utf8)))
    }

    /// `<nonce>.<expiry>.<signature>` for `purpose` (`login`, or a session's
    /// action such as `send:<session>:<alert>`).
    func issue(purpose: String, now: EpochSeconds) async throws -> String {
        let nonce = Base64URL.encode(SecureRandom.bytes(18))
        let expires = now.adding(seconds: Self.lifetimeSeconds)
        return "\(nonce).\(expires.value).\(Self.tag(try await key(), purpose: purpose, nonce: nonce, expires: expires))"
    }

    /// A token this server issued for `purpose` that has not expired.
    func isValid(_ token: String, purpose: String, now: EpochSeconds) async -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 200, let expires = Int64(parts[1]).map({ EpochSeconds($0) }), expires > now,
            expires <= now.adding(seconds: Self.lifetimeSeconds), let key = try? await key()
        else { return false }
        return SecureCompare.equal(String(parts[2]), Self.tag(key, purpose: purpose, nonce: String(parts[0]), expires: expires))
    }

    enum Use { case first, repeated, invalid }

    /// Spends a single-use token: `first` once, `repeated` for every later
    /// submission of the same form (a refresh, a double click, a second
    /// instance), `invalid` for one this server did not issue.
    func spend(_ token: String, purpose: String, now: EpochSeconds) async throws -> Use {
        guard await isValid(token, purpose: purpose, now: now) else { return .invalid }
        return try await store.spendFormToken(
            Base64URL.encode(SHA256.digest(Array(token.utf8))), now: now,
            forgetBefore: now.adding(seconds: -Self.lifetimeSeconds)) ? .first : .repeated
    }
}
