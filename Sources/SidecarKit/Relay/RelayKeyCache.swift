import Crypto
import Synchronization

/// The public keys of the servers sending through this relay, parsed once.
/// Building an OpenSSL key and checking that its point is on the curve costs
/// more than verifying a signature, and a relay hears from few servers, each
/// many times a second. Bounded: emptied when full, so a flood of fresh keys
/// costs only what it cost before.
final class RelayKeyCache: Sendable {
    let capacity: Int
    private let keys = Mutex<[String: PublicKeyP256]>([:])

    init(capacity: Int = 4096) { self.capacity = capacity }

    /// The key a JWK names, parsed and checked the first time it is seen.
    func key(for jwk: RelayProtocol.PublicJWK) throws(RelayProtocol.Failure) -> PublicKeyP256 {
        let name = jwk.canonical
        if let known = keys.withLock({ $0[name] }) { return known }
        let key = try jwk.key()
        keys.withLock { keys in
            if keys.count >= capacity { keys.removeAll(keepingCapacity: true) }
            keys[name] = key
        }
        return key
    }

    /// Keys held (tests).
    var count: Int { keys.withLock { $0.count } }
}
