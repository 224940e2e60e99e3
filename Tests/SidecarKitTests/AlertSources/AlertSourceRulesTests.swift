import Core
import GTFSRealtime
import Testing

@testable import SidecarKit

/// Alert sources' pure rules: settings, where a source may point, when a
/// new or changed alert pushes, and how a feed's alert is mapped.
@Suite("Alert sources: rules")
struct AlertSourceRulesTests {
    static let now: Int64 = 1_796_140_800  // 2026-12-01T16:00:00Z, 08:00 in Los Angeles

    static func source(_ change: (inout AlertSource) -> Void = { _ in }) -> AlertSource {
        var source = try! AlertSourceRules.settings(["url": "http://127.0.0.1:9000/alerts.pb"], regionID: 1, base: nil, now: now).get()
        source.push = .auto
        change(&source)
        return source
    }

    static func mirrored(
        severity: SeverityLevel = .severe, effect: Effect = .detour, selectors: [EntitySelector] = [EntitySelector(agencyID: "1")],
        header: String = "Route 44 detoured", end: UInt64? = nil
    ) -> MirroredAlert {
        let alert = Alert(
            activePeriods: [TimeRange(start: UInt64(now - 60), end: end)], informedEntities: selectors, effect: effect,
            headerText: TranslatedString([.init(text: header, language: "en"), .init(text: "Ruta 44 desviada", language: "es")]),
            severityLevel: severity)
        return try! AlertSourceMapping.map(id: "a1", alert, agencyID: "1").get()
    }

    @Test func defaultsAreTheIssuesAndBadValuesNameTheirFlag() throws {
        let source = try AlertSourceRules.settings(["url": "https://feeds.example.org/alerts"], regionID: 3, base: nil, now: 5).get()
        #expect(source.mode == .mirror && source.intervalSeconds == 60 && source.push == .review)
        #expect(source.minSeverity == .warning && source.scope == .route && source.floodThreshold == 20 && source.maxBytes == 8 << 20)
        let cases: [([String: String], String)] = [
            (["url": "ftp://x/feed"], "--url must be an http"),
            (["url": "http://x/", "interval": "14"], "--interval must be"),
            (["url": "http://x/", "mode": "copy"], "--mode must be"),
            (["url": "http://x/", "push": "yes"], "--push must be"),
            (["url": "http://x/", "min_severity": "HIGH"], "--min-severity must be"),
            (["url": "http://x/", "effects": "DETOUR,ALIENS"], "--effects must be"),
            (["url": "http://x/", "quiet_hours": "22-6"], "--quiet-hours must"),
            (["url": "http://x/", "header_file": "X-Key"], "--header-file must be NAME:PATH"),
            (["url": "http://x/", "header_env": "X-Key:not a variable"], "--header-env must be"),
            (["url": "http://169.254.169.254/latest/meta-data"], "link-local or cloud metadata"),
            (["url": "http://[fe80::1]/feed"], "link-local or cloud metadata"),
            (["url": "http://metadata.google.internal/"], "link-local or cloud metadata"),
            ([:], "--url is required"),
            (["url": ""], "--url must be an http"),
            (["url": "   "], "--url must be an http"),
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
            ["url": "http://10.0.0.5/feed", "header_file": "X-Api-Key:/etc/key", "header_env": "Authorization:FEED_TOKEN"], regionID: 1, base: nil,
            now: 0
        ).get().headers
        #expect(headers == [.init(name: "X-Api-Key", origin: .file("/etc/key")), .init(name: "Authorization", origin: .environment("FEED_TOKEN"))])
        #expect(AlertSourceRules.storedHeaders(headers.map(\.stored).joined(separator: "\n")) == headers)
    }

    @Test func addressesRefusedAtConnection() {
        let cases: [(String, Int, Bool)] = [
            ("169.254.169.254", 80, true), ("fe80::1", 80, true), ("febf::1", 80, true), ("fec0::1", 80, false), ("fd00:ec2::254", 80, true),
            ("100.100.100.200", 80, true), ("::ffff:169.254.1.1", 80, true), ("127.0.0.1", 9000, false), ("10.1.2.3", 8080, false),
            ("10.1.2.3", 9000, false),
            ("192.168.1.9", 80, false), ("127.0.0.1", 8080, true), ("::1", 8080, true), ("127.0.0.2", 8080, true),
        ]
        for (address, port, refused) in cases {
            #expect(
                AlertSourceRules.refuses(address: address, port: port, allowLinkLocal: false, ownHost: "0.0.0.0", ownPort: 8080) == refused,
                "\(address):\(port)")
        }
        #expect(!AlertSourceRules.refuses(address: "169.254.169.254", port: 80, allowLinkLocal: true, ownHost: "0.0.0.0", ownPort: 8080))
        #expect(AlertSourceRules.urlParts("http://user@[::1]:8080/x")! == ("http", "::1", 8080))
        #expect(AlertSourceRules.urlParts("https://Feeds.Example.org./a")! == ("https", "feeds.example.org", 443))
        #expect(AlertSourceRules.urlParts("http://x:99999/") == nil)
    }

    @Test func whetherAnAlertPushes() {
        let la = ZoneInfo.named("America/Los_Angeles")!
        let alert = Self.mirrored()
        let pushed = SourceAlertState(
            sourceID: 1, entityID: "a1", alertID: 9, contentHash: "old", materialHash: "old", decision: .pushed, reason: nil, notBefore: nil,
            pushedAt: Self.now - 300, sendID: 4, present: true, changedAt: 0)
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
            ("over", Self.mirrored(end: UInt64(Self.now - 1)), nil, Self.source(), false, .skip("already over")),
            ("correction", alert, pushed, Self.source(), false, .skip("a correction within 10 minutes of its push: not pushed again")),
            ("correction allowed", alert, pushed, Self.source { $0.pushCorrections = true }, false, .push),
            ("review", alert, nil, Self.source { $0.push = .review }, false, .review("waiting for an editor")),
            (
                "quiet hours", alert, nil, Self.source { $0.quietHours = QuietHours(start: 22 * 60, end: 8 * 60 + 30) }, false,
                .deferred(until: Self.now + 1800, reason: "quiet hours 22:00-08:30")
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

    @Test func mappingKeepsEveryFieldAndAddsTheAgency() throws {
        let alert = Alert(
            activePeriods: [TimeRange(start: 100, end: 200)], communicationPeriods: [TimeRange(start: 90, end: 210)],
            impactPeriods: [TimeRange(start: 120, end: 180)],
            informedEntities: [EntitySelector(routeID: "44", routeType: 3), EntitySelector(trip: TripDescriptor(tripID: "t1", directionID: 1))],
            cause: .construction, effect: .detour, url: TranslatedString([.init(text: "https://example.org/44", language: nil)]),
            headerText: TranslatedString([.init(text: "Route 44 detoured", language: nil), .init(text: "Ruta 44 desviada", language: "es")]),
            descriptionText: TranslatedString([.init(text: "Skips 45th", language: nil), .init(text: "Salta la 45", language: "es")]),
            severityLevel: .severe)
        let mapped = try AlertSourceMapping.map(id: "e-1", alert, agencyID: "1").get()
        #expect(mapped.header == "Route 44 detoured" && mapped.description == "Skips 45th" && mapped.url == "https://example.org/44")
        #expect(mapped.translations.map { [$0.language, $0.header, $0.description] } == [["es", "Ruta 44 desviada", "Salta la 45"]])
        #expect(mapped.startsAt == EpochSeconds(90) && mapped.endsAt == EpochSeconds(210))
        #expect(mapped.scope == .route, "route 44 is the broadest thing it names")
        #expect(mapped.feedAlert.informedEntities == alert.informedEntities + [EntitySelector(agencyID: "1")])
        var expected = alert
        expected.informedEntities.append(EntitySelector(agencyID: "1"))
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
            ("x", Alert(headerText: TranslatedString([.init(text: String(repeating: "h", count: 1 << 20), language: "en")])), "Header is too long"),
            (
                "x", Alert(informedEntities: Array(repeating: EntitySelector(stopID: "1"), count: 10_000), headerText: header),
                "10000 informed entities"
            ),
            ("x", Alert(activePeriods: [TimeRange(start: 884_541_340_800, end: nil)], headerText: header), "beyond the year 9999"),
            ("x", Alert(activePeriods: [TimeRange(start: 200, end: 100)], headerText: header), "ends before it starts"),
            (String(repeating: "i", count: 300), Alert(headerText: header), "its id is empty or longer"),
        ]
        for (id, alert, message) in cases {
            guard case .failure(let failure) = AlertSourceMapping.map(id: id, alert, agencyID: "1") else {
                Issue.record("accepted: \(message)")
                continue
            }
            #expect(failure.messages.contains { $0.contains(message) }, "\(failure.messages)")
        }
        let feed = FeedMessage(
            header: FeedHeader(timestamp: 1),
            entities: [FeedEntity(id: "d", alert: Alert(headerText: header)), FeedEntity(id: "d", alert: Alert(headerText: header))])
        let (alerts, problems) = AlertSourceMapping.alerts(feed, agencyID: "1", rejected: [])
        #expect(alerts.count == 1 && problems == ["entity “d”: duplicate id (the first one was kept)"])
    }
}
