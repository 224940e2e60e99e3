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
    /// Pushes one source's rules may start in an hour (each source setting
    /// may change it, 1 to 60).
    static let defaultPushesPerHour = 4
    /// Pushes all of a region's sources may start in an hour. Every source
    /// push goes to the region's whole audience (or its test devices), so
    /// this is also the most source pushes a device gets in an hour.
    static let pushesPerDevicePerHour = 6
    /// Validators longer than this are not stored (a hostile feed's ETag
    /// would otherwise be sent back, and kept, at every poll).
    static let maxValidatorLength = 1024
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

    /// How a settings message names a field: as the face the operator
    /// used does (`--min-severity`, `min_severity`, "Least severity that pushes").
    enum FieldNaming: Sendable, Equatable {
        case commandLine, api, console

        static let consoleLabels = [
            "url": "Feed URL", "mode": "Mode", "interval": "Poll every (seconds)", "push": "Pushes",
            "min_severity": "Least severity that pushes", "effects": "Effects that push", "scope": "Scope that pushes",
            "quiet_hours": "Quiet hours", "audience": "Audience", "flood_threshold": "Flood threshold",
            "push_corrections": "Push corrections", "max_bytes": "Largest feed (bytes)", "allow_link_local": "Allow link-local addresses",
            "allow_private": "Allow private addresses", "header_file": "Secret header (file)", "header_env": "Secret header (environment)",
        ]

        func name(_ field: String) -> String {
            switch self {
            case .commandLine: return "--" + field.replacing("_", with: "-")
            case .api: return field
            case .console: return Self.consoleLabels[field] ?? field
            }
        }
    }

    /// A source from the CLI's, the admin API's or the console's fields
    /// (the API's names: `url`, `min_severity`, ...), over `base` when
    /// editing. Messages name fields as `naming` says. A changed URL drops
    /// the stored secret headers and address allowances unless the same
    /// fields set them again: they were granted for the old feed, and must
    /// not follow a URL to another host.
    static func settings(
        _ fields: [String: String], regionID: Int, base: AlertSource?, now: EpochSeconds, naming: FieldNaming = .commandLine,
        own: AlertSourceAddresses.OwnListener = .init(host: "", port: nil)
    ) -> Result<AlertSource, ValidationFailure> {
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
                messages.append(naming.name(name) + " " + message)
                return nil
            }
            return parsed
        }
        if let url = fields["url"] {
            let trimmed = url.trimmingCharacters(in: .whitespaces)
            if let base, trimmed != base.url {
                source.headers = []
                source.allowPrivate = false
                source.allowLinkLocal = false
            }
            source.url = trimmed
        } else if base == nil {
            messages.append(naming.name("url") + " is required")
        }
        if let mode = value("mode", { AlertSource.Mode(rawValue: $0) }, "must be mirror or push-only") { source.mode = mode }
        if let interval = value(
            "interval", { Int($0).flatMap { (minimumIntervalSeconds...maximumIntervalSeconds).contains($0) ? $0 : nil } },
            "must be a number of seconds from \(minimumIntervalSeconds) to \(maximumIntervalSeconds)")
        {
            source.intervalSeconds = interval
        }
        if let push = value("push", { AlertSource.PushMode(rawValue: $0) }, "must be off, auto or review") { source.push = push }
        if let level = value(
            "min_severity", { SeverityLevel(name: $0) }, "must be one of \(SeverityLevel.allCases.map(\.name).joined(separator: ", "))")
        {
            source.minSeverity = level
        }
        if let effects = value("effects", parseEffects, "must be a comma-separated list of GTFS-realtime effects (e.g. DETOUR,NO_SERVICE)") {
            source.effects = effects
        }
        if let scope = value("scope", { AlertSource.Scope(rawValue: $0) }, "must be agency, route or any") { source.scope = scope }
        if let raw = fields["quiet_hours"] {
            if raw.isEmpty || raw == "none" {
                source.quietHours = nil
            } else if let hours = parseQuietHours(raw) {
                source.quietHours = hours
            } else {
                messages.append(naming.name("quiet_hours") + " must look like 22:00-06:30 (local time in the region's zone), or none")
            }
        }
        if let audience = value("audience", { AlertSend.Audience(rawValue: $0) }, "must be all or test") { source.audience = audience }
        if let threshold = value("flood_threshold", { Int($0).flatMap { (1...10_000).contains($0) ? $0 : nil } }, "must be a number from 1 to 10000")
        {
            source.floodThreshold = threshold
        }
        if let corrections = value("push_corrections", parseBool, "must be true or false") { source.pushCorrections = corrections }
        if let limit = value("pushes_per_hour", { Int($0).flatMap { (1...60).contains($0) ? $0 : nil } }, "must be a number from 1 to 60") {
            source.pushesPerHour = limit
        }
        if let allow = value("allow_link_local", parseBool, "must be true or false") { source.allowLinkLocal = allow }
        if let allow = value("allow_private", parseBool, "must be true or false") { source.allowPrivate = allow }
        if let bytes = value(
            "max_bytes", { Int($0).flatMap { (1024...(64 << 20)).contains($0) ? $0 : nil } }, "must be a number of bytes from 1024 to 67108864")
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
                            naming.name(flag)
                                + (file
                                    ? " must be NAME:PATH (a header name, then the file holding its value)"
                                    : " must be NAME:VARIABLE (a header name, then the environment variable holding its value)"))
                    }
                }
            }
            source.headers = headers
        }
        // Checked whenever there is a URL to keep (an empty one too); a
        // missing one on a new source was refused above.
        if base != nil || fields["url"] != nil,
            let problem = AlertSourceAddresses.urlProblem(
                source.url, allowance: .init(linkLocal: source.allowLinkLocal, private: source.allowPrivate), own: own, naming: naming)
        {
            messages.append(problem.prefix(1).uppercased() + problem.dropFirst())
        }
        messages += FieldLimits.check([(naming.name("url"), source.url, FieldLimits.url)])
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
        case deferred(until: EpochSeconds, reason: String)
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
        _ alert: MirroredAlert, previous: SourceAlertState?, source: AlertSource, baseline: Bool, now: EpochSeconds, zone: ZoneInfo
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
        if let end = alert.endsAt, end <= now { return .skip("already over") }
        if let pushedAt = previous?.pushedAt, now.seconds(since: pushedAt) < correctionWindowSeconds, !source.pushCorrections {
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

    /// Pushes beyond what the hour allows wait for review: a feed that
    /// invents a new alert at every poll must not push every 15 seconds.
    /// `pushed` counts the pushes already started in the last hour, by this
    /// source and by every source of its region.
    static func holdingOverCap(_ outcomes: [Outcome], pushed: (source: Int, region: Int), perSource: Int) -> (outcomes: [Outcome], held: String?) {
        var remaining = max(0, min(perSource - pushed.source, pushesPerDevicePerHour - pushed.region))
        var held = 0
        let capped = outcomes.map { outcome -> Outcome in
            guard case .push = outcome else { return outcome }
            if remaining > 0 {
                remaining -= 1
                return outcome
            }
            held += 1
            return .review(capReason(pushed: pushed, perSource: perSource))
        }
        return (capped, held > 0 ? "\(held) push\(held == 1 ? "" : "es") held: \(capReason(pushed: pushed, perSource: perSource))" : nil)
    }

    static func capReason(pushed: (source: Int, region: Int), perSource: Int) -> String {
        pushed.region >= pushesPerDevicePerHour || perSource - pushed.source > pushesPerDevicePerHour - pushed.region
            ? "the region's sources pushed \(pushed.region) times in the last hour, the most a device gets (\(pushesPerDevicePerHour)); approve to push anyway"
            : "this source pushed \(pushed.source) times in the last hour (at most \(perSource)); approve to push anyway"
    }

    /// When quiet hours end, if `now` is inside them (the next local time
    /// at their end, in the region's zone).
    static func quietUntil(now: EpochSeconds, zone: ZoneInfo, hours: QuietHours) -> EpochSeconds? {
        // Local clock seconds, not an instant: the zone's offset is added.
        let local = now.value + Int64(zone.offset(at: now.value))
        let dayStart = local - ((local % 86_400) + 86_400) % 86_400
        let minute = Int((local - dayStart) / 60)
        let inside = hours.start < hours.end ? (hours.start..<hours.end).contains(minute) : (minute >= hours.start || minute < hours.end)
        guard inside else { return nil }
        var end = dayStart + Int64(hours.end) * 60
        if end <= local { end += 86_400 }
        return EpochSeconds(zone.instant(fromLocal: end))
    }
}

extension SeverityLevel {
    /// Order for a minimum: UNKNOWN_SEVERITY < INFO < WARNING < SEVERE.
    var rank: Int { rawValue }
}
