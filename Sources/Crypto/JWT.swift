import COpenSSL
import Core
import FoundationEssentials

/// Why a key could not be used.
public struct CryptoError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A private key from PEM (PKCS#8 `.p8` for APNs, the RSA key of a Google
/// service account for FCM), kept as an OpenSSL EVP key.
public final class PrivateKey: @unchecked Sendable {
    // EVP_PKEY signing with a fresh context per call is thread-safe in OpenSSL 3.
    let key: OpaquePointer

    public enum Algorithm: Sendable { case es256, rs256 }
    public let algorithm: Algorithm

    public init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            // BIO_new_mem_buf does not copy: the buffer outlives the read.
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else { throw CryptoError("not a PEM private key") }
        switch EVP_PKEY_get_base_id(loaded) {
        case EVP_PKEY_EC: algorithm = .es256
        case EVP_PKEY_RSA: algorithm = .rs256
        default:
            EVP_PKEY_free(loaded)
            throw CryptoError("the key is neither EC P-256 nor RSA")
        }
        key = loaded
    }

    /// Takes ownership of an OpenSSL key.
    init(adopting key: OpaquePointer, algorithm: Algorithm) {
        self.key = key
        self.algorithm = algorithm
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs with SHA-256: ES256 as the raw 64-byte r||s JOSE expects, RS256 as PKCS#1 v1.5.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, OpenSSLDigest.sha256, nil, key) == 1 else { throw CryptoError("sign init failed") }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1 else {
            throw CryptoError("sign failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        let status = signature.withUnsafeMutableBufferPointer { output in
            message.withUnsafeBufferPointer { EVP_DigestSign(context, output.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        guard status == 1 else { throw CryptoError("sign failed") }
        signature.removeLast(signature.count - length)
        guard algorithm == .es256 else { return signature }
        return try Self.rawECDSA(fromDER: signature)
    }

    /// DER ECDSA-Sig-Value → 32-byte r || 32-byte s.
    static func rawECDSA(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &pointer, buffer.count)
        }
        guard let parsed else { throw CryptoError("malformed ECDSA signature") }
        defer { ECDSA_SIG_free(parsed) }
        var raw = [UInt8](repeating: 0, count: 64)
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed) else { throw CryptoError("malformed ECDSA signature") }
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(r, buffer.baseAddress, 32) + BN_bn2binpad(s, buffer.baseAddress! + 32, 32)
        }
        guard written == 64 else { throw CryptoError("ECDSA signature does not fit P-256") }
        return raw
    }
}

/// JSON Web Tokens for provider authentication (APNs ES256, Google OAuth RS256).
public enum JWT {
    /// `base64url(header).base64url(claims).base64url(signature)`; header
    /// fields (`kid`) and claims are given as ordered JSON members.
    public static func sign(header extra: [(String, String)], claims: [(String, JWTClaim)], key: PrivateKey) throws(CryptoError) -> String {
        let algorithm = key.algorithm == .es256 ? "ES256" : "RS256"
        let header = object([("alg", .string(algorithm)), ("typ", .string("JWT"))] + extra.map { ($0.0, .string($0.1)) })
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(object(claims).utf8))
        return signingInput + "." + Base64URL.encode(try key.sign(Array(signingInput.utf8)))
    }

    static func object(_ members: [(String, JWTClaim)]) -> String {
        "{" + members.map { "\(quote($0.0)):\($0.1.json)" }.joined(separator: ",") + "}"
    }

    static func quote(_ text: String) -> String { jsonQuoted(text) }
}

/// A claim value.
public enum JWTClaim: Sendable {
    case string(String)
    case integer(Int64)

    var json: String {
        switch self {
        case .string(let text): return JWT.quote(text)
        case .integer(let value): return String(value)
        }
    }
}
