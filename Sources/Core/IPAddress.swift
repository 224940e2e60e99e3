#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address held as 16 bytes, IPv4 as IPv4-mapped IPv6
/// (`::ffff:a.b.c.d`) so one comparison serves both families and a mapped
/// peer matches an IPv4 range.
public struct IPAddress: Equatable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]

    /// Parses `192.0.2.1`, `2001:db8::1`, `::ffff:192.0.2.1`; nil for
    /// anything else (host names, ports, brackets, zone ids).
    public init?(_ text: some StringProtocol) {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        let string = String(text)
        if string.utf8.contains(UInt8(ascii: ":")) {
            var raw = in6_addr()
            guard inet_pton(AF_INET6, string, &raw) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &raw) { Array($0) }
        } else {
            var raw = in_addr()
            guard inet_pton(AF_INET, string, &raw) == 1 else { return nil }
            bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + withUnsafeBytes(of: &raw) { Array($0) }
        }
    }

    /// Whether this is an IPv4 address (or IPv4-mapped IPv6).
    public var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    /// IPv4 in dotted form (mapped addresses too), IPv6 in RFC 5952 form.
    public var description: String {
        if isIPv4 { return "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
        guard written != nil, let end = text.firstIndex(of: 0) else { return "::" }
        return String(decoding: text[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension IPAddress {
    /// What kind of place an address is, for deciding where an outbound
    /// request may go (RFC 6890's special-purpose registries).
    public enum Kind: String, Sendable {
        /// Reachable on the internet.
        case global
        /// 127.0.0.0/8, ::1.
        case loopback
        /// RFC 1918 (10/8, 172.16/12, 192.168/16) and unique-local fc00::/7.
        case `private`
        /// 100.64.0.0/10, carrier-grade NAT's shared space.
        case shared
        /// 169.254.0.0/16 and fe80::/10, where cloud metadata services live.
        case linkLocal = "link-local"
        /// 0.0.0.0/8 and ::, "this host".
        case unspecified
        /// Multicast, broadcast and reserved ranges: never a feed.
        case reserved
    }

    /// The address's kind; an IPv4 address inside IPv6 (mapped `::ffff:`,
    /// NAT64 `64:ff9b::/96`) is judged as IPv4.
    public var kind: Kind {
        if isIPv4 || (bytes[0] == 0x00 && bytes[1] == 0x64 && bytes[2] == 0xFF && bytes[3] == 0x9B && bytes[4..<12].allSatisfy { $0 == 0 }) {
            let (a, b) = (bytes[12], bytes[13])
            switch a {
            case 0: return .unspecified
            case 10: return .private
            case 127: return .loopback
            case 169 where b == 254: return .linkLocal
            case 172 where (16...31).contains(b): return .private
            case 192 where b == 168: return .private
            case 100 where (64...127).contains(b): return .shared
            case 192 where b == 0 && bytes[14] == 0: return .reserved  // IETF protocol assignments
            case 198 where b == 18 || b == 19: return .reserved  // benchmarking
            case 224...255: return .reserved  // multicast, reserved, broadcast
            default: return .global
            }
        }
        if bytes.allSatisfy({ $0 == 0 }) { return .unspecified }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return .loopback }
        if bytes[0] & 0xFE == 0xFC { return .private }
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return .linkLocal }
        if bytes[0] == 0xFF { return .reserved }
        // Other IPv4-compatible and reserved low addresses (::a.b.c.d).
        if bytes[0..<12].allSatisfy({ $0 == 0 }) { return .reserved }
        return .global
    }
}

extension IPAddress {
    /// The addresses of this machine's interfaces (`getifaddrs`), IPv4 in
    /// dotted form and IPv6 in RFC 5952 form: a server listening on every
    /// interface is reachable at each of them.
    public static func localInterfaceAddresses() -> Set<String> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var addresses: Set<String> = []
        var cursor = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    var raw = inet.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet in
                    var raw = inet.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                }
            default: continue
            }
            if let end = text.firstIndex(of: 0), end > 0,
                let parsed = IPAddress(String(decoding: text[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self))
            {
                addresses.insert(parsed.description)
            }
        }
        return addresses
    }
}
