import COpenSSL
import Core
import FoundationEssentials

/// P-256 keys for the signed push relay: a server's own key (generated
/// once, kept as PKCS#8 PEM), its public half as a JWK, and verification of
/// the raw r||s signatures the relay protocol carries.
extension PrivateKey {
    /// A fresh P-256 key.
    public static func generateP256() throws(CryptoError) -> PrivateKey {
        guard let key = sidecar_generate_p256() else { throw CryptoError("could not generate a P-256 key") }
        return PrivateKey(adopting: key, algorithm: .es256)
    }

    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public func pem() throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError("out of memory") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { throw CryptoError("could not write the key") }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard let pointer, length > 0 else { throw CryptoError("could not write the key") }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)), as: UTF8.self)
    }

    /// The public point of an EC P-256 key.
    public func publicKey() throws(CryptoError) -> PublicKeyP256 {
        guard algorithm == .es256 else { throw CryptoError("not an EC key") }
        var octets = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, "pub", &octets, octets.count, &length) == 1, length == 65, octets[0] == 4 else {
            throw CryptoError("could not read the public key")
        }
        return try PublicKeyP256(x: Array(octets[1..<33]), y: Array(octets[33..<65]))
    }
}

/// A P-256 public key, as a JWK's `x` and `y`.
public final class PublicKeyP256: @unchecked Sendable {
    public let x: [UInt8]
    public let y: [UInt8]
    let key: OpaquePointer

    // Parameter names and values OpenSSL keeps pointers to until it copies
    // them: stored for the life of the process.
    nonisolated(unsafe) static let groupKey: UnsafeMutablePointer<CChar> = strdup("group")
    nonisolated(unsafe) static let pubKey: UnsafeMutablePointer<CChar> = strdup("pub")
    static let groupName: [CChar] = Array("prime256v1".utf8CString)

    /// Refuses coordinates that are not 32 bytes or not a point on the curve.
    public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else { throw CryptoError("a P-256 coordinate is 32 bytes") }
        self.x = x
        self.y = y
        var point = [UInt8(4)] + x + y
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError("out of memory") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps pointers until to_param copies them: all in one scope.
        let built: OpaquePointer? = point.withUnsafeMutableBytes { bytes in
            Self.groupName.withUnsafeBufferPointer { group in
                guard OSSL_PARAM_BLD_push_utf8_string(builder, Self.groupKey, group.baseAddress, 0) == 1,
                    OSSL_PARAM_BLD_push_octet_string(builder, Self.pubKey, bytes.baseAddress, bytes.count) == 1
                else { return nil }
                return OSSL_PARAM_BLD_to_param(builder).map { OpaquePointer($0) }
            }
        }
        guard let built else { throw CryptoError("could not describe the key") }
        let parameters = UnsafeMutablePointer<OSSL_PARAM>(built)
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError("out of memory") }
        defer { EVP_PKEY_CTX_free(context) }
        var made: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &made, sidecar_public_key_selection(), parameters) == 1, let made
        else {
            throw CryptoError("not a point on P-256")
        }
        // The point must lie on the curve (fromdata alone does not check).
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, made, nil) else {
            EVP_PKEY_free(made)
            throw CryptoError("out of memory")
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check(check) == 1 else {
            EVP_PKEY_free(made)
            throw CryptoError("not a point on P-256")
        }
        key = made
    }

    deinit { EVP_PKEY_free(key) }

    /// True when `signature` (raw 64-byte r||s) signs `message` with SHA-256.
    public func verify(_ message: [UInt8], signature: [UInt8]) -> Bool {
        guard signature.count == 64, let der = Self.der(fromRaw: signature) else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, OpenSSLDigest.sha256, nil, key) == 1 else { return false }
        return der.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer { EVP_DigestVerify(context, signatureBytes.baseAddress, signatureBytes.count, $0.baseAddress, $0.count) }
        } == 1
    }

    /// P-256's group order n, big-endian.
    public static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// A raw r || s signature with s in the lower half of the group order
    /// (`(r, n − s)` for a high s), or nil when it is not 64 bytes with r and
    /// s in 1...n−1. ECDSA accepts both `(r, s)` and `(r, n − s)` for one
    /// message and key, so anything that must recognise a signature again
    /// (a replay window) keys on this form; verification accepts either.
    public static func lowS(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        let n = order.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        let half = BN_new()
        defer {
            BN_free(n)
            BN_free(r)
            BN_free(s)
            BN_free(half)
        }
        guard let n, let r, let s, let half, BN_rshift1(half, n) == 1,
            BN_is_zero(r) == 0, BN_is_zero(s) == 0, BN_cmp(r, n) < 0, BN_cmp(s, n) < 0
        else { return nil }
        guard BN_cmp(s, half) > 0 else { return raw }
        guard BN_sub(s, n, s) == 1 else { return nil }
        var normalized = Array(raw[0..<32]) + [UInt8](repeating: 0, count: 32)
        let written = normalized.withUnsafeMutableBufferPointer { BN_bn2binpad(s, $0.baseAddress! + 32, 32) }
        return written == 32 ? normalized : nil
    }

    /// 32-byte r || 32-byte s → DER ECDSA-Sig-Value.
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var pointer = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &pointer)
        }
        return written == length ? der : nil
    }
}
