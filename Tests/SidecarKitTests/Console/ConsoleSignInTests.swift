import Crypto
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

@Suite("Console: signing in and sessions")
struct ConsoleSignInTests: ConsoleSuite {
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
            let foreign = try await app.send(
                "POST", "/admin/login", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: RawHTTPClient.form([("email", "admin@example.org"), ("password", Self.password)]))
            #expect(foreign.status == 403)
            // A matching cookie and form pair the client made up is refused too.
            for token in ["chosen-by-the-attacker", "AAAA.9999999999.AAAA", ""] {
                let forged = try await app.send(
                    "POST", "/admin/login",
                    headers: [
                        "Content-Type": "application/x-www-form-urlencoded",
                        "Cookie": "\(ConsoleRoutes.loginCookie)=\(token)",
                    ],
                    body: RawHTTPClient.form([
                        ("login_token", token), ("email", "admin@example.org"),
                        ("password", Self.password),
                    ]))
                #expect(forged.status == 403, "\(token)")
            }
            // An issued token lapses after an hour.
            let form = try await app.send("GET", "/admin/login")
            let token = try #require(ConsoleBrowser.hidden("login_token", in: form.text))
            app.clock.advance(seconds: 3601)
            let late = try await app.send(
                "POST", "/admin/login",
                headers: [
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Cookie": "\(ConsoleRoutes.loginCookie)=\(token)",
                ],
                body: RawHTTPClient.form([("login_token", token), ("email", "admin@example.org"), ("password", Self.password)]))
            #expect(late.status == 403)
            var browser = ConsoleBrowser(app: app)
            #expect(try await browser.login("admin@example.org", Self.password).status == 303)
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
            #expect(
                try await browser.login("admin@example.org", Self.password, source: "127.0.0.21").status == 303, "other accounts are not affected")
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

    /// One busy office behind one address: its successful sign-ins never
    /// count toward the address's limit, only failures do.
    @Test func onlyFailedSignInsCountAgainstAnAddress() async throws {
        try await Self.run { app in
            for _ in 0..<(ConsoleRules.attemptsPerClient + 5) {
                var colleague = ConsoleBrowser(app: app)
                #expect(try await colleague.login("admin@example.org", Self.password, source: "127.0.0.40").status == 303)
            }
            var statuses: [Int] = []
            for attempt in 0..<ConsoleRules.attemptsPerClient {
                var guesser = ConsoleBrowser(app: app)
                statuses.append(try await guesser.login("nobody\(attempt)@example.org", "guess", source: "127.0.0.41").status)
            }
            #expect(statuses.allSatisfy { $0 == 401 })
            var late = ConsoleBrowser(app: app)
            let refused = try await late.login("admin@example.org", Self.password, source: "127.0.0.41")
            #expect(refused.status == 429, "the address used its failures")
            #expect(refused.text.contains("Too many failed sign-ins from your address"))
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
}
