/// The text of a bearer credential, in the Go reference sidecar's formats
/// so that OBACloud and every script written for it can use Sidecar's keys
/// unchanged: `obask_<region>_<secret>` for a key of one region,
/// `obasp_<secret>` for a service principal. A key of several regions, or
/// an admin key, has no form there and keeps Sidecar's own `sidecar_<secret>`.
/// The prefix only helps a person tell keys apart: the stored hash of the
/// whole text decides, and a region in the text that is not the key's own
/// refuses it.
enum ApiKeyFormat {
    /// What a presented credential claims to be, read from its prefix alone.
    enum Claim: Equatable, Sendable {
        /// `obask_<region>_…`: a key of this one region.
        case regionKey(Int)
        /// `obasp_…`: a service principal.
        case principal
        /// `sidecar_…` (or `sidecar_sp_…`, a principal made before the reference's formats).
        case sidecar
    }

    /// The longest credential read at all: the reference refuses anything
    /// longer before hashing it (a real key is about 51 characters).
    static let maxLength = 128

    /// The text a new credential is given, around `secret` (43 characters
    /// of unpadded URL-safe base64 of 32 random bytes).
    static func mint(secret: String, principal: Bool, regions: Set<Int>?, isAdmin: Bool) -> String {
        if principal { return "obasp_" + secret }
        if !isAdmin, let regions, regions.count == 1, let region = regions.first { return "obask_\(region)_" + secret }
        return "sidecar_" + secret
    }

    /// The part of a credential listings show: its prefix and 6 characters of the secret.
    static func listedPrefix(_ key: String) -> String {
        let secretStart: String.Index
        if key.hasPrefix("obask_"), let separator = key.dropFirst(6).firstIndex(of: "_") {
            secretStart = key.index(after: separator)
        } else if let separator = key.firstIndex(of: "_") {
            secretStart = key.hasPrefix("sidecar_sp_") ? key.index(key.startIndex, offsetBy: 11) : key.index(after: separator)
        } else {
            secretStart = key.startIndex
        }
        return String(key[..<(key.index(secretStart, offsetBy: 6, limitedBy: key.endIndex) ?? key.endIndex)])
    }

    /// What `presented` claims to be, or nil for text that is no credential
    /// of ours: too long, no known prefix, an empty secret, or a region
    /// that is not a plain decimal number (`01`, `-1`, `1.0`).
    static func parse(_ presented: String) -> Claim? {
        guard presented.utf8.count <= maxLength else { return nil }
        guard let cut = presented.firstIndex(of: "_") else { return nil }
        let kind = presented[..<cut]
        let rest = presented[presented.index(after: cut)...]
        guard !rest.isEmpty else { return nil }
        switch kind {
        case "obasp": return .principal
        case "sidecar": return .sidecar
        case "obask":
            guard let second = rest.firstIndex(of: "_"), rest.index(after: second) < rest.endIndex else { return nil }
            guard let region = regionSegment(rest[..<second]) else { return nil }
            return .regionKey(region)
        default: return nil
        }
    }

    /// A region id as the reference writes it in paths and keys: `0` or a
    /// decimal number without a leading zero or sign, within Int64.
    static func regionSegment(_ text: Substring) -> Int? {
        guard let first = text.first, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        guard first != "0" || text.count == 1 else { return nil }
        return Int(text)
    }
}
