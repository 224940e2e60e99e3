#if canImport(Glibc)
import Glibc
#endif

/// Client addresses as per-client limits see them.
public enum ClientAddress {
    /// The key limits count under: an IPv4 address as is (IPv4-mapped IPv6
    /// as IPv4), an IPv6 address reduced to its /64 prefix, anything else
    /// unchanged.
    public static func limitKey(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        var raw = in6_addr()
        guard inet_pton(AF_INET6, address, &raw) == 1 else { return address }
        return withUnsafeMutableBytes(of: &raw) { bytes -> String in
            let isMapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            if isMapped { return "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])" }
            for index in 8..<16 { bytes[index] = 0 }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, bytes.baseAddress, &text, socklen_t(text.count)) != nil else { return address }
            return String(cString: text) + "/64"
        }
    }
}
