import Crypto
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

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

    /// Signs in; returns the final status of the login POST. A 503 (the
    /// password checks, shared by every server in this test process, are
    /// busy with other suites' sign-ins) is tried again, as a person would.
    @discardableResult
    mutating func login(_ email: String, _ password: String, source: String? = nil) async throws -> RawResponse {
        // Refused while password checks are at their limit (503): retried
        // until one answers; the minute only catches a server that never does.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let response = try await loginOnce(email, password, source: source)
            guard response.status == 503 else { return response }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await loginOnce(email, password, source: source)
    }

    private mutating func loginOnce(_ email: String, _ password: String, source: String?) async throws -> RawResponse {
        let form = try await app.send("GET", "/admin/login", source: source)
        let loginCookie =
            Self.value(of: ConsoleRoutes.loginCookie, in: form.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)) ?? ""
        let token = Self.hidden("login_token", in: form.text) ?? ""
        let response = try await app.send(
            "POST", "/admin/login",
            headers: [
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": "\(ConsoleRoutes.loginCookie)=\(loginCookie)",
            ],
            body: RawHTTPClient.form([("login_token", token), ("email", email), ("password", password), ("next", "/admin")]),
            source: source)
        if let session = Self.value(
            of: ConsoleRoutes.sessionCookie, in: response.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value))
        {
            cookie = "\(ConsoleRoutes.sessionCookie)=\(session)"
            let page = try await get("/admin/audit")
            csrf = Self.hidden("csrf", in: page.text) ?? ""
        }
        return response
    }
}

/// What the console page suites share: the sidecar they sign in to (`run`),
/// its users' password, and the alert form's fields.
protocol ConsoleSuite {}

extension ConsoleSuite {
    static var password: String { "a long enough password" }

    /// A sidecar with an admin, an editor for every region, and a viewer
    /// limited to region 1; region 1 in Los Angeles time.
    static func run(writeLimit: Int = 120, _ body: (TestSidecar) async throws -> Void) async throws {
        let gorush = try FakeGorush()
        try await TestSidecar.run({
            $0.gorushURL = gorush.url
            $0.consoleWriteLimit = writeLimit
        }) { app in
            let store = ConsoleStore(database: app.sidecar.database)
            let hash = try PasswordHash.hash(password, parameters: .init(logN: 10, r: 8, p: 1))
            _ = try await store.createUser(email: "admin@example.org", passwordHash: hash, role: .admin, regions: nil, now: 0)
            _ = try await store.createUser(email: "editor@example.org", passwordHash: hash, role: .editor, regions: nil, now: 0)
            _ = try await store.createUser(email: "viewer@example.org", passwordHash: hash, role: .viewer, regions: [1], now: 0)
            try await RegionSettingsStore(database: app.sidecar.database).set(
                RegionSettings(regionID: 1, agencyID: "1", timezone: "America/Los_Angeles"))
            try await RegionSettingsStore(database: app.sidecar.database).set(RegionSettings(regionID: 0, agencyID: "0", timezone: nil))
            try await body(app)
        }
        _ = await gorush.server.shutdown()
    }

    static func alertCount(_ app: TestSidecar) async throws -> Int {
        try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).count
            + AlertStore(database: app.sidecar.database).alerts(regionID: 0).count
    }

    static func newAlert(_ header: String, start: String = "2026-12-01T08:00") -> [(String, String)] {
        [
            ("header", header), ("description", "Buses skip 45th St"), ("cause", "CONSTRUCTION"), ("effect", "DETOUR"), ("severity", "WARNING"),
            ("start", start), ("end", ""), ("url", ""),
        ]
    }
}
