import Core
import GTFSRealtime
import Testing

@testable import SidecarKit

/// Alert sources' pure rules: settings, where a source may point, when a
/// new or changed alert pushes, and how a feed's alert is mapped.
@Suite("Alert sources: rules")
struct AlertSourceRulesTests {
    static let now: EpochSeconds = 1_796_140_800  // 2026-12-01T16:00:00Z, 08:00 in Los Angeles

    static func source(_ change: (inout AlertSource) -> Void = { _ in }) -> AlertSource {
        var source = try! AlertSourceRules.settings(
            ["url": "http://127.0.0.1:9000/alerts.pb", "allow_private": "true"], regionID: 1, base: nil, now: now
        ).get()
        source.push = .auto
        change(&source)
        return source
    }

    static func mirrored(
        severity: SeverityLevel = .severe, effect: Effect = .detour, selectors: [EntitySelector] = [EntitySelector(agencyID: "1")],
        header: String = "Route 44 detoured", end: UInt64? = nil
    ) -> MirroredAlert {
        let alert = Alert(
            activePeriods: [TimeRange(start: UInt64(now.value - 60), end: end)], informedEntities: selectors, effect: effect,
            headerText: TranslatedString([.init(text: header, language: "en"), .init(text: "Ruta 44 desviada", language: "es")]),
            severityLevel: severity)
        return try! AlertSourceMapping.map(id: "a1", alert, context: context).get()
    }

    static let context = AlertSourceMapping.Context(agencyID: "1", catalog: .standard, firstSeen: { _ in AlertSourceRulesTests.now })

    @Test func defaultsAreTheIssuesAndBadValuesNameTheirFlag() throws {
        let source = try AlertSourceRules.settings(["url": "https://feeds.example.org/alerts"], regionID: 3, base: nil, now: 5).get()
        #expect(source.mode == .mirror && source.intervalSeconds == 60 && source.push == .review)
        #expect(source.minSeverity == .warning && source.scope == .route && source.floodThreshold == 20 && source.maxBytes == 8 << 20)
        let cases: [([String: String], String)] = [
            (["url": "ftp://x/feed"], "The URL must be an http"),
            (["url": "http://x/", "interval": "14"], "--interval must be"),
            (["url": "http://x/", "mode": "copy"], "--mode must be"),
            (["url": "http://x/", "push": "yes"], "--push must be"),
            (["url": "http://x/", "min_severity": "HIGH"], "--min-severity must be"),
            (["url": "http://x/", "effects": "DETOUR,ALIENS"], "--effects must be"),
            (["url": "http://x/", "quiet_hours": "22-6"], "--quiet-hours must"),
            (["url": "http://x/", "header_file": "X-Key"], "--header-file must be NAME:PATH"),
            (["url": "http://x/", "header_env": "X-Key:not a variable"], "--header-env must be"),
            (["url": "http://169.254.169.254/latest/meta-data"], "a link-local or cloud metadata address"),
            (["url": "http://[fe80::1]/feed"], "a link-local or cloud metadata address"),
            (["url": "http://metadata.google.internal/"], "a link-local or cloud metadata address"),
            ([:], "--url is required"),
            (["url": ""], "The URL must be an http"),
            (["url": "   "], "The URL must be an http"),
            (["url": "http://10.0.0.5/feed"], "a private address, which a source reaches only when allowed (--allow-private true)"),
            (["url": "http://[::1]:9000/feed"], "a loopback address"),
            (["url": "http://100.64.1.1/feed"], "a shared (CGNAT) address"),
        ]
        for (fields, message) in cases {
            guard case .failure(let failure) = AlertSourceRules.settings(fields, regionID: 1, base: nil, now: 0) else {
                Issue.record("\(fields) accepted")
                continue
            }
            #expect(failure.messages.contains { $0.contains(message) }, "\(fields): \(failure.messages)")
        }
        // An edit may not blank the URL of a source that has one.
        #expect((try? AlertSourceRules.settings(["url": ""], regionID: 3, base: source, now: 6).get()) == nil)
        #expect((try? AlertSourceRules.settings(["interval": "120"], regionID: 3, base: source, now: 6).get())?.url == source.url)
        #expect(
            (try? AlertSourceRules.settings(["url": "http://169.254.169.254/", "allow_link_local": "true"], regionID: 1, base: nil, now: 0).get())
                != nil)
        let headers = try AlertSourceRules.settings(
            ["url": "http://10.0.0.5/feed", "header_file": "X-Api-Key:/etc/key", "header_env": "Authorization:FEED_TOKEN", "allow_private": "true"],
            regionID: 1, base: nil,
            now: 0
        ).get().headers
        #expect(headers == [.init(name: "X-Api-Key", origin: .file("/etc/key")), .init(name: "Authorization", origin: .environment("FEED_TOKEN"))])
        #expect(AlertSourceRules.storedHeaders(headers.map(\.stored).joined(separator: "\n")) == headers)
    }

    @Test func aNewURLDropsTheSecretsAndAllowancesOfTheOldOne() throws {
        let base = try AlertSourceRules.settings(
            ["url": "https://feeds.example.org/alerts", "header_file": "X-Api-Key:/etc/key", "allow_private": "true", "allow_link_local": "true"],
            regionID: 1, base: nil, now: 0
        ).get()
        #expect(base.headers.count == 1 && base.allowPrivate && base.allowLinkLocal)
        let moved = try AlertSourceRules.settings(["url": "https://attacker.example.net/"], regionID: 1, base: base, now: 1).get()
        #expect(moved.headers.isEmpty && !moved.allowPrivate && !moved.allowLinkLocal, "the key must not follow the URL to another host")
        let same = try AlertSourceRules.settings(["url": base.url, "interval": "120"], regionID: 1, base: base, now: 1).get()
        #expect(same.headers == base.headers && same.allowPrivate, "the same URL keeps them")
        let resupplied = try AlertSourceRules.settings(
            ["url": "https://feeds2.example.org/a", "header_env": "X-Api-Key:FEED_KEY"], regionID: 1, base: base, now: 1
        ).get()
        #expect(resupplied.headers == [.init(name: "X-Api-Key", origin: .environment("FEED_KEY"))])
    }

    @Test func messagesNameFieldsAsTheFaceTheOperatorUsed() {
        for (naming, expected) in [
            (AlertSourceRules.FieldNaming.commandLine, "--min-severity must be one of"), (.api, "min_severity must be one of"),
            (.console, "Least severity that pushes must be one of"),
        ] {
            guard
                case .failure(let failure) = AlertSourceRules.settings(
                    ["url": "https://x.example/", "min_severity": "HIGH"], regionID: 1, base: nil, now: 0, naming: naming)
            else {
                Issue.record("accepted")
                continue
            }
            #expect(failure.messages.contains { $0.hasPrefix(expected) }, "\(failure.messages)")
        }
    }

    /// Where a source may point, checked on the connected address.
    @Test(
        arguments: [
            ("93.184.216.34", false, false, nil), ("2606:4700::1111", false, false, nil),
            ("127.0.0.1", false, false, "loopback"), ("127.0.0.2", false, true, nil), ("::1", false, false, "loopback"),
            ("10.1.2.3", false, false, "private"), ("172.16.0.1", false, false, "private"), ("172.31.255.1", false, false, "private"),
            ("172.32.0.1", false, false, nil), ("192.168.1.9", false, false, "private"), ("fd12::1", false, false, "private"),
            ("100.64.0.1", false, false, "CGNAT"), ("100.127.255.255", false, false, "CGNAT"), ("100.128.0.1", false, false, nil),
            ("0.0.0.0", false, false, "private"), ("::", false, false, "private"), ("::ffff:10.0.0.1", false, false, "private"),
            ("64:ff9b::a00:1", false, false, "private"), ("169.254.169.254", false, false, "link-local"),
            ("169.254.169.254", true, false, "link-local"),
            ("fe80::1", false, false, "link-local"), ("fd00:ec2::254", false, true, "link-local"), ("100.100.100.200", false, true, "link-local"),
            ("224.0.0.1", false, true, "multicast"), ("10.1.2.3", false, true, nil),
        ] as [(String, Bool, Bool, String?)])
    func connectionsAreChecked(address: String, linkLocal: Bool, allowPrivate: Bool, refusal: String?) {
        let own = AlertSourceAddresses.OwnListener(host: "0.0.0.0", port: 8080, localAddresses: ["192.0.2.10"])
        let reason = AlertSourceAddresses.connectionRefusal(
            address: address, port: 443, allowance: .init(linkLocal: linkLocal && address.hasPrefix("fe"), private: allowPrivate), own: own)
        if let refusal {
            #expect(reason?.contains(refusal) == true, "\(address): \(reason ?? "allowed")")
        } else {
            #expect(reason == nil, "\(address): \(reason ?? "")")
        }
    }

    @Test func thisServerIsNeverPolledAndURLsAreReadStrictly() {
        let own = AlertSourceAddresses.OwnListener(host: "0.0.0.0", port: 8080, localAddresses: ["192.0.2.10"])
        let everything = AlertSourceAddresses.Allowance(linkLocal: true, private: true)
        for address in ["127.0.0.1", "::1", "0.0.0.0", "192.0.2.10"] {
            #expect(AlertSourceAddresses.connectionRefusal(address: address, port: 8080, allowance: everything, own: own) == "this server itself")
        }
        #expect(AlertSourceAddresses.connectionRefusal(address: "192.0.2.10", port: 9000, allowance: everything, own: own) == nil)
        #expect(AlertSourceAddresses.urlProblem("http://localhost:8080/x", allowance: everything, own: own)?.contains("own listener") == true)
        #expect(AlertSourceAddresses.urlProblem("http://localhost:9000/x", allowance: .init(), own: own)?.contains("loopback") == true)
        #expect(AlertSourceAddresses.urlProblem("http://metadata.google.internal/", allowance: .init(), own: own)?.contains("link-local") == true)
        #expect(AlertSourceAddresses.urlProblem("https://feeds.example.org/a", allowance: .init(), own: own) == nil)
        #expect(AlertSourceAddresses.urlParts("http://user@[::1]:8080/x")! == ("http", "::1", 8080))
        #expect(AlertSourceAddresses.urlParts("https://Feeds.Example.org./a")! == ("https", "feeds.example.org", 443))
        #expect(AlertSourceAddresses.urlParts("http://x:99999/") == nil)
    }

    @Test func pushesBeyondTheHourlyCapsWaitForReview() {
        let pushes = Array(repeating: AlertSourceRules.Outcome.push, count: 5) + [.skip("x")]
        let (capped, held) = AlertSourceRules.holdingOverCap(pushes, pushed: (source: 2, region: 2), perSource: 4)
        #expect(capped.prefix(2) == [.push, .push] && capped.dropFirst(2).prefix(3).allSatisfy { if case .review = $0 { true } else { false } })
        #expect(capped.last == .skip("x") && held?.contains("this source pushed 2 times in the last hour (at most 4)") == true)
        let (regionCapped, regionHeld) = AlertSourceRules.holdingOverCap([.push, .push], pushed: (source: 0, region: 5), perSource: 4)
        #expect(regionCapped.first == .push && regionHeld?.contains("the most a device gets (6)") == true)
        #expect(AlertSourceRules.holdingOverCap([.push], pushed: (0, 0), perSource: 4).held == nil)
    }

    @Test func whetherAnAlertPushes() {
        let la = ZoneInfo.named("America/Los_Angeles")!
        let alert = Self.mirrored()
        let pushed = SourceAlertState(
            sourceID: 1, entityID: "a1", alertID: 9, contentHash: "old", materialHash: "old", decision: .pushed, reason: nil, notBefore: nil,
            pushedAt: Self.now.adding(seconds: -300), sendID: 4, present: true, changedAt: 0, firstSeenAt: 0)
        var same = pushed
        same.materialHash = alert.materialHash
        typealias Case = (String, MirroredAlert, SourceAlertState?, AlertSource, Bool, AlertSourceRules.Outcome)
        let cases: [Case] = [
            ("first poll", alert, nil, Self.source(), true, .baseline),
            ("new, rules pass", alert, nil, Self.source(), false, .push),
            ("unchanged", alert, same, Self.source(), false, .unchanged),
            ("push off", alert, nil, Self.source { $0.push = .off }, false, .skip("push is off for this source")),
            ("severity", Self.mirrored(severity: .info), nil, Self.source(), false, .skip("severity INFO is below WARNING")),
            ("effect", alert, nil, Self.source { $0.effects = [.noService] }, false, .skip("effect DETOUR is not one that pushes (NO_SERVICE)")),
            (
                "stop scope", Self.mirrored(selectors: [EntitySelector(stopID: "75403")]), nil, Self.source(), false,
                .skip("scoped to single stops or trips")
            ),
            ("route scope allowed", Self.mirrored(selectors: [EntitySelector(routeID: "44")]), nil, Self.source(), false, .push),
            (
                "route scope, agency only", Self.mirrored(selectors: [EntitySelector(routeID: "44")]), nil, Self.source { $0.scope = .agency }, false,
                .skip("scoped to single routes")
            ),
            ("over", Self.mirrored(end: UInt64(Self.now.value - 1)), nil, Self.source(), false, .skip("already over")),
            ("correction", alert, pushed, Self.source(), false, .skip("a correction within 10 minutes of its push: not pushed again")),
            ("correction allowed", alert, pushed, Self.source { $0.pushCorrections = true }, false, .push),
            ("review", alert, nil, Self.source { $0.push = .review }, false, .review("waiting for an editor")),
            (
                "quiet hours", alert, nil, Self.source { $0.quietHours = QuietHours(start: 22 * 60, end: 8 * 60 + 30) }, false,
                .deferred(until: Self.now.adding(seconds: 1800), reason: "quiet hours 22:00-08:30")
            ),
            ("outside quiet hours", alert, nil, Self.source { $0.quietHours = QuietHours(start: 22 * 60, end: 7 * 60) }, false, .push),
        ]
        for (name, alert, previous, source, baseline, expected) in cases {
            #expect(
                AlertSourceRules.outcome(alert, previous: previous, source: source, baseline: baseline, now: Self.now, zone: la) == expected,
                "\(name)")
        }
    }

    @Test func aFloodWaitsForReview() {
        let outcomes: [AlertSourceRules.Outcome] = Array(repeating: .push, count: 21) + [.skip("x"), .baseline]
        let (held, reason) = AlertSourceRules.holdingFlood(outcomes, threshold: 20)
        #expect(reason?.contains("21 alerts appeared or changed in one poll (more than 20)") == true)
        #expect(held.prefix(21).allSatisfy { if case .review = $0 { return true } else { return false } })
        #expect(held.suffix(2) == [.skip("x"), .baseline])
        #expect(AlertSourceRules.holdingFlood(Array(repeating: .push, count: 20), threshold: 20).held == nil)
    }

    @Test func backoffDoublesAndIsCapped() {
        #expect(AlertSourceRules.nextDelay(intervalSeconds: 60, failures: 0, random: 0.5) == 60)
        #expect(AlertSourceRules.nextDelay(intervalSeconds: 60, failures: 1, random: 0.5) == 120)
        #expect(AlertSourceRules.nextDelay(intervalSeconds: 60, failures: 3, random: 0.5) == 480)
        #expect(AlertSourceRules.nextDelay(intervalSeconds: 60, failures: 20, random: 0.5) == 3600)
        #expect(AlertSourceRules.nextDelay(intervalSeconds: 60, failures: 1, random: 0) == 96)
    }

    @Test func mappingKeepsEveryFieldAndScopesAsTheAgencyWrote() throws {
        let alert = Alert(
            activePeriods: [TimeRange(start: 100, end: 200)], communicationPeriods: [TimeRange(start: 90, end: 210)],
            impactPeriods: [TimeRange(start: 120, end: 180)],
            informedEntities: [EntitySelector(routeID: "44", routeType: 3), EntitySelector(trip: TripDescriptor(tripID: "t1", directionID: 1))],
            cause: .construction, effect: .detour, url: TranslatedString([.init(text: "https://example.org/44", language: nil)]),
            headerText: TranslatedString([.init(text: "Route 44 detoured", language: nil), .init(text: "Ruta 44 desviada", language: "es")]),
            descriptionText: TranslatedString([.init(text: "Skips 45th", language: nil), .init(text: "Salta la 45", language: "es")]),
            severityLevel: .severe)
        let mapped = try AlertSourceMapping.map(id: "e-1", alert, context: Self.context).get()
        #expect(mapped.header == "Route 44 detoured" && mapped.description == "Skips 45th" && mapped.url == "https://example.org/44")
        #expect(mapped.translations.map { [$0.language, $0.header, $0.description] } == [["es", "Ruta 44 desviada", "Salta la 45"]])
        #expect(mapped.startsAt == EpochSeconds(90) && mapped.endsAt == EpochSeconds(210))
        #expect(mapped.scope == .route, "route 44 is the broadest thing it names")
        #expect(
            mapped.feedAlert.informedEntities == [
                EntitySelector(agencyID: "1", routeID: "44", routeType: 3),
                EntitySelector(agencyID: "1", trip: TripDescriptor(tripID: "t1", directionID: 1)),
            ], "the agency in the same selector as the route or trip: still route-scoped, never agency-wide")
        var expected = alert
        expected.informedEntities = mapped.feedAlert.informedEntities
        expected.headerText = TranslatedString([.init(text: "Route 44 detoured", language: "en"), .init(text: "Ruta 44 desviada", language: "es")])
        expected.descriptionText = TranslatedString([.init(text: "Skips 45th", language: "en"), .init(text: "Salta la 45", language: "es")])
        expected.url = TranslatedString([.init(text: "https://example.org/44", language: "en")])
        #expect(AlertSourceMapping.decoded(AlertSourceMapping.encoded(id: "e-1", mapped.feedAlert)) == expected)
        // Only the header and periods are material.
        var described = alert
        described.descriptionText = TranslatedString([.init(text: "Skips 45th and 46th", language: nil)])
        #expect(AlertSourceMapping.materialHash(described) == mapped.materialHash)
        var retitled = alert
        retitled.headerText = TranslatedString([.init(text: "Route 44 closed", language: nil)])
        #expect(AlertSourceMapping.materialHash(retitled) != mapped.materialHash)
    }

    @Test func badAlertsAreRefusedWithAReason() {
        let header = TranslatedString([.init(text: "Detour", language: "en")])
        let cases: [(String, Alert, String)] = [
            ("x", Alert(), "no header text"),
            (
                "x", Alert(headerText: TranslatedString([.init(text: String(repeating: "h", count: 1 << 20), language: "en")])),
                "Header (en) is too long"
            ),
            (
                "x", Alert(informedEntities: Array(repeating: EntitySelector(stopID: "1"), count: 10_000), headerText: header),
                "10000 informed entities"
            ),
            ("x", Alert(activePeriods: [TimeRange(start: 884_541_340_800, end: nil)], headerText: header), "beyond the year 9999"),
            ("x", Alert(activePeriods: [TimeRange(start: 200, end: 100)], headerText: header), "ends before it starts"),
            (String(repeating: "i", count: 300), Alert(headerText: header), "its id is empty or longer"),
        ]
        for (id, alert, message) in cases {
            guard case .failure(let failure) = AlertSourceMapping.map(id: id, alert, context: Self.context) else {
                Issue.record("accepted: \(message)")
                continue
            }
            #expect(failure.messages.contains { $0.contains(message) }, "\(failure.messages)")
        }
        let feed = FeedMessage(
            header: FeedHeader(timestamp: 1),
            entities: [FeedEntity(id: "d", alert: Alert(headerText: header)), FeedEntity(id: "d", alert: Alert(headerText: header))])
        let (alerts, _, problems) = AlertSourceMapping.alerts(feed, context: Self.context, rejected: [])
        #expect(alerts.count == 1 && problems == ["entity “d”: duplicate id (the first one was kept)"])
    }
}
