import Core

#if canImport(Glibc)
import Glibc
#endif

/// Client addresses as per-client limits see them.
enum ClientAddress {
    /// The key limits count under: an IPv4 address as is (IPv4-mapped IPv6
    /// as IPv4), an IPv6 address reduced to its /64 prefix, anything else
    /// unchanged.
    static func limitKey(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        guard var parsed = IPAddress(address) else { return address }
        if parsed.isIPv4 { return parsed.description }
        for index in 8..<16 { parsed.bytes[index] = 0 }
        return parsed.description + "/64"
    }
}

/// The proxies (load balancers, CDNs) whose forwarding headers are believed,
/// as `--trusted-proxies` lists them: `10.0.0.0/8,2001:db8::/32,127.0.0.1`.
public struct TrustedProxies: Sendable {
    struct Range: Sendable {
        let network: [UInt8]
        let prefixLength: Int

        func contains(_ address: IPAddress) -> Bool {
            var remaining = prefixLength
            for index in 0..<16 where remaining > 0 {
                let bits = min(remaining, 8)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address.bytes[index] & mask != network[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    let ranges: [Range]
    /// `--client-ip-header`, lower-cased (e.g. `cf-connecting-ip`): when set,
    /// its single value names the client instead of `X-Forwarded-For`.
    public let clientIPHeader: String?

    /// Most `X-Forwarded-For` entries examined (a longer chain is forged or
    /// broken; the right-most ones are the ones that count).
    static let maximumChain = 32

    /// Why a `--trusted-proxies` list cannot be used.
    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses a comma-separated list of addresses and CIDR ranges.
    public init(_ list: String, clientIPHeader: String? = nil) throws(ParseError) {
        var ranges: [Range] = []
        for item in list.split(separator: ",") {
            let entry = item.trimmingEdges(" \t")
            guard !entry.isEmpty else { continue }
            let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let address = IPAddress(parts[0]) else {
                throw ParseError(description: "'\(entry)' is not an IPv4 or IPv6 address or CIDR range")
            }
            let isIPv4 = !parts[0].contains(":")
            var length = isIPv4 ? 32 : 128
            if parts.count == 2 {
                guard let given = Int(parts[1]), given >= 0, given <= length else {
                    throw ParseError(description: "'\(entry)' has a prefix length outside 0...\(length)")
                }
                length = given
            }
            ranges.append(Range(network: address.bytes, prefixLength: isIPv4 ? 96 + length : length))
        }
        guard !ranges.isEmpty else { throw ParseError(description: "the list names no address") }
        self.ranges = ranges
        self.clientIPHeader = clientIPHeader.map { String($0.lowercased()) }
    }

    /// The same proxies, naming the client with `header` instead of
    /// `X-Forwarded-For` (nil: `X-Forwarded-For`).
    public func readingClient(from header: String?) -> TrustedProxies {
        TrustedProxies(ranges: ranges, clientIPHeader: header.map { $0.lowercased() })
    }

    private init(ranges: [Range], clientIPHeader: String?) {
        self.ranges = ranges
        self.clientIPHeader = clientIPHeader
    }

    /// Whether `address` is one of the trusted proxies.
    public func contains(_ address: String) -> Bool {
        guard let parsed = IPAddress(address) else { return false }
        return contains(parsed)
    }

    func contains(_ address: IPAddress) -> Bool { ranges.contains { $0.contains(address) } }

    /// The client's address for a request from `peer`: the peer itself
    /// unless it is trusted; then the single value of the client-IP header
    /// when one is configured, else the right-most `X-Forwarded-For` entry
    /// that is not itself a trusted proxy (entries to its left were written
    /// by the client and prove nothing). A missing or malformed value gives
    /// the peer: a forged header can never choose the address.
    public func clientAddress(peer: String, headers: [(name: String, value: String)]) -> String {
        guard let peerAddress = IPAddress(peer), contains(peerAddress) else { return peer }
        let normalizedPeer = peerAddress.description
        if let clientIPHeader {
            let values = headers.filter { $0.name == clientIPHeader }
            guard values.count == 1, let address = Self.address(in: values[0].value[...]) else { return normalizedPeer }
            return address.description
        }
        var entries: [Substring] = []
        for header in headers where header.name == "x-forwarded-for" {
            entries.append(contentsOf: header.value.split(separator: ",", omittingEmptySubsequences: false))
        }
        guard !entries.isEmpty else { return normalizedPeer }
        var walked = peerAddress
        for entry in entries.reversed().prefix(Self.maximumChain) {
            guard let address = Self.address(in: entry) else { return normalizedPeer }
            walked = address
            if !contains(address) { return address.description }
        }
        // Every entry examined is a trusted proxy: the client is the
        // left-most of them (a request made by the proxies themselves).
        return walked.description
    }

    /// One header entry as an address: trimmed; `[v6]`, `[v6]:port` and
    /// `v4:port` (some load balancers add the port) are accepted.
    static func address(in entry: Substring) -> IPAddress? {
        var text = entry.trimmingEdges(" \t")
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber) && rest.count > 1) else { return nil }
            text = text[text.index(after: text.startIndex)..<close]
        } else if let colon = text.firstIndex(of: ":"), text.lastIndex(of: ":") == colon {
            let port = text[text.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isNumber) else { return nil }
            text = text[..<colon]
        }
        return IPAddress(text)
    }
}

extension StringProtocol {
    /// Drops the given characters from both ends.
    func trimmingEdges(_ set: String) -> SubSequence {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return slice
    }
}
