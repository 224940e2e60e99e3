import COpenSSL

/// Passwords stored as scrypt hashes (OpenSSL's `EVP_PBE_scrypt`), in the
/// self-describing form `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>` (salt and
/// hash in hexadecimal), so the work factor can be raised later and old hashes
/// still verify.
public enum PasswordHash {
    /// The work factor for new hashes: N = 2^15, r = 8, p = 1 takes 32 MiB
    /// and some 60 ms here, the parameters OWASP recommends for scrypt.
    public struct Parameters: Sendable, Equatable {
        public var logN: Int
        public var r: Int
        public var p: Int
        public init(logN: Int, r: Int, p: Int) {
            self.logN = logN
            self.r = r
            self.p = p
        }
        public static let standard = Parameters(logN: 15, r: 8, p: 1)
    }

    /// Hashes a password with a fresh 16-byte salt.
    public static func hash(_ password: String, parameters: Parameters = .standard) throws(CryptoError) -> String {
        let salt = SecureRandom.bytes(16)
        let derived = try derive(password, salt: salt, parameters: parameters)
        return "scrypt$\(parameters.logN)$\(parameters.r)$\(parameters.p)$\(Hex.encode(salt))$\(Hex.encode(derived))"
    }

    /// True when `password` produces `stored`; false for a wrong password or a
    /// malformed hash. The comparison does not leak where the bytes differ.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let logN = Int(parts[1]), let r = Int(parts[2]), let p = Int(parts[3]),
            (10...20).contains(logN), (1...32).contains(r), (1...16).contains(p),
            let salt = Hex.decode(String(parts[4])), let expected = Hex.decode(String(parts[5])), expected.count == 32,
            let derived = try? derive(password, salt: salt, parameters: Parameters(logN: logN, r: r, p: p))
        else { return false }
        return derived.withUnsafeBytes { left in
            expected.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, 32) == 0 }
        }
    }

    static func derive(_ password: String, salt: [UInt8], parameters: Parameters) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let secret = Array(password.utf8)
        let n = UInt64(1) << UInt64(parameters.logN)
        // Memory: 128 * r * N bytes, plus slack.
        let maxMemory = UInt64(128 * parameters.r) * n + 16 * 1024 * 1024
        let status = secret.withUnsafeBufferPointer { secretBytes in
            salt.withUnsafeBufferPointer { saltBytes in
                output.withUnsafeMutableBufferPointer { out in
                    secretBytes.withMemoryRebound(to: CChar.self) { passwordChars in
                        EVP_PBE_scrypt(
                            passwordChars.baseAddress, passwordChars.count, saltBytes.baseAddress, saltBytes.count,
                            n, UInt64(parameters.r), UInt64(parameters.p), maxMemory, out.baseAddress, out.count)
                    }
                }
            }
        }
        guard status == 1 else { throw CryptoError("scrypt failed") }
        return output
    }
}
