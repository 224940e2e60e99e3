import COpenSSL

/// Cryptographic randomness from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// `count` random bytes. Traps if the system CSPRNG fails, because
    /// carrying on would hand out guessable tokens.
    public static func bytes(_ count: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let status = buffer.withUnsafeMutableBytes { RAND_bytes($0.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        precondition(status == 1, "RAND_bytes failed; refusing to issue predictable tokens")
        return buffer
    }
}

/// Unguessable resource tokens (spec §2.4).
public enum SecureToken {
    /// 128 random bits as 22 URL-safe base64 characters (no padding).
    public static func urlSafe() -> String { Base64URL.encode(SecureRandom.bytes(16)) }

    /// `bytes` random bytes as lower-case hex (survey responses and ghost-bus
    /// reports use 10 bytes = 20 hex characters).
    public static func hex(bytes: Int = 10) -> String { Hex.encode(SecureRandom.bytes(bytes)) }
}

/// Unpadded base64url (RFC 4648 §5).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in stride(from: 18, through: 0, by: -6) { output.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let chunk = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
        } else if rest == 2 {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            output.append(alphabet[Int(chunk >> 6 & 63)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of base64url text in its one canonical spelling (no
    /// padding, unused trailing bits zero), or nil: two texts never decode
    /// to the same bytes, so a text can stand for its bytes.
    public static func decodeCanonical(_ text: String) -> [UInt8]? {
        guard let bytes = decode(text), encode(bytes) == text else { return nil }
        return bytes
    }

    /// The bytes of unpadded (or padded) base64url text, or nil when it is not.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var trimmed = Substring(text)
        while trimmed.hasSuffix("=") { trimmed = trimmed.dropLast() }
        for byte in trimmed.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 4 <= values.count {
            let chunk = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6 | UInt32(values[index + 3])
            output += [UInt8(chunk >> 16), UInt8(chunk >> 8 & 255), UInt8(chunk & 255)]
            index += 4
        }
        let rest = values.count - index
        if rest == 2 {
            let chunk = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12
            output.append(UInt8(chunk >> 16))
        } else if rest == 3 {
            let chunk = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6
            output += [UInt8(chunk >> 16), UInt8(chunk >> 8 & 255)]
        }
        return output
    }
}

/// Lower-case hexadecimal.
public enum Hex {
    /// The bytes of an even-length hexadecimal string, or nil.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 15)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// SHA-256 (OpenSSL EVP).
public enum SHA256 {
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        output.withUnsafeMutableBufferPointer { target in
            let hashed = bytes.withContiguousStorageIfAvailable { source in
                EVP_Digest(source.baseAddress, source.count, target.baseAddress, nil, OpenSSLDigest.sha256, nil)
            }
            if hashed == nil {
                _ = Array(bytes).withUnsafeBufferPointer { source in
                    EVP_Digest(source.baseAddress, source.count, target.baseAddress, nil, OpenSSLDigest.sha256, nil)
                }
            }
        }
        return output
    }

    /// A short, non-reversible fingerprint for logs where an operator needs
    /// to correlate lines about one secret without ever seeing it.
    public static func fingerprint(_ text: String) -> String {
        String(Hex.encode(digest(Array(text.utf8))).prefix(12))
    }
}

/// SHA-256's implementation, fetched from OpenSSL's default provider once.
/// `EVP_sha256()` makes each use look the implementation up again, which
/// cost more than hashing a push token itself (about 340 of 560 ns, measured
/// with OpenSSL 3.0); a fetched implementation is immutable and may be shared
/// by every thread.
enum OpenSSLDigest {
    private final class Fetched: @unchecked Sendable {
        let pointer: OpaquePointer?
        init(_ name: String) { pointer = EVP_MD_fetch(nil, name, nil) }
    }

    private static let fetchedSHA256 = Fetched("SHA256")

    /// The fetched SHA-256, or OpenSSL's built-in handle if fetching failed.
    static var sha256: OpaquePointer { fetchedSHA256.pointer ?? EVP_sha256() }
}

/// HMAC-SHA-256 (OpenSSL): a tag only the holder of `key` can make.
public enum HMACSHA256 {
    public static func tag(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        _ = key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                output.withUnsafeMutableBufferPointer { target in
                    HMAC(
                        OpenSSLDigest.sha256, keyBytes.baseAddress, Int32(keyBytes.count), messageBytes.baseAddress, messageBytes.count,
                        target.baseAddress, &length)
                }
            }
        }
        return output
    }
}

/// Comparing secrets without leaking, through timing, how much of a guess
/// was right.
public enum SecureCompare {
    /// True when both strings are equal; the time taken does not depend on
    /// where they differ (their SHA-256 digests are compared with
    /// `CRYPTO_memcmp`, which also hides the lengths).
    public static func equal(_ presented: String, _ expected: String) -> Bool {
        let left = SHA256.digest(Array(presented.utf8))
        let right = SHA256.digest(Array(expected.utf8))
        return left.withUnsafeBytes { l in right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, l.count) == 0 } }
    }
}
