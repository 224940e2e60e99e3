import Crypto
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

/// Issue 15: the admin console's rules: roles, passwords, emails, sessions,
/// region scope, charts and where a sign-in may lead.
@Suite("Console: rules")
struct ConsoleRulesTests {
    @Test(arguments: [
        (ConsoleRole.viewer, ConsoleAction.read, true), (.viewer, .author, false), (.viewer, .sendToTestDevices, false),
        (.viewer, .sendToEveryone, false), (.viewer, .manageKeys, false),
        (.editor, .read, true), (.editor, .author, true), (.editor, .sendToTestDevices, true), (.editor, .sendToEveryone, false),
        (.editor, .manageKeys, false),
        (.admin, .read, true), (.admin, .author, true), (.admin, .sendToTestDevices, true), (.admin, .sendToEveryone, true),
        (.admin, .manageKeys, true),
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

    @Test(
        arguments: [
            (" Ana@Example.ORG ", "ana@example.org"), ("a@b.c", "a@b.c"), ("no-at-sign", nil), ("two@@example.org", nil), ("a@nodot", nil),
            ("a b@example.org", nil), ("<script>@example.org", nil), ("a@.example.org", nil), ("'; DROP TABLE console_users; --@x.org", nil),
        ] as [(String, String?)])
    func emails(raw: String, normalized: String?) {
        #expect(ConsoleRules.normalizedEmail(raw) == normalized)
    }

    @Test(
        arguments: [
            (0, 0, 100, true), (0, 0, 43_199, true), (0, 0, 43_200, false), (0, 518_400, 518_460, true), (0, 604_790, 604_800, false),
        ] as [(Int64, Int64, Int64, Bool)])
    func sessionsExpire(created: Int64, lastSeen: Int64, now: Int64, live: Bool) {
        #expect(ConsoleRules.sessionIsLive(createdAt: EpochSeconds(created), lastSeenAt: EpochSeconds(lastSeen), now: EpochSeconds(now)) == live)
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

    @Test(
        arguments: [
            ("/admin/alerts/3", "/admin/alerts/3"), ("//evil.example/admin", "/admin"), ("https://evil.example", "/admin"),
            ("/admin\\@evil", "/admin"),
            ("/elsewhere", "/admin"), ("/admin/login", "/admin"), (nil, "/admin"),
        ] as [(String?, String)])
    func loginRedirectsStayInTheConsole(next: String?, expected: String) {
        #expect(ConsoleRoutes.safeNext(next) == expected)
    }
}
