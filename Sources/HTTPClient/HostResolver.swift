import PlatformThreads

#if canImport(Glibc)
import Glibc
#endif

/// Host names resolved off the cooperative pool (`getaddrinfo` blocks), for
/// checking where a request through a proxy will go before sending it.
public enum HostResolver {
    private static let pool = WorkerPool(name: "resolver", threads: 2, queueCapacity: 32)

    /// The addresses `host` resolves to (IPv4 dotted, IPv6 textual); an
    /// address literal is itself. Empty when it does not resolve or the
    /// resolver is saturated.
    public static func addresses(of host: String) async -> [String] {
        await pool.run { resolve(host) } ?? []
    }

    static func resolve(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var first: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &first) == 0 else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ai_next }
            guard let address = entry.pointee.ai_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if entry.pointee.ai_family == AF_INET {
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    var raw = inet.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                }
            } else if entry.pointee.ai_family == AF_INET6 {
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet in
                    var raw = inet.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                }
            } else {
                continue
            }
            if let end = text.firstIndex(of: 0), end > 0 {
                let address = String(decoding: text[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !addresses.contains(address) { addresses.append(address) }
            }
        }
        return addresses
    }
}
