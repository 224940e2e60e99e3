import Crypto
@testable import Database
import Foundation
import HTTPServer
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 15: the admin console's rules, accounts, sessions and pages, and
/// the scoped API keys and audit log it brought.
@Suite("Console rules")
struct ConsoleRulesTests {
    @Test(arguments: [
        (ConsoleRole.viewer, ConsoleAction.read, true), (.viewer, .author, false), (.viewer, .sendToTestDevices, false),
        (.viewer, .sendToEveryone, false), (.viewer, .manageKeys, false),
        (.editor, .read, true), (.editor, .author, true), (.editor, .sendToTestDevices, true), (.editor, .sendToEveryone, false),
        (.editor, .manageKeys, false),
        (.admin, .read, true), (.admin, .author, true), (.admin, .sendToTestDevices, true), (.admin, .sendToEveryone, true), (.admin, .manageKeys, true),
    ])
    func rolesAllow(role: ConsoleRole, action: ConsoleAction, allowed: Bool) {
        #expect(ConsoleRules.may(role, action) == allowed)
    }

    @Test(arguments: [
        ("correct horse battery", "a@example.org", true), ("short", "a@example.org", false), ("elevenchars", "a@example.org", false),
        ("twelve chars", "a@example.org", true), ("aaaaaaaaaaaaaaaa", "a@example.org", false), ("A@Example.org", "a@example.org", false),
        (String(repeating: "ab1!", count: 300), "a@example.org", false),
    ])
    func passwordPolicy(password: String, email: String, acceptable: Bool) {
        #expect(ConsoleRules.passwordProblems(password, email: email).isEmpty == acceptable)
    }

    @Test(arguments: [
        (" Ana@Example.ORG ", "ana@example.org"), ("a@b.c", "a@b.c"), ("no-at-sign", nil), ("two@@example.org", nil), ("a@nodot", nil),
        ("a b@example.org", nil), ("<script>@example.org", nil), ("a@.example.org", nil), ("'; DROP TABLE console_users; --@x.org", nil),
    ] as [(String, String?)])
    func emails(raw: String, normalized: String?) {
        #expect(ConsoleRules.normalizedEmail(raw) == normalized)
    }

    @Test(arguments: [
        (0, 0, 100, true), (0, 0, 43_199, true), (0, 0, 43_200, false), (0, 518_400, 518_460, true), (0, 604_790, 604_800, false),
    ] as [(Int64, Int64, Int64, Bool)])
    func sessionsExpire(created: Int64, lastSeen: Int64, now: Int64, live: Bool) {
        #expect(ConsoleRules.sessionIsLive(createdAt: created, lastSeenAt: lastSeen, now: now) == live)
    }

    @Test func regionScope() {
        #expect(ConsoleRules.mayAccess(region: 3, allowed: nil))
        #expect(ConsoleRules.mayAccess(region: 3, allowed: [1, 3]))
        #expect(!ConsoleRules.mayAccess(region: 0, allowed: [1, 3]))
    }

    @Test func passwordsHashWithScryptAndVerify() throws {
        let weak = PasswordHash.Parameters(logN: 10, r: 8, p: 1)
        let stored = try PasswordHash.hash("correct horse battery", parameters: weak)
        #expect(stored.hasPrefix("scrypt$10$8$1$"))
        #expect(PasswordHash.verify("correct horse battery", against: stored))
        #expect(!PasswordHash.verify("correct horse batterY", against: stored))
        #expect(!PasswordHash.verify("correct horse battery", against: stored.dropLast() + (stored.last == "0" ? "1" : "0")))
        #expect(!PasswordHash.verify("x", against: "scrypt$40$8$1$00$00"))
        #expect(!PasswordHash.verify("x", against: "plain"))
        #expect(PasswordHash.needsRehash(stored))
        #expect(try PasswordHash.hash("same", parameters: weak) != PasswordHash.hash("same", parameters: weak), "salted")
    }

    @Test func chartsDrawOneBarADayAndEscapeNothingUnsafe() {
        let series = (0..<30).map { (day: Int64(20_000 + $0), count: $0 % 4) }
        let chart = ConsoleChart.dailyBars(series, title: "New <registrations>").rendered
        #expect(chart.components(separatedBy: "<rect").count - 1 == 30)
        #expect(chart.contains("New &lt;registrations&gt;"))
        #expect(!chart.contains("<registrations>"))
        #expect(chart.contains("2024-10-04"))  // day 20000
    }

    @Test(arguments: [
        ("/admin/alerts/3", "/admin/alerts/3"), ("//evil.example/admin", "/admin"), ("https://evil.example", "/admin"), ("/admin\\@evil", "/admin"),
        ("/elsewhere", "/admin"), ("/admin/login", "/admin"), (nil, "/admin"),
    ] as [(String?, String)])
    func loginRedirectsStayInTheConsole(next: String?, expected: String) {
        #expect(ConsoleRoutes.safeNext(next) == expected)
    }
}

/// A browser stand-in: keeps the session cookie and the page's CSRF token.
struct ConsoleBrowser {
    let app: TestSidecar
    var cookie = ""
    var csrf = ""

    static func value(of name: String, in setCookies: [String]) -> String? {
        for header in setCookies where header.hasPrefix(name + "=") {
            return String(header.dropFirst(name.count + 1).prefix { $0 != ";" })
        }
        return nil
    }

    static func hidden(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    func get(_ path: String) async throws -> RawResponse {
        try await app.send("GET", path, headers: cookie.isEmpty ? [:] : ["Cookie": cookie])
    }

    func post(_ path: String, _ fields: [(String, String)], csrf: String? = nil) async throws -> RawResponse {
        var headers = ["Content-Type": "application/x-www-form-urlencoded"]
        if !cookie.isEmpty { headers["Cookie"] = cookie }
        return try await app.send("POST", path, headers: headers, body: RawHTTPClient.form([("csrf", csrf ?? self.csrf)] + fields))
    }

    /// Signs in; returns the final status of the login POST.
    @discardableResult
    mutating func login(_ email: String, _ password: String, source: String? = nil) async throws -> RawResponse {
        let form = try await app.send("GET", "/admin/login", source: source)
        let loginCookie = Self.value(of: ConsoleRoutes.loginCookie, in: form.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)) ?? ""
        let token = Self.hidden("login_token", in: form.text) ?? ""
        let response = try await app.send("POST", "/admin/login", headers: ["Content-Type": "application/x-www-form-urlencoded",
                                                                            "Cookie": "\(ConsoleRoutes.loginCookie)=\(loginCookie)"],
                                          body: RawHTTPClient.form([("login_token", token), ("email", email), ("password", password), ("next", "/admin")]),
                                          source: source)
        if let session = Self.value(of: ConsoleRoutes.sessionCookie, in: response.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)) {
            cookie = "\(ConsoleRoutes.sessionCookie)=\(session)"
            let page = try await get("/admin/audit")
            csrf = Self.hidden("csrf", in: page.text) ?? ""
        }
        return response
    }
}

@Suite("Console pages")
struct ConsolePageTests {
    static let password = "a long enough password"

    /// A sidecar with an admin, an editor for every region, and a viewer
    /// limited to region 1; region 1 in Los Angeles time.
    static func run(writeLimit: Int = 120, _ body: (TestSidecar) async throws -> Void) async throws {
        let gorush = try FakeGorush()
        try await TestSidecar.run({ $0.gorushURL = gorush.url; $0.consoleWriteLimit = writeLimit }) { app in
            let store = ConsoleStore(database: app.sidecar.database)
            let hash = try PasswordHash.hash(password, parameters: .init(logN: 10, r: 8, p: 1))
            _ = try await store.createUser(email: "admin@example.org", passwordHash: hash, role: .admin, regions: nil, now: 0)
            _ = try await store.createUser(email: "editor@example.org", passwordHash: hash, role: .editor, regions: nil, now: 0)
            _ = try await store.createUser(email: "viewer@example.org", passwordHash: hash, role: .viewer, regions: [1], now: 0)
            try await AlertStore(database: app.sidecar.database).setRegionSettings(RegionSettings(regionID: 1, agencyID: "1", timezone: "America/Los_Angeles"))
            try await AlertStore(database: app.sidecar.database).setRegionSettings(RegionSettings(regionID: 0, agencyID: "0", timezone: nil))
            try await body(app)
        }
        _ = await gorush.server.shutdown()
    }

    static func alertCount(_ app: TestSidecar) async throws -> Int {
        try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).count + AlertStore(database: app.sidecar.database).alerts(regionID: 0).count
    }

    static func newAlert(_ header: String, start: String = "2026-12-01T08:00") -> [(String, String)] {
        [("header", header), ("description", "Buses skip 45th St"), ("cause", "CONSTRUCTION"), ("effect", "DETOUR"), ("severity", "WARNING"),
         ("start", start), ("end", ""), ("url", "")]
    }

    @Test func signingInAndOut() async throws {
        try await Self.run { app in
            var browser = ConsoleBrowser(app: app)
            let anonymous = try await browser.get("/admin/regions/1")
            #expect(anonymous.status == 303)
            #expect(anonymous.header("Location") == "/admin/login?next=/admin/regions/1")

            let wrong = try await browser.login("admin@example.org", "not the password at all")
            #expect(wrong.status == 401)
            #expect(wrong.text.contains("Wrong email or password"))
            #expect(browser.cookie.isEmpty)
            let unknown = try await browser.login("nobody@example.org", Self.password)
            #expect(unknown.status == 401)

            let ok = try await browser.login("Admin@Example.org", Self.password)
            #expect(ok.status == 303)
            let setCookie = ok.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value).first { $0.hasPrefix("sidecar_session=") } ?? ""
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax") && setCookie.contains("Path=/admin"))
            #expect(!setCookie.contains("Secure"), "the test server's public URL is http")
            #expect(!browser.csrf.isEmpty)

            let dashboard = try await browser.get("/admin/regions/1")
            #expect(dashboard.status == 200)
            #expect(dashboard.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
            #expect(dashboard.header("X-Frame-Options") == "DENY")
            #expect(dashboard.header("Cache-Control") == "no-store")
            #expect(dashboard.text.contains("New registrations per day"))

            // A session cookie the server never issued, or a tampered one, is no session.
            var forged = browser
            forged.cookie = "sidecar_session=" + String(browser.cookie.dropFirst("sidecar_session=".count).reversed())
            #expect(try await forged.get("/admin/regions/1").status == 303)
            forged.cookie = "sidecar_session=\"<script>\""
            #expect(try await forged.get("/admin/regions/1").status == 303)

            let out = try await browser.post("/admin/logout", [])
            #expect(out.status == 303)
            #expect(out.header("Location") == "/admin/login?done=logged-out")
            #expect(try await browser.get("/admin/regions/1").status == 303, "the session ended on the server")
        }
    }

    @Test func loginNeedsAFormThisServerIssued() async throws {
        try await Self.run { app in
            // A login posted from elsewhere (no login cookie) is refused.
            let foreign = try await app.send("POST", "/admin/login", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                             body: RawHTTPClient.form([("email", "admin@example.org"), ("password", Self.password)]))
            #expect(foreign.status == 403)
            // A matching cookie and form pair the client made up is refused too.
            for token in ["chosen-by-the-attacker", "AAAA.9999999999.AAAA", ""] {
                let forged = try await app.send("POST", "/admin/login", headers: ["Content-Type": "application/x-www-form-urlencoded",
                                                                                  "Cookie": "\(ConsoleRoutes.loginCookie)=\(token)"],
                                                body: RawHTTPClient.form([("login_token", token), ("email", "admin@example.org"),
                                                                          ("password", Self.password)]))
                #expect(forged.status == 403, "\(token)")
            }
            // An issued token lapses after an hour.
            let form = try await app.send("GET", "/admin/login")
            let token = try #require(ConsoleBrowser.hidden("login_token", in: form.text))
            app.clock.advance(seconds: 3601)
            let late = try await app.send("POST", "/admin/login", headers: ["Content-Type": "application/x-www-form-urlencoded",
                                                                            "Cookie": "\(ConsoleRoutes.loginCookie)=\(token)"],
                                          body: RawHTTPClient.form([("login_token", token), ("email", "admin@example.org"), ("password", Self.password)]))
            #expect(late.status == 403)
            var browser = ConsoleBrowser(app: app)
            #expect(try await browser.login("admin@example.org", Self.password).status == 303)
        }
    }

    @Test(arguments: [
        (Set([1]) as Set<Int>?, Set([1]) as Set<Int>?, true), (Set([1, 2]), Set([1]), false), (Set([1]), Set([1, 2]), true), (nil, Set([1]), false),
        (Set([1]), nil, true), (nil, nil, true), (Set<Int>(), Set([1]), true),
    ])
    func usersManageOnlyKeysWithinTheirRegions(keyRegions: Set<Int>?, allowed: Set<Int>?, manages: Bool) {
        #expect(ConsoleRules.mayManageKey(keyRegions: keyRegions, allowed: allowed) == manages)
    }

    @Test func aRegionScopedAdminSeesAndRevokesOnlyItsRegionsKeys() async throws {
        try await Self.run { app in
            let store = ConsoleStore(database: app.sidecar.database)
            let hash = try PasswordHash.hash(Self.password, parameters: .init(logN: 10, r: 8, p: 1))
            _ = try await store.createUser(email: "region1@example.org", passwordHash: hash, role: .admin, regions: [1], now: 0)
            let keys = ApiKeyStore(database: app.sidecar.database)
            let own = try await keys.create(name: "region one", regions: [1], now: 0).record
            let other = try await keys.create(name: "region zero", regions: [0], now: 0).record
            let everywhere = try await keys.create(name: "integration for all", regions: nil, now: 0).record
            var admin = ConsoleBrowser(app: app)
            try await admin.login("region1@example.org", Self.password)
            let page = try await admin.get("/admin/keys")
            #expect(page.text.contains("region one") && !page.text.contains("region zero") && !page.text.contains("integration for all"))
            #expect(try await admin.post("/admin/keys/\(other.id)/revoke", []).status == 404)
            #expect(try await admin.post("/admin/keys/\(everywhere.id)/revoke", []).status == 404)
            let otherAfter = try await keys.find(id: other.id), everywhereAfter = try await keys.find(id: everywhere.id)
            #expect(otherAfter?.revokedAt == nil && everywhereAfter?.revokedAt == nil, "nothing revoked")
            #expect(try await admin.post("/admin/keys/\(own.id)/revoke", []).status == 303)
            #expect(try await keys.find(id: own.id)?.revokedAt != nil)
        }
    }

    @Test func anAccountUnderAttackStaysOpenToItsOwner() async throws {
        try await Self.run { app in
            var statuses: [Int] = []
            for attempt in 0..<10 {
                var browser = ConsoleBrowser(app: app)
                statuses.append(try await browser.login("editor@example.org", "wrong password \(attempt)", source: "127.0.0.\(attempt + 2)").status)
            }
            #expect(statuses.allSatisfy { $0 == 401 })
            var browser = ConsoleBrowser(app: app)
            // A failing address is refused, the right password included.
            #expect(try await browser.login("editor@example.org", "wrong again", source: "127.0.0.5").status == 429)
            #expect(try await browser.login("editor@example.org", Self.password, source: "127.0.0.5").status == 429)
            // The owner, from an address that has not been failing, signs in.
            #expect(try await browser.login("editor@example.org", Self.password, source: "127.0.0.20").status == 303)
            // A new address gets one try, and is refused once it fails.
            #expect(try await browser.login("editor@example.org", "guess", source: "127.0.0.21").status == 401)
            #expect(try await browser.login("editor@example.org", Self.password, source: "127.0.0.21").status == 429)
            #expect(try await browser.login("admin@example.org", Self.password, source: "127.0.0.21").status == 303, "other accounts are not affected")
            // Successful sign-ins never count toward a lock.
            for _ in 0..<12 {
                var owner = ConsoleBrowser(app: app)
                #expect(try await owner.login("admin@example.org", Self.password, source: "127.0.0.30").status == 303)
            }
            // Failed sign-ins are audited, without the email that was typed.
            let entries = try await AuditLog(database: app.sidecar.database).entries(regions: nil, limit: 100)
            let failures = entries.filter { $0.action == "console.sign_in_failed" }
            #expect(failures.count == 11)
            #expect(!failures.contains { ($0.target ?? "").contains("@") || ($0.detail ?? "").contains("@") })
        }
    }

    @Test func sessionsExpireAfterTwelveIdleHours() async throws {
        try await Self.run { app in
            var browser = ConsoleBrowser(app: app)
            try await browser.login("admin@example.org", Self.password)
            app.clock.advance(seconds: 11 * 3600)
            #expect(try await browser.get("/admin/regions/1").status == 200)
            app.clock.advance(seconds: 11 * 3600)
            #expect(try await browser.get("/admin/regions/1").status == 200, "each request keeps it alive")
            app.clock.advance(seconds: 12 * 3600 + 1)
            #expect(try await browser.get("/admin/regions/1").status == 303)
        }
    }

    @Test func formsWithoutTheCSRFTokenChangeNothing() async throws {
        try await Self.run { app in
            var browser = ConsoleBrowser(app: app)
            try await browser.login("editor@example.org", Self.password)
            for token in ["", "wrong-token"] {
                let refused = try await browser.post("/admin/regions/1/alerts", Self.newAlert("Should not exist"), csrf: token)
                #expect(refused.status == 403)
                #expect(refused.text.contains("This form has expired"))
            }
            #expect(try await Self.alertCount(app) == 0)
            // Another user's token does not work either.
            var other = ConsoleBrowser(app: app)
            try await other.login("admin@example.org", Self.password)
            #expect(try await browser.post("/admin/regions/1/alerts", Self.newAlert("Nope"), csrf: other.csrf).status == 403)
            #expect(try await Self.alertCount(app) == 0)
        }
    }

    @Test func authoringTranslatingPublishingAndSending() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let hostile = "<script>alert('x')</script> \"quoted\" & '; DROP TABLE alerts; --"
            let created = try await editor.post("/admin/regions/1/alerts", Self.newAlert(hostile))
            #expect(created.status == 303, "\(created.text)")
            let location = try #require(created.header("Location"))
            #expect(location.hasSuffix("?done=created"))
            let alerts = AlertStore(database: app.sidecar.database)
            let alert = try #require(try await alerts.alerts(regionID: 1).first)
            #expect(alert.header == hostile, "stored exactly as typed")
            // 08:00 in Los Angeles on 1 December is 16:00 UTC.
            #expect(alert.startsAt == 1_796_140_800)
            #expect(!alert.published)

            let page = try await editor.get("/admin/alerts/\(alert.id)")
            #expect(page.status == 200)
            #expect(!page.text.contains("<script>alert"))
            #expect(page.text.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"))
            #expect(page.text.contains("value=\"2026-12-01T08:00\""), "shown back in the region's time")

            let translated = try await editor.post("/admin/alerts/\(alert.id)/translations",
                                                   [("language", "es"), ("header", "Ruta 44 desviada"), ("description", "No para en la calle 45")])
            #expect(translated.status == 303)
            let published = try await editor.post("/admin/alerts/\(alert.id)/publish", [])
            #expect(published.status == 303)
            #expect(try await alerts.find(id: alert.id)?.published == true)

            // The English changes: the Spanish is marked stale.
            let edited = try await editor.post("/admin/alerts/\(alert.id)", Self.newAlert("Route 44 detoured"))
            #expect(edited.status == 303)
            let afterEdit = try await editor.get("/admin/alerts/\(alert.id)")
            #expect(afterEdit.text.contains("stale: English changed"))

            // An editor sends to test devices, never to everyone.
            let confirmation = try await editor.get("/admin/alerts/\(alert.id)/send?audience=test")
            #expect(confirmation.text.contains("0 test devices"))
            let sendToken = try #require(ConsoleBrowser.hidden("send_token", in: confirmation.text))
            #expect(try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "all"), ("send_token", sendToken)]).status == 403)
            #expect(try await alerts.sends(alertID: alert.id).isEmpty)
            #expect(try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "test")]).status == 403, "no token, no send")
            let sending = try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "test"), ("send_token", sendToken)])
            #expect(sending.status == 303)
            // The same confirmation again (a refresh, a double click) starts nothing.
            let again = try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "test"), ("send_token", sendToken)])
            #expect(again.status == 303 && again.header("Location")?.contains("send-repeated") == true)
            #expect(try await alerts.sends(alertID: alert.id).map(\.audience) == [.test])
            let progress = try await editor.get("/admin/alerts/\(alert.id)/sends.json")
            #expect(progress.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(progress.text.contains("\"audience\":\"test\""))

            // Every change is in the audit log under the editor's name.
            let entries = try await AuditLog(database: app.sidecar.database).entries(regions: nil)
            #expect(Set(entries.map(\.action)).isSuperset(of: ["alert.create", "alert.translate", "alert.publish", "alert.edit", "alert.send"]))
            #expect(entries.allSatisfy { $0.actor == "user:editor@example.org" })
            let auditPage = try await editor.get("/admin/audit")
            #expect(auditPage.text.contains("alert.publish"))
            #expect(!auditPage.text.contains("<script>alert"))
        }
    }

    @Test func changesAreLimitedPerUser() async throws {
        try await Self.run(writeLimit: 3) { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            var statuses: [Int] = []
            for number in 0..<4 { statuses.append(try await editor.post("/admin/regions/1/alerts", Self.newAlert("Alert \(number)")).status) }
            #expect(statuses == [303, 303, 303, 429])
            #expect(try await Self.alertCount(app) == 3)
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            #expect(try await admin.post("/admin/regions/1/alerts", Self.newAlert("Another user")).status == 303, "each user has their own budget")
        }
    }

    @Test func badInputIsAClearPageAndChangesNothing() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let overlong = try await editor.post("/admin/regions/1/alerts", Self.newAlert(String(repeating: "x", count: 600)))
            #expect(overlong.status == 422)
            #expect(overlong.text.contains("Header is too long"))
            let badTime = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Fine", start: "tomorrow morning"))
            #expect(badTime.status == 422)
            #expect(badTime.text.contains("Starts must be a date and time"))
            let badEnum = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Fine") + [("cause", "<b>BOGUS</b>")])
            #expect(badEnum.status == 422)
            #expect(!badEnum.text.contains("<b>BOGUS</b>"))
            let unknownRegion = try await editor.post("/admin/regions/4242/alerts", Self.newAlert("Fine"))
            #expect(unknownRegion.status == 404)
            #expect(try await Self.alertCount(app) == 0)
            #expect(try await editor.get("/admin/alerts/99999").status == 404)
            #expect(try await editor.get("/admin/alerts/not-a-number").status == 404)
        }
    }

    @Test func anImpactPeriodIsAuthoredInTheRegionsZoneAndRefusedOutsideTheShownPeriod() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let form = try await editor.get("/admin/regions/1/alerts/new")
            #expect(form.text.contains("Service affected from") && form.text.contains("when the disruption itself happens"))
            #expect(form.text.contains("Info and Unknown severity are hidden there"))
            let outside = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Closed", start: "2026-12-05T08:00") + [
                ("impact_start", "2026-12-05T06:00"), ("impact_end", "2026-12-05T12:00")])
            #expect(outside.status == 422)
            #expect(outside.text.contains("must lie within the shown period"), "the form is shown again with the error")
            #expect(outside.text.contains("2026-12-05T06:00"), "what was typed survives")
            let inside = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Closed", start: "2026-12-05T08:00") + [
                ("impact_start", "2026-12-05T09:00"), ("impact_end", "2026-12-05T12:00")])
            #expect(inside.status == 303)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first)
            #expect(alert.impactStartsAt == 1_796_490_000, "09:00 in America/Los_Angeles is 17:00 UTC")
            #expect(alert.impactEndsAt == 1_796_500_800)
        }
    }

    @Test func viewersReadAndRegionScopedUsersSeeOnlyTheirRegions() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            _ = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Region one"))
            _ = try await editor.post("/admin/regions/0/alerts", Self.newAlert("Region zero"))
            let alerts = AlertStore(database: app.sidecar.database)
            let one = try #require(try await alerts.alerts(regionID: 1).first)
            let zero = try #require(try await alerts.alerts(regionID: 0).first)

            var viewer = ConsoleBrowser(app: app)
            try await viewer.login("viewer@example.org", Self.password)
            #expect(try await viewer.get("/admin").header("Location") == "/admin/regions/1", "one region: straight to it")
            let page = try await viewer.get("/admin/alerts/\(one.id)")
            #expect(page.status == 200)
            #expect(!page.text.contains(">Publish<"))
            let publish = try await viewer.post("/admin/alerts/\(one.id)/publish", [])
            #expect(publish.status == 403)
            #expect(try await alerts.find(id: one.id)?.published == false)
            #expect(try await viewer.post("/admin/alerts/\(one.id)/sends", [("audience", "test")]).status == 403)
            #expect(try await viewer.get("/admin/keys").status == 403)
            // Another region is as if it did not exist.
            #expect(try await viewer.get("/admin/regions/0").status == 404)
            #expect(try await viewer.get("/admin/alerts/\(zero.id)").status == 404)
            #expect(try await viewer.get("/admin/regions/0/alerts").status == 404)
        }
    }

    @Test func apiKeysAreScopedToRegionsAndThePushScope() async throws {
        try await Self.run { app in
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let form = try await admin.get("/admin/keys")
            let keyToken = try #require(ConsoleBrowser.hidden("key_token", in: form.text))
            #expect(try await admin.post("/admin/keys", [("name", "No regions"), ("key_token", keyToken)]).status == 422, "a key names its regions")
            let posted = try await admin.post("/admin/keys", [("name", "CAD <integration>"), ("region_1", "true"), ("key_token", keyToken)])
            #expect(posted.status == 303, "a redirect: a refresh repeats nothing")
            let flash = try #require(ConsoleBrowser.value(of: ConsoleRoutes.newKeyCookie,
                                                          in: posted.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)))
            let created = try await app.send("GET", "/admin/keys", headers: ["Cookie": "\(admin.cookie); \(ConsoleRoutes.newKeyCookie)=\(flash)"])
            let key = try #require(created.text.range(of: "<code id=\"new-key\">").map { created.text[$0.upperBound...].prefix { $0 != "<" } }.map(String.init))
            #expect(key.hasPrefix("sidecar_"))
            #expect(created.text.contains("CAD &lt;integration&gt;"))
            #expect(!(try await admin.get("/admin/keys")).text.contains(key), "shown once")
            // The same form again (a double click) makes no second key.
            let twice = try await admin.post("/admin/keys", [("name", "CAD <integration>"), ("region_1", "true"), ("key_token", keyToken)])
            #expect(twice.status == 303 && twice.header("Location")?.contains("key-repeated") == true)
            #expect(try await ApiKeyStore(database: app.sidecar.database).list().filter { $0.name == "CAD <integration>" }.count == 1)

            func api(_ method: String, _ path: String, _ body: [(String, String)] = []) async throws -> Int {
                let response = try await app.send(method, "/admin/api" + path,
                                                  headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/x-www-form-urlencoded"],
                                                  body: RawHTTPClient.form(body))
                return response.status
            }
            #expect(try await api("GET", "/regions/1/alerts") == 200)
            #expect(try await api("GET", "/regions/0/alerts") == 404)
            #expect(try await api("POST", "/regions/0/alerts", [("header", "x"), ("start", "2026-12-01T08:00:00Z")]) == 404)
            #expect(try await api("POST", "/regions/1/alerts", [("header", "From the API"), ("start", "2026-12-01T08:00:00Z")]) == 201)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first)
            #expect(try await api("POST", "/alerts/\(alert.id)/publish") == 200)
            #expect(try await api("POST", "/alerts/\(alert.id)/sends", [("audience", "test")]) == 403, "no push scope")
            let entries = try await AuditLog(database: app.sidecar.database).entries(regions: nil)
            #expect(entries.contains { $0.action == "alert.create" && $0.actor.hasPrefix("apikey:CAD <integration>#") })
            #expect(entries.contains { $0.action == "apikey.create" && $0.actor == "user:admin@example.org" })

            let revoked = try await admin.post("/admin/keys/1/revoke", [])
            #expect(revoked.status == 303)
            #expect(try await api("GET", "/regions/1/alerts") == 401)
        }
    }

    @Test func surveysAndGhostBusPages() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let saved = try await editor.post("/admin/regions/1/surveys", [
                ("name", "Rider <survey>"), ("study_id", ""), ("new_study", "Winter 2026"), ("available", "true"), ("show_on_stops", "true"),
                ("start_date", ""), ("end_date", ""), ("visible_stop_list", ""), ("visible_route_list", ""),
                ("q0_label", "How was your trip?"), ("q0_type", "radio"), ("q0_options", "Great\nFine\nBad"), ("q0_required", "true"),
                ("q1_label", "Anything else?"), ("q1_type", "text"), ("q1_options", ""),
                ("q2_label", ""), ("q2_type", "text"), ("q2_options", ""),
            ])
            #expect(saved.status == 303, "\(saved.text)")
            let survey = try #require(try await SurveyStore(database: app.sidecar.database).surveys(regionID: 1).first)
            #expect(survey.name == "Rider <survey>")
            #expect(survey.questions.map(\.type) == ["radio", "text"])
            #expect(survey.questions.first?.required == true)
            let page = try await editor.get("/admin/surveys/\(survey.id)")
            #expect(page.status == 200)
            #expect(page.text.contains("Rider &lt;survey&gt;"))
            let bad = try await editor.post("/admin/regions/1/surveys", [("name", ""), ("study_id", ""), ("new_study", ""),
                                                                          ("q0_label", "Pick"), ("q0_type", "radio"), ("q0_options", "")])
            #expect(bad.status == 422)
            #expect(bad.text.contains("needs options"))
            let csv = try await editor.get("/admin/surveys/\(survey.id)/responses.csv")
            #expect(csv.status == 200)
            #expect(csv.header("Content-Type")?.hasPrefix("text/csv") == true)

            let ghost = try await editor.get("/admin/regions/1/ghost-bus?route=%3Cscript%3E&date=2026-11-30")
            #expect(ghost.status == 200)
            #expect(!ghost.text.contains("<script>"))
            #expect(try await editor.get("/admin/regions/1/ghost-bus?date=yesterday").text.contains("Date must be a date"))
            #expect(try await editor.get("/admin/regions/1/ghost-bus.csv").status == 200)
        }
    }
}
