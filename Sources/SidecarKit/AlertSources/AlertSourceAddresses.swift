import Core

/// Where a source may point. A source's URL is a request this server makes
/// on someone's behalf every interval, with the source's secret headers:
/// by default it may reach only the internet. Loopback, private (RFC 1918,
/// unique-local) and shared (CGNAT) addresses need the source's
/// `allow_private`, link-local and cloud metadata addresses its
/// `allow_link_local`, and this server's own listener is never polled. The
/// check runs on the host a URL names when a source is saved and on the
/// address each connection actually reached (so a name that resolves
/// elsewhere a moment later cannot slip past it).
enum AlertSourceAddresses {
    /// What one source has been allowed to reach beyond the internet.
    struct Allowance: Sendable, Equatable {
        var linkLocal = false
        var `private` = false
    }

    /// This server's listener: with its port, loopback, the any-address,
    /// the host it binds and the machine's own interface addresses are
    /// this server itself.
    struct OwnListener: Sendable {
        var host: String
        var port: Int?
        var localAddresses: Set<String> = []
    }

    /// Names of cloud metadata services (their addresses are link-local or
    /// listed in `metadataAddresses`).
    static let metadataHosts: Set<String> = ["metadata.google.internal", "metadata", "metadata.azure.internal", "instance-data"]
    /// Metadata services outside link-local space: AWS's IPv6 one, Alibaba's.
    static let metadataAddresses: Set<String> = ["fd00:ec2::254", "100.100.100.200"]

    /// The kind of place a URL's host names, when the name alone says so
    /// (an address literal, `localhost`, a metadata name); nil for a name
    /// only its resolution can tell.
    static func kind(ofHost host: String) -> IPAddress.Kind? {
        let lowered = host.lowercased()
        if metadataHosts.contains(lowered) { return .linkLocal }
        if lowered == "localhost" || lowered.hasSuffix(".localhost") { return .loopback }
        return kind(ofAddress: lowered)
    }

    /// An address's kind, metadata services counted as link-local.
    static func kind(ofAddress address: String) -> IPAddress.Kind? {
        let bare = address.split(separator: "%", maxSplits: 1).first.map(String.init) ?? address
        guard let parsed = IPAddress(bare) else { return nil }
        if metadataAddresses.contains(parsed.description) { return .linkLocal }
        return parsed.kind
    }

    /// Why a source may not reach a place of this kind, or nil; the
    /// allowance is named as `naming` names fields.
    static func refusal(_ kind: IPAddress.Kind, allowance: Allowance, naming: AlertSourceRules.FieldNaming = .api) -> String? {
        func allowed(_ field: String) -> String {
            naming == .commandLine ? "\(naming.name(field)) true" : naming == .console ? "“\(naming.name(field))”" : field
        }
        switch kind {
        case .global: return nil
        case .linkLocal:
            return allowance.linkLocal
                ? nil : "a link-local or cloud metadata address, which a source reaches only when allowed (\(allowed("allow_link_local")))"
        case .loopback, .private, .shared, .unspecified:
            let name = kind == .shared ? "shared (CGNAT)" : kind == .loopback ? "loopback" : "private"
            return allowance.private ? nil : "a \(name) address, which a source reaches only when allowed (\(allowed("allow_private")))"
        case .reserved: return "a multicast or reserved address"
        }
    }

    /// Why a source with this URL may not be saved, or nil.
    static func urlProblem(_ url: String, allowance: Allowance, own: OwnListener, naming: AlertSourceRules.FieldNaming = .api) -> String? {
        guard let parts = urlParts(url) else { return "the URL must be an http:// or https:// URL with a host" }
        if isOwnListener(parts.host, port: parts.port, own: own) {
            return "the URL points at this server's own listener (\(parts.host):\(parts.port)); a source must be another feed"
        }
        guard let kind = kind(ofHost: parts.host), let reason = refusal(kind, allowance: allowance, naming: naming) else { return nil }
        return "the URL points at \(parts.host), \(reason)"
    }

    /// Why a connection that reached `address:port` must be dropped before
    /// anything is sent, or nil.
    static func connectionRefusal(address: String, port: Int, allowance: Allowance, own: OwnListener) -> String? {
        if isOwnListener(address, port: port, own: own) { return "this server itself" }
        // An address the parser cannot read is not one a check can pass.
        guard let kind = kind(ofAddress: address) else { return "an address that could not be read" }
        return refusal(kind, allowance: allowance)
    }

    static func isOwnListener(_ host: String, port: Int, own: OwnListener) -> Bool {
        guard let ownPort = own.port, port == ownPort else { return false }
        let lowered = host.lowercased()
        if let kind = kind(ofHost: lowered), kind == .loopback || kind == .unspecified { return true }
        let bare = IPAddress(lowered)?.description ?? lowered
        return lowered == own.host.lowercased() || own.localAddresses.contains(bare)
    }

    /// Scheme, lower-cased host (brackets removed) and port of an http(s) URL.
    static func urlParts(_ url: String) -> (scheme: String, host: String, port: Int)? {
        let lowered = url.lowercased()
        let scheme: String
        if lowered.hasPrefix("http://") { scheme = "http" } else if lowered.hasPrefix("https://") { scheme = "https" } else { return nil }
        let rest = lowered.dropFirst(scheme.count + 3)
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard !authority.isEmpty, !url.contains(where: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\\" }) else { return nil }
        var host = Substring(authority)
        var port = scheme == "https" ? 443 : 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if after.hasPrefix(":") {
                guard let number = Int(after.dropFirst()), (1...65535).contains(number) else { return nil }
                port = number
            } else if !after.isEmpty {
                return nil
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = Int(host[host.index(after: colon)...]), (1...65535).contains(number) else { return nil }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty else { return nil }
        return (scheme, String(host.hasSuffix(".") ? host.dropLast() : host), port)
    }
}
