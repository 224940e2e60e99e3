import Foundation
import GTFSRealtime
import HTTPClient
import Core
import HTTPServer
import Push
import SidecarClient
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 23: what the apps read today (add-region links with `region-id`,
/// the new alert periods, a feed caches can hold, Android's needs).
@Suite("The apps as they ship now")
struct AppsAsTheyShipTests {
    // MARK: Add-region links

    static let fullRegion = Region(
        id: 7, name: "Tampa Bay", obaBaseURL: "https://api.tampa.example.org/api/", sidecarBaseURL: "https://sidecar.tampa.example.org/",
        bounds: [], tripPlanner: .init(restURL: "https://otp.tampa.example.org/otp/", graphqlURL: "https://otp.tampa.example.org/graphql",
                                       graphqlBikeshare: true),
        analytics: .init(url: "https://analytics.example.org", siteID: "abc-123"))

    @Test func aDirectoryRegionsLinkCarriesEveryValueTheAppsReadAndTheClientDecodesIt() throws {
        let link = LinkRules.addRegionLink(LinkRules.AddRegion(region: Self.fullRegion, sidecarURL: "https://ignored.example.org"))
        let items = try #require(LinkRules.queryItems(link))
        #expect(items == ["name": "Tampa Bay", "oba-url": "https://api.tampa.example.org/api/", "region-id": "7",
                          "sidecar-url": "https://sidecar.tampa.example.org", "otp-url": "https://otp.tampa.example.org/otp/",
                          "otp-graphql-url": "https://otp.tampa.example.org/graphql", "otp-graphql-bikeshare": "true",
                          "umami-url": "https://analytics.example.org", "umami-id": "abc-123"])
        guard case .addRegion(let decoded)? = SidecarLink(url: try #require(URL(string: link))) else { Issue.record("not decoded"); return }
        #expect(decoded.regionID == 7)
        #expect(decoded.otpGraphqlURL?.absoluteString == "https://otp.tampa.example.org/graphql" && decoded.otpGraphqlBikeshare)
        #expect(decoded.sidecarURL?.absoluteString == "https://sidecar.tampa.example.org", "never a trailing slash: Android concatenates")
        #expect(decoded.umami?.id == "abc-123")
        // The client encodes what it decodes.
        #expect(SidecarLink.addRegion(decoded).url()?.absoluteString == link)
    }

    @Test func aRegionWithoutExtrasAndAnOldPosterLinkStillWork() throws {
        let bare = Region(id: 0, name: "Bear Transit", obaBaseURL: "https://oba.example.org/", sidecarBaseURL: nil, bounds: [])
        let link = LinkRules.addRegionLink(LinkRules.AddRegion(region: bare, sidecarURL: "https://sidecar.example.org"))
        #expect(try #require(LinkRules.queryItems(link)) == ["name": "Bear Transit", "oba-url": "https://oba.example.org/", "region-id": "0",
                                                             "sidecar-url": "https://sidecar.example.org"], "region 0 is a real region")
        let old = try #require(URL(string: "onebusaway://add-region?name=Old&oba-url=https%3A%2F%2Foba.example.org"))
        guard case .addRegion(let decoded)? = SidecarLink(url: old) else { Issue.record("an old poster's link must decode"); return }
        #expect(decoded.regionID == nil && decoded.otpGraphqlURL == nil && !decoded.otpGraphqlBikeshare)
        for (text, expected) in [(" 12 ", Int64(12)), ("abc", nil), ("1.5", nil)] as [(String, Int64?)] {
            let url = try #require(URL(string: "onebusaway://add-region?name=X&oba-url=https%3A%2F%2Fo.org&region-id=\(text.replacingOccurrences(of: " ", with: "%20"))"))
            guard case .addRegion(let read)? = SidecarLink(url: url) else { Issue.record("a bad region-id drops only itself"); return }
            #expect(read.regionID == expected, "\(text)")
        }
        for (text, expected) in [("TRUE", true), ("1", true), ("yes", false), ("", false)] {
            let url = try #require(URL(string: "onebusaway://add-region?name=X&oba-url=https%3A%2F%2Fo.org&otp-graphql-bikeshare=\(text)"))
            guard case .addRegion(let read)? = SidecarLink(url: url) else { Issue.record("not decoded"); return }
            #expect(read.otpGraphqlBikeshare == expected, "\(text): only true and 1 mean true, as the iOS app reads it")
        }
    }

    @Test(arguments: ["-1", "abc", "1.5", String(repeating: "9", count: 30), "9223372036854775808", "", "+1", "0x10"])
    func aRegionIDThatIsNotANonNegative64BitIntegerIsRefused(_ value: String) {
        #expect(LinkRules.regionIDValue(value) == nil)
    }

    @Test(arguments: [("0", Int64(0)), ("7", 7), ("9223372036854775807", .max), (" 12 ", 12)])
    func regionIDsThatFit(_ value: String, _ expected: Int64) {
        #expect(LinkRules.regionIDValue(value) == expected)
    }

    static func linksCommand(_ arguments: [String], regions: String) async throws -> (status: Int32, output: [String], errors: [String]) {
        guard case .admin(let invocation) = try CommandLineInterface.parse(["links", "add-region"] + arguments + ["--regions", regions],
                                                                           environment: [:]) else { throw CommandLineError("not an admin command") }
        let output = Locked<[String]>([])
        let errors = Locked<[String]>([])
        let status = await AdminCommands.run(invocation, output: { line in output.withLock { $0.append(line) } },
                                             errors: { line in errors.withLock { $0.append(line) } })
        return (status, output.value, errors.value)
    }

    static func regionsFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("regions-\(UUID().uuidString).json").path
        let json = #"""
        {"data": {"list": [{"id": 7, "regionName": "Tampa Bay", "obaBaseUrl": "https://api.tampa.example.org/api/",
          "sidecarBaseUrl": "https://sidecar.tampa.example.org/", "otpBaseUrl": "https://otp.tampa.example.org/otp/",
          "otpBaseGraphqlUrl": "https://otp.tampa.example.org/graphql", "supportsOtpGraphqlBikeshare": true,
          "umamiAnalytics": {"url": "https://analytics.example.org", "id": "abc-123"}},
          {"id": 8, "regionName": "Odd", "obaBaseUrl": "https://oba.odd.example.org/", "supportsOtpGraphqlBikeshare": "yes",
           "umamiAnalytics": {"url": "https://analytics.example.org"}}]}}
        """#
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func theLinksCommandCarriesTheRegionIDAndRefusesBadOnes() async throws {
        let regions = try Self.regionsFile()
        defer { try? FileManager.default.removeItem(atPath: regions) }
        var run = try await Self.linksCommand(["--region", "7"], regions: regions)
        #expect(run.status == 0, "\(run.errors)")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["region-id"] == "7")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["umami-id"] == "abc-123")
        // An odd directory entry (a string where a bool belongs, half an analytics pair) still makes a link.
        run = try await Self.linksCommand(["--region", "8", "--sidecar-url", "https://s.example.org"], regions: regions)
        #expect(run.status == 0, "\(run.errors)")
        #expect(try #require(LinkRules.queryItems(run.output.last ?? "")) == ["name": "Odd", "oba-url": "https://oba.odd.example.org/",
                                                                             "region-id": "8", "sidecar-url": "https://s.example.org"])
        // --region-id of a directory region: its values as defaults, overridden by flags.
        run = try await Self.linksCommand(["--region-id", "7", "--name", "Tampa"], regions: regions)
        let items = try #require(LinkRules.queryItems(run.output.last ?? ""))
        #expect(run.status == 0 && items["name"] == "Tampa" && items["otp-graphql-url"] == "https://otp.tampa.example.org/graphql")
        // Explicit values: --region-id sets the id whether or not the directory has it.
        run = try await Self.linksCommand(["--region-id", "4242", "--name", "Elsewhere", "--oba-url", "https://oba.example.org",
                                           "--sidecar-url", "https://s.example.org/", "--umami-url", "https://u.example.org", "--umami-id", "x"],
                                          regions: regions)
        #expect(run.status == 0, "\(run.errors)")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["region-id"] == "4242")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["sidecar-url"] == "https://s.example.org")
        for bad in ["-1", "abc", "1.5", String(repeating: "1", count: 30)] {
            run = try await Self.linksCommand(["--region-id=\(bad)", "--name", "X", "--oba-url", "https://oba.example.org",
                                               "--sidecar-url", "https://s.example.org"], regions: regions)
            #expect(run.status == 1 && run.output.isEmpty, "\(bad)")
            #expect(run.errors.contains { $0.contains("--region-id must be a non-negative integer that fits 64 bits") }, "\(bad): \(run.errors)")
        }
        run = try await Self.linksCommand(["--name", "X", "--oba-url", "https://oba.example.org", "--sidecar-url", "https://s.example.org"],
                                          regions: regions)
        #expect(run.status == 1 && run.errors.contains { $0.contains("--region-id") }, "without an id the apps invent one")
        run = try await Self.linksCommand(["--region-id", "1", "--name", "X", "--oba-url", "https://oba.example.org",
                                           "--sidecar-url", "https://s.example.org", "--umami-url", "https://u.example.org"], regions: regions)
        #expect(run.status == 1 && run.errors.contains { $0.contains("Umami URL and site id go together") })
    }

    @Test func thePosterPageCarriesTheRegionIDAndNamesTheAppVersions() async throws {
        try await TestSidecar.run({ _ in }) { app in
            let response = try await app.send("GET", "/regions/1/add")
            #expect(response.status == 200)
            #expect(response.text.contains("region-id=1"))
            #expect(response.text.contains("26.3.0") && response.text.contains("26.2.0"))
        }
    }

    // MARK: Site association

    @Test func stopPagesAreClaimedByDefaultAndCanBeLeftToTheWeb() throws {
        guard case .serve(let defaults) = try CommandLineInterface.parse(["serve"], environment: [:]),
              case .serve(let off) = try CommandLineInterface.parse(["serve", "--universal-link-stops", "false", "--port", "9"], environment: [:]),
              case .serve(let on) = try CommandLineInterface.parse(["serve", "--universal-link-stops"], environment: [:]),
              case .serve(let environment) = try CommandLineInterface.parse(["serve"], environment: ["SIDECAR_UNIVERSAL_LINK_STOPS": "false"])
        else { Issue.record("not serve"); return }
        #expect(defaults.links.claimStopPages && on.links.claimStopPages)
        #expect(!off.links.claimStopPages && off.port == 9, "a switch's value may follow it")
        #expect(!environment.links.claimStopPages)
    }

    // MARK: Alert periods

    static let auth = ["Content-Type": "application/json"]

    @Test func theFeedCarriesTheShownPeriodTwiceAndTheImpactPeriod() async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let created = try await app.send("POST", "/admin/api/regions/1/alerts", headers: headers, body: Array(#"""
                {"header": "Station closed Saturday", "start": "2026-12-03T08:00:00-08:00", "end": "2026-12-06T20:00:00-08:00",
                 "impact_start": "2026-12-05T05:00:00-08:00", "impact_end": "2026-12-05T23:00:00-08:00"}
                """#.utf8))
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.json?["id"] as? Int)
            #expect(created.json?["severity"] as? String == "WARNING", "new alerts default to WARNING: Android shows nothing lower")
            #expect(created.json?["impact_start"] as? String == "2026-12-05T13:00:00Z")
            let plain = try await app.administration.create(regionID: 1, fields: ["header": "No impact", "start": "2026-12-01T08:00:00-08:00"])
            _ = try await app.administration.setPublished(id: Int64(id), true)
            _ = try await app.administration.setPublished(id: plain.id, true)
            let feed = try FeedMessage(decoding: try await app.send("GET", "/api/v1/regions/1/alerts").body)
            let impact = try #require(feed.entities.first { $0.id == "Alert_\(id)" }?.alert)
            let shown = TimeRange(start: 1_796_313_600, end: 1_796_616_000)
            #expect(impact.activePeriods == [shown] && impact.communicationPeriods == [shown])
            #expect(impact.impactPeriods == [TimeRange(start: 1_796_475_600, end: 1_796_540_400)])
            let without = try #require(feed.entities.first { $0.id == "Alert_\(plain.id)" }?.alert)
            #expect(without.communicationPeriods == without.activePeriods && without.impactPeriods.isEmpty)
            let text = try await app.send("GET", "/api/v1/regions/1/alerts.pbtext").text
            #expect(text.contains("\"communicationPeriod\"") && text.contains("\"impactPeriod\""))

            // Cleared with none (CLI spelling) through the shared rules.
            let cleared = try await app.administration.edit(id: Int64(id), fields: ["impact_start": "none", "impact_end": "none"])
            #expect(cleared.impactStartsAt == nil && cleared.impactEndsAt == nil)
            // Export and import carry it.
            _ = try await app.administration.edit(id: Int64(id), fields: ["impact_start": "2026-12-05T05:00:00-08:00",
                                                                            "impact_end": "2026-12-05T23:00:00-08:00"])
            let document = try await RegionExchange.export(regionID: 1, database: app.sidecar.database, nowMillis: 0)
            let exported = String(decoding: document.encoded(), as: UTF8.self)
            #expect(exported.contains("\"impact_start_time\":\"2026-12-05T13:00:00Z\""), "\(exported)")
        }
    }

    @Test(arguments: [
        (["impact_start": "Saturday", "impact_end": "2026-12-05T23:00:00-08:00"], "impact_start must be an ISO 8601 time"),
        (["impact_start": "2026-12-05T05:00:00", "impact_end": "2026-12-05T23:00:00-08:00"], "impact_start must be an ISO 8601 time"),
        (["impact_start": "2026-12-05T23:00:00-08:00", "impact_end": "2026-12-05T05:00:00-08:00"], "impact_end must be after impact_start"),
        (["impact_start": "2026-12-02T05:00:00-08:00", "impact_end": "2026-12-05T23:00:00-08:00"],
         "the impact period (2026-12-02T13:00:00Z to 2026-12-06T07:00:00Z) must lie within the shown period (2026-12-03T16:00:00Z to 2026-12-07T04:00:00Z)"),
        (["impact_start": "2026-12-05T05:00:00-08:00", "impact_end": "2026-12-08T23:00:00-08:00"], "must lie within the shown period"),
        (["impact_start": "2026-12-05T05:00:00-08:00"], "impact_start and impact_end go together"),
        (["impact_end": "30000-01-01T00:00:00Z"], "impact_end must be an ISO 8601 time"),
    ])
    func badImpactPeriodsAre422WithAMessageNamingThePeriods(_ fields: [String: String], _ message: String) async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            var body: [String: String] = ["header": "Closed", "start": "2026-12-03T08:00:00-08:00", "end": "2026-12-06T20:00:00-08:00"]
            body.merge(fields) { _, new in new }
            let response = try await app.send("POST", "/admin/api/regions/1/alerts", headers: headers,
                                              body: Array(try JSONSerialization.data(withJSONObject: body)))
            #expect(response.status == 422, "\(response.text)")
            #expect(response.text.contains(message), "\(response.text)")
        }
    }

    @Test func anEditThatMovesTheShownPeriodAwayFromTheImpactIsRefusedAndTheCLISaysSo() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let alert = try await app.administration.create(regionID: 1, fields: [
                "header": "Closed", "start": "2026-12-03T08:00:00-08:00", "impact_start": "2026-12-03T09:00:00-08:00",
                "impact_end": "2026-12-03T12:00:00-08:00"])
            #expect(alert.endsAt == nil, "no end: the shown period is 8 hours, which holds the impact")
            await #expect(throws: AdministrationError.self) {
                _ = try await app.administration.edit(id: alert.id, fields: ["start": "2026-12-03T10:00:00-08:00"])
            }
            let errors = Locked<[String]>([])
            guard case .admin(let invocation) = try CommandLineInterface.parse(
                ["alert", "edit", String(alert.id), "--impact-end", "2026-12-04T12:00:00-08:00", "--database", app.sidecar.configuration.database,
                 "--regions", app.sidecar.configuration.regions ?? ""], environment: [:]) else { Issue.record("not admin"); return }
            let status = await AdminCommands.run(invocation, clock: app.clock, output: { _ in },
                                                 errors: { line in errors.withLock { $0.append(line) } })
            #expect(status == 1)
            #expect(errors.value.contains { $0.contains("must lie within the shown period") }, "\(errors.value)")
        }
    }

    // MARK: A feed caches can hold

    @Test func conditionalGetsAnswer304AndEachVariantHasItsOwnTag() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Detour", "start": AlertRouteTests.start])
            _ = try await app.administration.setPublished(id: alert.id, true)
            let first = try await app.send("GET", "/api/v1/regions/1/alerts")
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("\"1-p-") && etag.hasSuffix("\""))
            #expect(first.header("Cache-Control") == "public, max-age=60, stale-if-error=600")
            let lastModified = try #require(first.header("Last-Modified"))
            #expect(HTTPDate.parse(lastModified) != nil)

            for (header, value, status) in [
                ("If-None-Match", etag, 304), ("If-None-Match", "*", 304), ("If-None-Match", "\"nope\", \(etag)", 304),
                ("If-None-Match", "W/\(etag)", 304), ("If-None-Match", "\"nope\"", 200),
                ("If-None-Match", String(repeating: "garbage,\"", count: 900), 200), ("If-None-Match", "", 200),
                ("If-Modified-Since", lastModified, 304), ("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT", 200),
                ("If-Modified-Since", "yesterday", 200),
            ] {
                let response = try await app.send("GET", "/api/v1/regions/1/alerts", headers: [header: value])
                #expect(response.status == status, "\(header): \(value.prefix(40))")
                if status == 304 {
                    #expect(response.body.isEmpty && response.header("ETag") == etag)
                    #expect(response.header("Cache-Control") == AlertFeedRoutes.cacheControl)
                }
            }
            // If-None-Match wins over If-Modified-Since.
            #expect(try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": "\"nope\"",
                                                                                     "If-Modified-Since": lastModified]).status == 200)

            // Every variant has its own tag; the text form too.
            let tags = try await [
                "/api/v1/regions/1/alerts?test=1", "/api/v1/regions/0/alerts", "/api/v1/regions/1/alerts.pbtext",
            ].asyncMap { try await app.send("GET", $0).header("ETag") ?? "" }
            #expect(Set(tags + [etag]).count == 4, "\(tags)")
            #expect(try await app.send("GET", "/api/v1/regions/1/alerts.pbtext", headers: ["If-None-Match": tags[2]]).status == 304)

            // A change: a new tag at once, and the old one no longer matches.
            _ = try await app.administration.edit(id: alert.id, fields: ["header": "Detour all weekend"])
            let changed = try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": etag])
            #expect(changed.status == 200 && changed.header("ETag") != etag)
            // A new minute re-stamps the feed: a new tag, so a cached copy is never older than the stamp.
            let current = try #require(changed.header("ETag"))
            app.clock.advance(seconds: 60)
            let restamped = try await app.send("GET", "/api/v1/regions/1/alerts", headers: ["If-None-Match": current])
            #expect(restamped.status == 200 && restamped.header("ETag") != current)
            #expect(try await app.send("GET", "/api/v1/regions/404/alerts").header("Cache-Control") == "no-store")
        }
    }

    @Test func aPathThatBeginsWithTwoSlashesIsServed() async throws {
        try await TestSidecar.run({ _ in }) { app in
            let feed = try await app.send("GET", "//api/v1/regions/1/alerts")
            #expect(feed.status == 200)
            let registration = try await app.post("//api/v2/regions/1/push_registrations", [("token", "0a"), ("operating_system", "android")])
            #expect(registration.status == 204)
        }
    }

    // MARK: Translations both apps match

    @Test(arguments: [
        (["es"], ["es"]),
        (["tl"], ["tl", "fil"]),
        (["zh-Hans", "zh-Hant"], ["zh-Hans", "zh-Hant", "zh"]),
        (["zh-Hant"], ["zh-Hant", "zh"]),
        (["es", "pt-BR", "tl", "zh-Hans"], ["es", "pt-BR", "tl", "zh-Hans", "pt", "fil", "zh"]),
        (["fil", "tl"], ["fil", "tl"]),
        (["he"], ["he", "iw"]),
    ])
    func translationsGoOutUnderTheTagsTheAppsMatch(_ stored: [String], _ emitted: [String]) {
        let tags = AlertFeedRules.feedLanguageTags(stored)
        #expect(tags.map(\.tag) == emitted)
        #expect(tags.allSatisfy { stored[$0.index].lowercased().hasPrefix(String($0.tag.prefix(2)).lowercased())
                    || ["fil": "tl", "tl": "fil", "iw": "he"][$0.tag] == stored[$0.index] })
    }

    // MARK: Pushes

    @Test func aV1AlarmWithoutAStopSequenceFiresAPushTheIOSAppCanDecode() async throws {
        try await AlarmRouteTests.run { app, oba, gorush in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            let fields = AlarmRouteTests.alarmFields("t1", push: "onesignal-1").filter { $0.0 != "stop_sequence" }
            #expect(try await app.post("/api/v1/regions/1/alarms", fields).status == 201)
            app.clock.advance(seconds: 1500 + 30)
            oba.set([AlarmRouteTests.trip("t1", departsIn: 240, clock: app.clock)])
            _ = await app.sidecar.alarmChecker.runCycle()
            let pushed = try #require(gorush.notifications.first)
            let payload = try #require((pushed["data"] as? [String: Any])?["arrival_and_departure"] as? [String: Any])
            #expect(payload["stop_sequence"] as? Int == 4, "filled from the arrival the server looked up")
            let expiration = try #require(pushed["expiration"] as? Int)
            let now = Int(app.clock.now().epochMillis / 1000)
            #expect((now + 230...now + 241).contains(expiration), "it may be delivered until the bus leaves, not after")
        }
    }

    @Test func androidAlarmPushesExpireWithTheBusAndUseTheRemindersChannel() throws {
        let alarm = Alarm(id: 1, token: "t", regionID: 1, apiVersion: .v2, userPushID: "fcm-token", operatingSystem: .android, apnsSandbox: false,
                          stopID: "1_1", tripID: "t1", serviceDate: 1, vehicleID: nil, stopSequence: 3, secondsBefore: 300, message: "m",
                          failureCount: 0, departureEstimate: nil, nextCheckAt: 0, createdAt: 0)
        let message = AlarmRules.push(for: alarm, text: "The 44 leaves in 4 minutes", expiresAt: 1_000_240)
        let fcm = try #require(try JSONSerialization.jsonObject(with: Data(FCMTransport.body(message, now: 1_000_000))) as? [String: Any])
        let android = try #require((fcm["message"] as? [String: Any])?["android"] as? [String: Any])
        #expect(android["ttl"] as? String == "240s")
        #expect((android["notification"] as? [String: Any])?["channel_id"] as? String == "arrival_reminders")
        let gorush = GorushTransport(baseURL: "http://127.0.0.1:1", apnsTopic: nil, http: HTTPClient(), now: { 1_000_000 })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(gorush.requestBody([message]))) as? [String: Any])
        let notification = try #require((body["notifications"] as? [[String: Any]])?.first)
        #expect(notification["time_to_live"] as? Int == 240)
        // A service alert keeps the provider's default lifetime and channel.
        let alert = PushMessage(token: "t", platform: .android, title: "Detour", body: "x")
        let alertBody = try #require(try JSONSerialization.jsonObject(with: Data(FCMTransport.body(alert, now: 1_000_000))) as? [String: Any])
        #expect(((alertBody["message"] as? [String: Any])?["android"] as? [String: Any])?["ttl"] == nil)
    }

    @Test func theLogTransportPrintsTheWholePayloadAsJSONWithoutTheToken() async throws {
        let log = MemorySink()
        let transport = LogTransport(logger: Logger(level: .info, format: .text, sink: log), fingerprint: { _ in "fp-1234" }, now: { 1_000_000 })
        var ios = PushMessage(token: "secret-ios-token", platform: .ios, title: "OneBusAway", body: "Leaves in 5 minutes",
                              data: ["arrival_and_departure": .object(["stop_id": .string("1_1")])])
        ios.attention = .timeSensitive
        ios.badge = 3
        var android = PushMessage(token: "secret-fcm-token", platform: .android, title: "OneBusAway", body: "Leaves in 5 minutes")
        android.androidChannel = "arrival_reminders"
        android.expiration = 1_000_300
        _ = await transport.send([ios, android])
        let lines = log.lines
        #expect(!lines.joined().contains("secret-"), "never a token")
        // The text format escapes quotes logfmt-style, so the payload reads back as the exact JSON.
        func payload(_ line: String) throws -> [String: Any] {
            let start = try #require(line.range(of: "payload=\"")).upperBound
            let escaped = String(line[start...].dropLast())
            let json = escaped.replacingOccurrences(of: "\\\"", with: "\"").replacingOccurrences(of: "\\\\", with: "\\")
            return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        }
        let iosLine = try #require(lines.first { $0.contains("platform=ios") })
        let aps = try #require(try payload(iosLine)["aps"] as? [String: Any])
        #expect(aps["interruption-level"] as? String == "time-sensitive" && aps["sound"] as? String == "default" && aps["badge"] as? Int == 3)
        #expect(try payload(iosLine)["arrival_and_departure"] != nil)
        let androidPayload = try #require(lines.first { $0.contains("platform=android") })
        let fcm = try #require(try payload(androidPayload)["message"] as? [String: Any])
        let androidConfig = try #require(fcm["android"] as? [String: Any])
        #expect(androidConfig["ttl"] as? String == "300s"
                    && (androidConfig["notification"] as? [String: Any])?["channel_id"] as? String == "arrival_reminders")
        #expect(fcm["token"] as? String == "fp-1234", "the fingerprint stands in for the token")
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
