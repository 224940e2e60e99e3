import Crypto
import Database
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// The Go reference's operator session (`/api/admin/v1/session`), over HTTP,
/// following the behaviour of its `internal/httpapi/session_test.go` and
/// `middleware.go` (named in each test's comment): a console account signs in
/// with its email as `username`, and the cookie acts as that account, within
/// its role and regions.
@Suite("Admin API: the Go reference's operator session")
struct ReferenceSessionTests {
    static let password = "correct-horse-battery-staple"

    /// An admin of every region, an editor of every region and a viewer of
    /// region 1, on top of the contract suite's keys.
    static func run(_ body: (TestSidecar, ReferenceAdminContractTests.Keys) async throws -> Void) async throws {
        try await ReferenceAdminContractTests.run { app, keys in
            let store = ConsoleStore(database: app.sidecar.database)
            let hash = try PasswordHash.hash(password, parameters: .init(logN: 10, r: 8, p: 1))
            _ = try await store.createUser(email: "admin@example.org", passwordHash: hash, role: .admin, regions: nil, now: 0)
            _ = try await store.createUser(email: "editor@example.org", passwordHash: hash, role: .editor, regions: nil, now: 0)
            _ = try await store.createUser(email: "viewer@example.org", passwordHash: hash, role: .viewer, regions: [1], now: 0)
            try await body(app, keys)
        }
    }

    /// A sign-in; a 503 (the password checks, shared by every server in this
    /// test process, busy with other suites' sign-ins) is tried again, as a
    /// client would; the minute only catches a server that never answers.
    static func signIn(_ app: TestSidecar, _ json: String, headers: [String: String] = [:]) async throws -> RawResponse {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let answer = try await ReferenceAdminContractTests.call(app, "POST", "/session", key: nil, json: json, headers: headers)
            guard answer.status == 503, ContinuousClock.now < deadline else { return answer }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func credentials(_ username: String, _ password: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: ["username": username, "password": password]), as: UTF8.self)
    }

    /// The session cookie's value from a `Set-Cookie` answer.
    static func cookie(_ response: RawResponse) -> String? {
        response.headers.first { $0.name.lowercased() == "set-cookie" && $0.value.hasPrefix("sidecar_session=") }
            .map { String($0.value.dropFirst("sidecar_session=".count).prefix { $0 != ";" }) }
    }

    static func signedIn(_ app: TestSidecar, _ email: String) async throws -> String {
        let answer = try await signIn(app, credentials(email, password))
        #expect(answer.status == 200, "\(answer.text)")
        return try #require(cookie(answer))
    }

    static func call(
        _ app: TestSidecar, _ method: String, _ path: String, cookie: String?, json: String? = nil, headers: [String: String] = [:]
    ) async throws -> RawResponse {
        var all = headers
        if let cookie { all["Cookie"] = "sidecar_session=\(cookie)" }
        return try await ReferenceAdminContractTests.call(app, method, path, key: nil, json: json, headers: all)
    }

    /// session_test.go `TestLogin_Success`, `TestLogin_UsernameIsNormalized`,
    /// `TestLogin_UnknownFieldsIgnored`, `TestWhoami`, `TestLogout_DeletesSessionAndClearsCookie`,
    /// `TestLogout_Idempotent`.
    @Test func signInWhoamiAndSignOut() async throws {
        try await Self.run { app, _ in
            let answer = try await Self.signIn(app, #"{"username":"  ADMIN@example.org ","password":"\#(Self.password)","remember":true}"#)
            #expect(answer.status == 200 && answer.text == "{\"username\":\"admin@example.org\"}\n", "\(answer.text)")
            #expect(answer.header("Content-Type") == "application/json")
            let setCookie = try #require(answer.headers.first { $0.name.lowercased() == "set-cookie" }?.value)
            #expect(setCookie.contains("; Path=/;") && setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax"), "\(setCookie)")
            #expect(setCookie.contains("Max-Age=\(ConsoleRules.absoluteSeconds)") && !setCookie.contains("Secure"), "\(setCookie)")
            let cookie = try #require(Self.cookie(answer))
            // Only the cookie's hash is stored: a copy of the database is no session.
            let stored = try await app.sidecar.database.read { try $0.query("SELECT id_hash FROM console_sessions") }.map { try $0.string("id_hash") }
            #expect(stored == [ConsoleStore.hash(cookie)])

            let whoami = try await Self.call(app, "GET", "/session", cookie: cookie)
            #expect(whoami.status == 200 && whoami.text == "{\"username\":\"admin@example.org\"}\n")
            let anonymous = try await Self.call(app, "GET", "/session", cookie: nil)
            #expect(anonymous.status == 401 && anonymous.text == "{\"error\":\"authentication required\"}\n")

            let out = try await Self.call(app, "DELETE", "/session", cookie: cookie)
            #expect(out.status == 204 && out.body.isEmpty)
            #expect(
                out.header("Set-Cookie")?.hasPrefix("sidecar_session=; Path=/;") == true && out.header("Set-Cookie")?.contains("Max-Age=0") == true)
            #expect(try await Self.call(app, "GET", "/session", cookie: cookie).status == 401, "the session ended, not just the cookie")
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", cookie: cookie).status == 401)
            // Signing out again, or without a session, is the same 204 with the clearing cookie.
            for again in [cookie, nil, "not-a-real-token"] {
                let repeated = try await Self.call(app, "DELETE", "/session", cookie: again)
                #expect(repeated.status == 204 && repeated.header("Set-Cookie")?.contains("Max-Age=0") == true)
            }
        }
    }

    /// session_test.go `TestLogin_FailuresAreIndistinguishable`, `TestLogin_BadRequests`,
    /// `TestLogout_CrossSiteRejected`; and the console's limit on failed sign-ins.
    @Test func failuresLookAlikeAndAreLimited() async throws {
        try await Self.run { app, _ in
            var bodies: Set<String> = []
            for json in [
                Self.credentials("nosuchuser@example.org", Self.password), Self.credentials("admin@example.org", "wrong-password-entirely"),
                Self.credentials("", Self.password), Self.credentials("admin@example.org", ""), "{}",
            ] {
                let refused = try await Self.signIn(app, json)
                #expect(refused.status == 401 && Self.cookie(refused) == nil, "\(json)")
                bodies.insert(refused.text)
            }
            #expect(bodies == ["{\"error\":\"invalid credentials\"}\n"])
            for json in [
                #"{"username": "admin", "#, #"["admin","hunter2"]"#, "", #"{"username":"a","password":"\#(String(repeating: "x", count: 9000))"}"#,
            ] {
                let bad = try await Self.signIn(app, json)
                #expect(bad.status == 400 && ReferenceAdminContractTests.error(bad) != nil, "\(json.prefix(40)): \(bad.status)")
            }
            // A browser's cross-site sign-in (login CSRF) and sign-out are refused before anything else.
            let crossSite = try await Self.signIn(
                app, Self.credentials("admin@example.org", Self.password), headers: ["Sec-Fetch-Site": "cross-site"])
            #expect(crossSite.status == 403 && Self.cookie(crossSite) == nil)
            let cookie = try await Self.signedIn(app, "admin@example.org")
            let crossSiteOut = try await Self.call(app, "DELETE", "/session", cookie: cookie, headers: ["Origin": "https://evil.example"])
            #expect(crossSiteOut.status == 403)
            #expect(try await Self.call(app, "GET", "/session", cookie: cookie).status == 200, "a refused sign-out ends nothing")
            // The console's limit: after its failures from one address, even the right password waits.
            for _ in 0..<ConsoleRules.attemptsPerClient {
                _ = try await Self.signIn(app, Self.credentials("admin@example.org", "wrong-password-entirely"), headers: [:])
            }
            let limited = try await Self.signIn(app, Self.credentials("admin@example.org", Self.password))
            #expect(limited.status == 429 && limited.header("Retry-After") != nil && Self.cookie(limited) == nil, "\(limited.status)")
        }
    }

    /// middleware.go `requirePrincipal` (a present `Authorization` header means a bearer call and
    /// nothing else), principal.go's allow-lists for an operator, and region_scope.go's fence; a
    /// console account acts within its role and regions.
    @Test func theSessionActsAsItsAccount() async throws {
        try await Self.run { app, keys in
            let admin = try await Self.signedIn(app, "admin@example.org")
            let editor = try await Self.signedIn(app, "editor@example.org")
            let viewer = try await Self.signedIn(app, "viewer@example.org")
            // The operator: every region, keys, regions.
            let regions = try await Self.call(app, "GET", "/regions", cookie: admin)
            #expect(regions.status == 200 && ReferenceAdminContractTests.array(regions).count == app.sidecar.regions.all.count)
            let created = try await Self.call(
                app, "POST", "/regions/1/alerts", cookie: admin,
                json: #"{"header":"Detour on 44","description":"Use 3rd Ave","start_time":"2026-08-15T14:00:00-07:00"}"#)
            #expect(created.status == 201, "\(created.text)")
            let alertID = try #require(created.json?["id"] as? Int)
            let minted = try await Self.call(app, "POST", "/regions/1/api_keys", cookie: admin, json: #"{"name":"CAD","scopes":["push"]}"#)
            #expect(minted.status == 201, "\(minted.text)")
            let key = try #require(minted.json?["key"] as? String)
            #expect(key.hasPrefix("obask_1_"))
            let listed = ReferenceAdminContractTests.array(try await Self.call(app, "GET", "/regions/1/api_keys", cookie: admin))
            let madeBy = listed.first { $0["name"] as? String == "CAD" }?["created_by"] as? [String: Any]
            #expect(madeBy?["kind"] as? String == "operator")
            // The audit log names the person.
            let audited = try await AuditLog(database: app.sidecar.database).entries(regions: nil).filter { $0.target == "alert \(alertID)" }
            #expect(!audited.isEmpty && audited.allSatisfy { $0.actor == "user:admin@example.org" }, "\(audited)")

            // An editor authors but neither sends to everyone, nor manages keys, nor sets up a region.
            #expect(try await Self.call(app, "GET", "/regions/0/alerts", cookie: editor).status == 200)
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/\(alertID)/publish", cookie: editor).status == 200)
            let push = try await Self.call(app, "POST", "/regions/1/alerts/\(alertID)/pushes", cookie: editor, json: "{}")
            #expect(push.status == 403 && ReferenceAdminContractTests.error(push) == "forbidden")
            #expect(try await Self.call(app, "GET", "/regions/1/api_keys", cookie: editor).status == 403)
            #expect(try await Self.call(app, "PATCH", "/regions/1", cookie: editor, json: #"{"timezone":"UTC"}"#).status == 403)

            // A viewer of region 1 reads region 1 only; other regions are not found, writes forbidden.
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", cookie: viewer).status == 200)
            let foreign = try await Self.call(app, "GET", "/regions/0/alerts", cookie: viewer)
            #expect(foreign.status == 404 && ReferenceAdminContractTests.error(foreign) == "region not found")
            #expect(ReferenceAdminContractTests.array(try await Self.call(app, "GET", "/regions", cookie: viewer)).map { $0["id"] as? Int } == [1])
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/\(alertID)/unpublish", cookie: viewer).status == 403)

            // A present Authorization header is a bearer call: a session never rescues a bad key,
            // and a key is no person (whoami).
            let rescued = try await Self.call(app, "GET", "/regions/1/alerts", cookie: admin, headers: ["Authorization": "Bearer nonsense"])
            #expect(rescued.status == 401 && ReferenceAdminContractTests.error(rescued) == "invalid api key")
            let keyWhoami = try await ReferenceAdminContractTests.call(app, "GET", "/session", key: keys.operatorKey)
            #expect(keyWhoami.status == 403 && ReferenceAdminContractTests.error(keyWhoami) == "forbidden")
            #expect(try await ReferenceAdminContractTests.call(app, "GET", "/regions/1/alerts", key: key).status == 200)

            // The cookie works beside the console's own: either live one will do.
            let both = try await ReferenceAdminContractTests.call(
                app, "GET", "/session", key: nil, headers: ["Cookie": "sidecar_session=stale-value; sidecar_session=\(viewer)"])
            #expect(both.status == 200 && both.json?["username"] as? String == "viewer@example.org")
            let console = try await app.send("GET", "/admin/regions/1", headers: ["Cookie": "sidecar_session=\(viewer)"])
            #expect(console.status == 200, "the API's session signs the browser in to the console too")
        }
    }
}
