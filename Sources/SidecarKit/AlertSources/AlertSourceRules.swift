import Core
import Crypto
import GTFSRealtime

/// Alert sources as pure functions: settings, which URLs may be polled,
/// when to poll again, and whether a new or changed alert pushes.
enum AlertSourceRules {
    static let defaultIntervalSeconds = 60
    static let minimumIntervalSeconds = 15
    static let maximumIntervalSeconds = 86_400
    static let defaultMaxBytes = 8 << 20
    static let defaultFloodThreshold = 20
    /// Sources one region may have.
    static let maximumSourcesPerRegion = 20
    /// Seconds a poll may take, connection included: no longer than the
    /// shortest interval, so a hanging upstream never stacks polls.
    static let timeoutSeconds = 15
    /// A change this soon after a push is a correction: it does not push
    /// again unless the source says so.
    static let correctionWindowSeconds: Int64 = 600
    /// After this long failing, a source is flagged stale (its last good
    /// alerts stay in the feed).
    static let staleAfterSeconds: Int64 = 3600

    // MARK: Settings

    /// A source from the CLI's or the admin API's fields (the CLI's flag
    /// names with underscores: `url`, `min_severity`, ...), over `base` when editing.
    static func settings(_ fields: [String: String], regionID: Int, base: AlertSource?, now: Int64) -> Result<AlertSource, ValidationFailure> {
        var source =
            base
            ?? AlertSource(
                id: 0, regionID: regionID, url: "", mode: .mirror, intervalSeconds: defaultIntervalSeconds, push: .review,
                minSeverity: .warning, effects: [], scope: .route, quietHours: nil, audience: .all, floodThreshold: defaultFloodThreshold,
                pushCorrections: false, headers: [], allowLinkLocal: false, maxBytes: defaultMaxBytes, createdAt: now, updatedAt: now)
        var messages: [String] = []
        func value<T>(_ name: String, _ parse: (String) -> T?, _ message: String) -> T? {
            guard let raw = fields[name] else { return nil }
            guard let parsed = parse(raw.trimmingCharacters(in: .whitespaces)) else {
                messages.append(message)
                return nil
            }
            return parsed
        }
        if let url = fields["url"] {
            source.url = url.trimmingCharacters(in: .whitespaces)
        } else if base == nil {
            messages.append("--url is required")
        }
        if let mode = value("mode", { AlertSource.Mode(rawValue: $0) }, "--mode must be mirror or push-only") { source.mode = mode }
        if let interval = value(
            "interval", { Int($0).flatMap { (minimumIntervalSeconds...maximumIntervalSeconds).contains($0) ? $0 : nil } },
            "--interval must be a number of seconds from \(minimumIntervalSeconds) to \(maximumIntervalSeconds)")
        {
            source.intervalSeconds = interval
        }
        if let push = value("push", { AlertSource.PushMode(rawValue: $0) }, "--push must be off, auto or review") { source.push = push }
        if let level = value(
            "min_severity", { SeverityLevel(name: $0) },
            "--min-severity must be one of \(SeverityLevel.allCases.map(\.name).joined(separator: ", "))")
        {
            source.minSeverity = level
        }
        if let effects = value("effects", parseEffects, "--effects must be a comma-separated list of GTFS-realtime effects (e.g. DETOUR,NO_SERVICE)")
        {
            source.effects = effects
        }
        if let scope = value("scope", { AlertSource.Scope(rawValue: $0) }, "--scope must be agency, route or any") { source.scope = scope }
        if let raw = fields["quiet_hours"] {
            if raw.isEmpty || raw == "none" {
                source.quietHours = nil
            } else if let hours = parseQuietHours(raw) {
                source.quietHours = hours
            } else {
                messages.append("--quiet-hours must look like 22:00-06:30 (local time in the region's zone), or none")
            }
        }
        if let audience = value("audience", { AlertSend.Audience(rawValue: $0) }, "--audience must be all or test") { source.audience = audience }
        if let threshold = value(
            "flood_threshold", { Int($0).flatMap { (1...10_000).contains($0) ? $0 : nil } }, "--flood-threshold must be a number from 1 to 10000")
        {
            source.floodThreshold = threshold
        }
        if let corrections = value("push_corrections", parseBool, "--push-corrections must be true or false") {
            source.pushCorrections = corrections
        }
        if let allow = value("allow_link_local", parseBool, "--allow-link-local must be true or false") { source.allowLinkLocal = allow }
        if let bytes = value(
            "max_bytes", { Int($0).flatMap { (1024...(64 << 20)).contains($0) ? $0 : nil } },
            "--max-bytes must be a number of bytes from 1024 to 67108864")
        {
            source.maxBytes = bytes
        }
        if fields["header_file"] != nil || fields["header_env"] != nil {
            var headers: [AlertSource.SecretHeader] = []
            for (flag, file) in [("header_file", true), ("header_env", false)] {
                for item in (fields[flag] ?? "").split(separator: ",") {
                    if let header = parseHeader(String(item), file: file) {
                        headers.append(header)
                    } else {
                        messages.append(
                            file
                                ? "--header-file must be NAME:PATH (a header name, then the file holding its value)"
                                : "--header-env must be NAME:VARIABLE (a header name, then the environment variable holding its value)")
                    }
                }
            }
            source.headers = headers
        }
        // Checked whenever there is a URL to keep (an empty one too); a
        // missing one on a new source was refused above.
        if base != nil || fields["url"] != nil, let problem = urlProblem(source.url, allowLinkLocal: source.allowLinkLocal) {
            messages.append(problem)
        }
        messages += FieldLimits.check([("URL", source.url, FieldLimits.url)])
        source.updatedAt = now
        return messages.isEmpty ? .success(source) : .failure(ValidationFailure(messages))
    }

    static func parseBool(_ raw: String) -> Bool? {
        switch raw.lowercased() {
        case "true", "yes", "1", "on": return true
        case "false", "no", "0", "off": return false
        default: return nil
        }
    }

    /// `DETOUR,NO_SERVICE`; empty: any effect.
    static func parseEffects(_ raw: String) -> [Effect]? {
        var effects: [Effect] = []
        for name in raw.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard let effect = Effect(name: name) else { return nil }
            if !effects.contains(effect) { effects.append(effect) }
        }
        return effects
    }

    /// `22:00-06:30`.
    static func parseQuietHours(_ raw: String) -> QuietHours? {
        let ends = raw.split(separator: "-", omittingEmptySubsequences: false)
        guard ends.count == 2, let start = minutes(ends[0]), let end = minutes(ends[1]), start != end else { return nil }
        return QuietHours(start: start, end: end)
    }

    private static func minutes(_ text: Substring) -> Int? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 2, parts[1].count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }

    /// `X-Api-Key:/etc/sidecar/key` (file) or `X-Api-Key:FEED_KEY` (environment).
    static func parseHeader(_ raw: String, file: Bool) -> AlertSource.SecretHeader? {
        guard let colon = raw.firstIndex(of: ":") else { return nil }
        let name = String(raw[..<colon]).trimmingCharacters(in: .whitespaces)
        let rest = String(raw[raw.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        let token = name.unicodeScalars.allSatisfy {
            $0.properties.isAlphabetic && $0.isASCII || ("0"..."9").contains($0) || "-_".unicodeScalars.contains($0)
        }
        guard !name.isEmpty, name.count <= 64, token, !rest.isEmpty, rest.count <= 1024 else { return nil }
        if file { return AlertSource.SecretHeader(name: name, origin: .file(rest)) }
        guard rest.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }) else {
            return nil
        }
        return AlertSource.SecretHeader(name: name, origin: .environment(rest))
    }

    /// Stored `NAME:file:PATH` / `NAME:env:VARIABLE` lines.
    static func storedHeaders(_ text: String) -> [AlertSource.SecretHeader] {
        text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3 else { return nil }
            return AlertSource.SecretHeader(name: parts[0], origin: parts[1] == "env" ? .environment(parts[2]) : .file(parts[2]))
        }
    }

    // MARK: Where a source may point

    /// Names of cloud metadata services (their addresses are link-local or
    /// listed in `forbiddenAddress`).
    static let metadataHosts: Set<String> = ["metadata.google.internal", "metadata", "metadata.azure.internal", "instance-data"]

    /// Why a URL cannot be a source, or nil. Loopback and private addresses
    /// are allowed (an agency's exporter often runs on the same host or
    /// network); link-local and metadata addresses only with `allowLinkLocal`.
    static func urlProblem(_ url: String, allowLinkLocal: Bool) -> String? {
        guard let parts = urlParts(url) else { return "--url must be an http:// or https:// URL with a host" }
        if !allowLinkLocal && (metadataHosts.contains(parts.host) || isLinkLocalOrMetadata(parts.host)) {
            return "--url points at a link-local or cloud metadata address (\(parts.host)); pass --allow-link-local true if that is really the feed"
        }
        return nil
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

    /// 169.254.0.0/16, fe80::/10, and the metadata addresses clouds use
    /// outside those (AWS's IPv6 one, Alibaba's).
    static func isLinkLocalOrMetadata(_ address: String) -> Bool {
        let lowered = address.lowercased()
        if let octets = ipv4(lowered) { return (octets[0] == 169 && octets[1] == 254) || lowered == "100.100.100.200" }
        if lowered.contains(":") {
            if lowered == "fd00:ec2::254" { return true }
            // ::ffff:169.254.x.y, an IPv4 address written as IPv6.
            if lowered.hasPrefix("::ffff:"), let octets = ipv4(String(lowered.dropFirst(7))) { return octets[0] == 169 && octets[1] == 254 }
            let first = lowered.split(separator: ":", omittingEmptySubsequences: false).first ?? ""
            guard let group = UInt16(first, radix: 16), first.count == 4 else { return false }
            return group & 0xFFC0 == 0xFE80
        }
        return false
    }

    /// Loopback and any-address spellings: with the server's own port, the
    /// server itself.
    static func isLoopback(_ address: String) -> Bool {
        let lowered = address.lowercased()
        if let octets = ipv4(lowered) { return octets[0] == 127 || octets == [0, 0, 0, 0] }
        return ["::1", "::", "localhost", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"].contains(lowered) || lowered.hasSuffix(".localhost")
    }

    /// Whether a connection to `address:port` must be refused: link-local
    /// and metadata addresses (unless allowed), and this server's own
    /// listener, which would poll itself.
    static func refuses(address: String, port: Int, allowLinkLocal: Bool, ownHost: String, ownPort: Int?) -> Bool {
        if !allowLinkLocal && isLinkLocalOrMetadata(address) { return true }
        guard let ownPort, port == ownPort else { return false }
        // Listening on every interface, the server is also reachable at the
        // machine's other addresses; loopback is the one a URL names for it.
        return isLoopback(address) || address.lowercased() == ownHost.lowercased()
    }

    private static func ipv4(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let octets = parts.compactMap { part -> Int? in
            guard !part.isEmpty, part.count <= 3, let value = Int(part), (0...255).contains(value) else { return nil }
            return value
        }
        return octets.count == 4 ? octets : nil
    }

    // MARK: When to poll

    /// Seconds until the next poll: the interval, or after failures the
    /// interval doubled per failure up to an hour, spread ±20% so sources
    /// failing together do not retry together. `random` is in 0..<1.
    static func nextDelay(intervalSeconds: Int, failures: Int, random: Double) -> Int {
        guard failures > 0 else { return intervalSeconds }
        let doubled = Double(intervalSeconds) * Double(1 << min(failures, 10))
        return max(Int(min(doubled, 3600) * (0.8 + 0.4 * random)), minimumIntervalSeconds)
    }

    // MARK: Whether an alert pushes

    /// What one poll decides for one alert.
    enum Outcome: Equatable, Sendable {
        /// Present at the first successful poll.
        case baseline
        /// Nothing worth a push changed: the decision made before stands.
        case unchanged
        case skip(String)
        case review(String)
        case deferred(until: Int64, reason: String)
        case push

        /// Would reach riders unless held: what a flood counts.
        var isCandidate: Bool {
            switch self {
            case .push, .deferred, .review: return true
            default: return false
            }
        }
    }

    /// The decision for an alert seen in a poll, before the flood check.
    static func outcome(
        _ alert: MirroredAlert, previous: SourceAlertState?, source: AlertSource, baseline: Bool, now: Int64, zone: ZoneInfo
    ) -> Outcome {
        if baseline { return .baseline }
        // Unchanged, or back after leaving the source as it was: pushed (or
        // decided) once already.
        if let previous, previous.materialHash == alert.materialHash { return .unchanged }
        switch source.push {
        case .off: return .skip("push is off for this source")
        case .auto, .review: break
        }
        if alert.severity.rank < source.minSeverity.rank {
            return .skip("severity \(alert.severity.name) is below \(source.minSeverity.name)")
        }
        if !source.effects.isEmpty && !source.effects.contains(alert.effect) {
            return .skip("effect \(alert.effect.name) is not one that pushes (\(source.effects.map(\.name).joined(separator: ", ")))")
        }
        if alert.scope > source.scope {
            return .skip(alert.scope == .any ? "scoped to single stops or trips" : "scoped to single routes")
        }
        if let end = alert.endsAt, end.value <= now { return .skip("already over") }
        if let pushedAt = previous?.pushedAt, now - pushedAt < correctionWindowSeconds, !source.pushCorrections {
            return .skip("a correction within 10 minutes of its push: not pushed again")
        }
        if source.push == .review { return .review("waiting for an editor") }
        if let hours = source.quietHours, let until = quietUntil(now: now, zone: zone, hours: hours) {
            return .deferred(until: until, reason: "quiet hours \(hours.text)")
        }
        return .push
    }

    /// Above the source's threshold, every candidate of a poll waits for
    /// review: a vendor bug listing 200 alerts at once is not 200 pushes.
    static func holdingFlood(_ outcomes: [Outcome], threshold: Int) -> (outcomes: [Outcome], held: String?) {
        let candidates = outcomes.filter(\.isCandidate).count
        guard candidates > threshold else { return (outcomes, nil) }
        let reason =
            "held as a possible flood: \(candidates) alerts appeared or changed in one poll (more than \(threshold)); check the source before approving"
        return (outcomes.map { $0.isCandidate ? .review(reason) : $0 }, reason)
    }

    /// When quiet hours end, if `now` is inside them (the next local time
    /// at their end, in the region's zone).
    static func quietUntil(now: Int64, zone: ZoneInfo, hours: QuietHours) -> Int64? {
        let local = now + Int64(zone.offset(at: now))
        let dayStart = local - ((local % 86_400) + 86_400) % 86_400
        let minute = Int((local - dayStart) / 60)
        let inside = hours.start < hours.end ? (hours.start..<hours.end).contains(minute) : (minute >= hours.start || minute < hours.end)
        guard inside else { return nil }
        var end = dayStart + Int64(hours.end) * 60
        if end <= local { end += 86_400 }
        return zone.instant(fromLocal: end)
    }
}

extension SeverityLevel {
    /// Order for a minimum: UNKNOWN_SEVERITY < INFO < WARNING < SEVERE.
    var rank: Int { rawValue }
}
