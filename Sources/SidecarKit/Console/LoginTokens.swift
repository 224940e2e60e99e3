import Crypto
import Synchronization

/// The sign-in form's anti-forgery token: issued by this server (signed with
/// a secret the database keeps for every instance), valid for an hour, and
/// expected both in the form and in its cookie. A double-submit token the
/// client could choose would let a forged form carry a pair of its own.
final class LoginTokens: Sendable {
    let store: ConsoleStore
    static let lifetimeSeconds: Int64 = 3600
    private let secret = Mutex<[UInt8]?>(nil)

    init(store: ConsoleStore) { self.store = store }

    private func key() async throws -> [UInt8] {
        if let known = secret.withLock({ $0 }) { return known }
        let loaded = try await store.secret(named: "login-token")
        secret.withLock { $0 = loaded }
        return loaded
    }

    static func tag(_ key: [UInt8], nonce: String, expires: Int64) -> String {
        Base64URL.encode(HMACSHA256.tag(key: key, Array("console-login\n\(nonce)\n\(expires)".utf8)))
    }

    /// `<nonce>.<expiry>.<signature>`.
    func issue(now: Int64) async throws -> String {
        let nonce = Base64URL.encode(SecureRandom.bytes(18))
        let expires = now + Self.lifetimeSeconds
        return "\(nonce).\(expires).\(Self.tag(try await key(), nonce: nonce, expires: expires))"
    }

    /// A token this server issued that has not expired.
    func isValid(_ token: String, now: Int64) async -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 200, let expires = Int64(parts[1]), expires > now,
              expires <= now + Self.lifetimeSeconds, let key = try? await key() else { return false }
        return SecureCompare.equal(String(parts[2]), Self.tag(key, nonce: String(parts[0]), expires: expires))
    }
}
