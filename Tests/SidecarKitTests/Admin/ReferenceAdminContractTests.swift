import Database
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// The Go reference sidecar's admin contract (`/api/admin/v1`), driven over
/// HTTP against the binary's server on whichever backend the run uses. Each
/// test follows the behaviour of the reference's own handler tests in
/// `internal/httpapi/` (named in each test's comment), not their code.
@Suite("Admin API: the Go reference's contract")
struct ReferenceAdminContractTests {
    /// Region 0 (agency HART, New York), 1 (agency 1, Los Angeles) and 2
    /// (no agency, no zone), as the reference's fixtures; an operator (an
    /// admin key of every region), region-1 keys with and without push, and
    /// a service principal.
    struct Keys {
        let operatorKey: String
        let regionOne: String
        let regionOnePush: String
        let principal: String
    }

    static func run(transport: Bool = true, _ body: (TestSidecar, Keys) async throws -> Void) async throws {
        let gorush = try FakeGorush()
        try await TestSidecar.run({
            if transport { $0.gorushURL = gorush.url }
            $0.runsSendResumer = false
        }) { app in
            _ = try await app.administration.setRegion(id: 0, agencyID: "HART", timezone: "America/New_York")
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles")
            let store = ApiKeyStore(database: app.sidecar.database)
            let keys = Keys(
                operatorKey: try await store.create(name: "operator", canPush: true, isAdmin: true, actor: "cli:test", now: 0).key,
                regionOne: try await store.create(name: "one", regions: [1], actor: "cli:test", now: 0).key,
                regionOnePush: try await store.create(name: "one-push", regions: [1], canPush: true, actor: "cli:test", now: 0).key,
                principal: try await store.create(name: "obacloud", principal: true, actor: "cli:test", now: 0).key)
            try await body(app, keys)
        }
        await gorush.server.shutdown()
    }

    static func call(
        _ app: TestSidecar, _ method: String, _ path: String, key: String?, json: String? = nil, headers: [String: String] = [:]
    ) async throws -> RawResponse {
        var all = headers
        if let key { all["Authorization"] = "Bearer \(key)" }
        if json != nil { all["Content-Type"] = "application/json" }
        return try await app.send(method, "/api/admin/v1" + path, headers: all, body: Array((json ?? "").utf8))
    }

    static func array(_ response: RawResponse) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [[String: Any]] ?? []
    }

    static func error(_ response: RawResponse) -> String? { response.json?["error"] as? String }

    /// A draft in region 1 through the contract; its id.
    static func makeAlert(_ app: TestSidecar, key: String, region: Int = 1, extra: String = "") async throws -> Int {
        let created = try await call(
            app, "POST", "/regions/\(region)/alerts", key: key,
            json: #"{"header":"Detour on 44","description":"Use 3rd Ave","start_time":"2026-08-15T14:00:00-07:00"\#(extra)}"#)
        #expect(created.status == 201, "\(created.text)")
        return try #require(created.json?["id"] as? Int)
    }

    /// bearer_test.go `TestBearer_MalformedHeadersAre401`, `TestBearer_DuplicateHeaderIs401`,
    /// `TestBearer_PrefixRowMismatchIs401`, `TestBearer_ThrottleChargesFailuresOnly` (at the
    /// reference's own limit of 60), and admin_alerts_test.go `TestAdminRoutes_EveryRouteRequiresAPrincipal`.
    @Test func bearerKeysAreReadAsTheReferenceReadsThem() async throws {
        try await Self.run { app, keys in
            let none = try await Self.call(app, "GET", "/regions/1/alerts", key: nil)
            #expect(none.status == 401 && Self.error(none) == "authentication required")
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: keys.regionOne).status == 200)
            #expect(
                try await Self.call(app, "GET", "/regions/1/alerts", key: nil, headers: ["Authorization": "bearer " + keys.regionOne]).status == 200)
            let secret = String(repeating: "A", count: 43)
            for header in [
                "", "obask_1_" + secret, "Token " + keys.regionOne, "Basic " + keys.regionOne, "Bearer  " + keys.regionOne,
                "Bearer" + keys.regionOne, "Bearer sk_live_abc", "Bearer obask_1_" + secret, "Bearer " + String(repeating: "x", count: 200),
                // The prefix names region 0, the row is region 1's: the text decides nothing, the mismatch refuses it.
                "Bearer " + keys.regionOne.replacing("obask_1_", with: "obask_0_"),
            ] {
                let refused = try await Self.call(app, "GET", "/regions/1/alerts", key: nil, headers: ["Authorization": header])
                #expect(refused.status == 401 && Self.error(refused) == "invalid api key", "\(header.prefix(20)): \(refused.status) \(refused.text)")
                #expect(refused.header("Content-Type") == "application/json")
            }
            // Two Authorization headers: refused as a bearer failure.
            let twice = try await RawHTTPClient.send(
                port: app.port,
                Array(
                    "GET /api/admin/v1/regions/1/alerts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(keys.regionOne)\r\nAuthorization: Bearer \(keys.regionOne)\r\nConnection: close\r\n\r\n"
                        .utf8))
            #expect(twice.status == 401)
            // 11 failures so far; at 60 a minute the 61st is 429 with no body, and a valid key still gets in.
            for _ in 0..<49 { #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: "obask_1_nope").status == 401) }
            let throttled = try await Self.call(app, "GET", "/regions/1/alerts", key: "obask_1_nope")
            #expect(throttled.status == 429 && throttled.body.isEmpty, "\(throttled.status) \(throttled.text)")
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: keys.regionOne).status == 200, "successes are never charged")
            // No key's text ever reaches the log.
            #expect(!app.log.lines.joined().contains(keys.regionOne))
        }
    }

    /// admin_alerts_test.go `TestAdminRoutes_PrincipalAllowLists`, `TestAdminRoutes_EveryWriteIsCrossSiteGuarded`,
    /// bearer_test.go `TestBearer_ValidPrincipalAuthenticates`, `TestBearer_CrossSiteGuardStillApplies`,
    /// region_scope_test.go `TestRequireRegion_MalformedSegmentIs404`, `TestRequireRegion_UnknownAndForeignAreIndistinguishable`,
    /// `TestRequireRegion_InactiveRegionStaysAuthorable`.
    @Test func whoMayCallWhatAndWhere() async throws {
        try await Self.run { app, keys in
            // A principal is authenticated but may only manage keys: 403, not 401, and before the region check.
            for path in ["/regions/1/alerts", "/regions/9999/alerts", "/regions/1"] {
                let refused = try await Self.call(app, "GET", path, key: keys.principal)
                #expect(refused.status == 403 && Self.error(refused) == "forbidden", "\(path)")
            }
            #expect(try await Self.call(app, "GET", "/regions", key: keys.regionOne).status == 403, "the list of regions is the operator's")
            #expect(try await Self.call(app, "GET", "/regions/1/api_keys", key: keys.regionOnePush).status == 403, "a key never manages keys")
            // Malformed, unknown and someone else's region: the same bytes.
            let foreign = try await Self.call(app, "GET", "/regions/0/alerts", key: keys.regionOne)
            #expect(foreign.status == 404 && foreign.text == "{\"error\":\"region not found\"}\n")
            for segment in ["abc", "01", "-1", "+1", "1.0", "1%20", "%201", "123456789012345678901", "9999"] {
                let answer = try await Self.call(app, "GET", "/regions/\(segment)/alerts", key: keys.regionOne)
                #expect(answer.status == 404 && answer.body == foreign.body, "\(segment): \(answer.status) \(answer.text)")
            }
            #expect(try await Self.call(app, "GET", "/regions/9999/alerts", key: keys.operatorKey).body == foreign.body)
            // Region 2 has no agency and no zone, and stays authorable by the operator.
            #expect(try await Self.call(app, "GET", "/regions/2/alerts", key: keys.operatorKey).status == 200)
            // The cross-site guard comes before authentication, on writes only.
            let crossSite = try await Self.call(
                app, "POST", "/regions/1/alerts", key: keys.regionOne, json: "{}", headers: ["Sec-Fetch-Site": "cross-site"])
            #expect(crossSite.status == 403 && Self.error(crossSite) == "cross-site request rejected")
            let foreignOrigin = try await Self.call(
                app, "POST", "/regions/1/alerts", key: "nonsense", json: "{}", headers: ["Origin": "https://evil.example"])
            #expect(foreignOrigin.status == 403 && Self.error(foreignOrigin) == "cross-site request rejected")
            #expect(
                try await Self.call(app, "GET", "/regions/1/alerts", key: keys.regionOne, headers: ["Sec-Fetch-Site": "cross-site"]).status == 200)
        }
    }

    /// admin_apikeys_test.go: `TestAPIKeys_MintReturnsTheRawKeyOnce`, `TestAPIKeys_NameValidation`,
    /// `TestAPIKeys_NameControlCharsAreStripped`, `TestAPIKeys_ListNeverEchoesTheKey`, `TestAPIKeys_ListIsMakeNotNil`,
    /// `TestAPIKeys_RevokeIsRegionScopedAndIdempotent`, `TestAPIKeys_ServicePrincipalCanMintAnywhereButReadNothing`,
    /// `TestAPIKeys_ScopesTakeEffect`, `TestAPIKeys_ScopesValidation`; and the cutover runbook's step 5.
    @Test func aPrincipalMintsListsAndRevokesRegionKeys() async throws {
        try await Self.run { app, keys in
            #expect(try await Self.call(app, "GET", "/regions/2/api_keys", key: keys.principal).text == "[]\n")
            let minted = try await Self.call(
                app, "POST", "/regions/1/api_keys", key: keys.principal, json: #"{"name":"runbook check","scopes":["push"]}"#)
            #expect(minted.status == 201, "\(minted.text)")
            #expect(minted.header("Cache-Control") == "no-store" && minted.header("Location") == nil)
            let body = try #require(minted.json)
            #expect(Set(body.keys) == ["id", "name", "scopes", "key", "created_by", "created_at"])
            let key = try #require(body["key"] as? String)
            #expect(key.hasPrefix("obask_1_") && key.count == 51)
            #expect(body["scopes"] as? [String] == ["push"])
            #expect((body["created_by"] as? [String: Any])?["kind"] as? String == "principal")
            #expect(!app.log.lines.joined().contains(key), "the key is never logged")
            // It works on its own region, is 404 elsewhere, and may push.
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: key).status == 200)
            #expect(try await Self.call(app, "GET", "/regions/0/alerts", key: key).status == 404)
            // Names: control characters removed, then trimmed, 1 to 100 bytes.
            for (name, status) in [
                ("\"\"", 422), ("\"   \"", 422), ("\"\\u0001\\u0002\"", 422), ("\"" + String(repeating: "a", count: 101) + "\"", 422),
                ("\"" + String(repeating: "中", count: 34) + "\"", 422), ("\"" + String(repeating: "a", count: 100) + "\"", 201),
                ("\"" + String(repeating: "中", count: 33) + "\"", 201),
            ] {
                let answer = try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: "{\"name\":\(name)}")
                #expect(answer.status == status, "\(name.prefix(12)): \(answer.text)")
                if status == 422 { #expect(Self.error(answer) == "name must be 1-100 bytes after trimming") }
            }
            #expect(try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: "{").status == 400)
            let stripped = try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: #"{"name":"ob\u001b[2Jacloud"}"#)
            #expect(stripped.json?["name"] as? String == "ob[2Jacloud")
            // Scopes: push is the only one.
            let unknown = try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: #"{"name":"x","scopes":["admin"]}"#)
            #expect(unknown.status == 400 && unknown.text == "{\"error\":\"unknown scope \\\"admin\\\"\"}\n")
            #expect(try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: #"{"name":"x","scopes":[""]}"#).status == 400)
            #expect(
                try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: #"{"name":"x","scopes":"push"}"#).status == 400)
            let plain = try await Self.call(app, "POST", "/regions/1/api_keys", key: keys.principal, json: #"{"name":"x","scopes":[]}"#)
            #expect(plain.status == 201 && plain.json?["scopes"] as? [String] == [])
            // A principal mints anywhere the directory has, and reads nothing.
            for region in [0, 2] {
                #expect(try await Self.call(app, "POST", "/regions/\(region)/api_keys", key: keys.principal, json: #"{"name":"r"}"#).status == 201)
            }
            #expect(try await Self.call(app, "POST", "/regions/9999/api_keys", key: keys.principal, json: #"{"name":"r"}"#).status == 404)
            // The list: newest first, never a key's text.
            let listed = try await Self.call(app, "GET", "/regions/1/api_keys", key: keys.principal)
            let items = Self.array(listed)
            #expect(!listed.text.contains(key) && !items.isEmpty)
            #expect(
                items.allSatisfy {
                    Set($0.keys) == ["id", "name", "scopes", "created_by", "created_at", "last_used_at", "revoked_at", "revoked_by"]
                })
            let ids = items.compactMap { $0["id"] as? Int }
            #expect(ids == ids.sorted(by: >))
            // Revoking: region-scoped, idempotent, and the key then fails.
            let id = try #require(body["id"] as? Int)
            #expect(try await Self.call(app, "DELETE", "/regions/0/api_keys/\(id)", key: keys.principal).status == 404)
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: key).status == 200, "still works after a foreign revoke")
            #expect(try await Self.call(app, "DELETE", "/regions/1/api_keys/\(id)", key: keys.principal).status == 204)
            #expect(try await Self.call(app, "DELETE", "/regions/1/api_keys/\(id)", key: keys.principal).status == 204)
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: key).status == 401)
            #expect(try await Self.call(app, "DELETE", "/regions/1/api_keys/99999", key: keys.principal).status == 404)
            let bad = try await Self.call(app, "DELETE", "/regions/1/api_keys/abc", key: keys.principal)
            #expect(bad.status == 400 && Self.error(bad) == "invalid keyId \"abc\": must be an integer")
            let revoked = Self.array(try await Self.call(app, "GET", "/regions/1/api_keys", key: keys.principal)).first { $0["id"] as? Int == id }
            #expect((revoked?["revoked_by"] as? [String: Any])?["kind"] as? String == "principal")
        }
    }

    /// admin_regions_test.go: `TestAdminRegions_List`, `TestAdminRegions_PatchSetsOnlyWhatWasSent`,
    /// `TestAdminRegions_PatchRejections`, `TestAdminRegions_PatchThenCreateAlert`, `TestAdminRegions_KeyStatus`,
    /// `TestAdminRegions_PatchEmptyBodyNamesAllThreeFields`; region_scope_test.go `TestGetRegion_ReportsFeatures`.
    @Test func regionsAndTheirSettings() async throws {
        try await Self.run { app, keys in
            let listed = Self.array(try await Self.call(app, "GET", "/regions", key: keys.operatorKey))
            #expect(Array(listed.compactMap { $0["id"] as? Int }.prefix(3)) == [0, 1, 2])
            let zero = try #require(listed.first)
            #expect(
                Set(zero.keys) == [
                    "id", "name", "oba_base_url", "sidecar_base_url", "active", "default_agency_id", "timezone", "latitude", "longitude",
                    "oba_api_key",
                ])
            #expect(zero["default_agency_id"] as? String == "HART" && zero["timezone"] as? String == "America/New_York")
            #expect(listed[2]["timezone"] as? String == "UTC" && listed[2]["default_agency_id"] as? String == "")
            #expect(zero["oba_api_key"] as? String == "none")
            let one = try #require(try await Self.call(app, "GET", "/regions/1", key: keys.regionOne).json)
            #expect(one["features"] as? [String] == ["alerts", "pushes", "surveys", "ghost_bus_reports", "alarms", "push_registrations", "api_keys"])
            // PATCH: only what was sent; "" clears the agency; the reference's refusals.
            let patched = try await Self.call(app, "PATCH", "/regions/1", key: keys.regionOne, json: #"{"timezone":"America/Chicago"}"#)
            #expect(patched.status == 200 && patched.json?["default_agency_id"] as? String == "1" && patched.json?["features"] == nil)
            for (body, message) in [
                ("{}", "provide default_agency_id, timezone, and/or oba_api_key"),
                (#"{"timezone":null}"#, "provide default_agency_id, timezone, and/or oba_api_key"),
                (#"{"timezone":""}"#, "timezone must not be empty; pass an IANA zone name such as America/Los_Angeles"),
                (#"{"timezone":"Local"}"#, "timezone \"Local\" is machine-dependent; use an explicit IANA zone name"),
            ] {
                let refused = try await Self.call(app, "PATCH", "/regions/1", key: keys.regionOne, json: body)
                #expect(refused.status == 400 && Self.error(refused) == message, "\(body): \(refused.text)")
            }
            #expect(try await Self.call(app, "PATCH", "/regions/1", key: keys.regionOne, json: #"{"timezone":"Mars/Olympus"}"#).status == 400)
            #expect(try await Self.call(app, "PATCH", "/regions/1", key: keys.regionOne, json: "{").status == 400)
            #expect(try await Self.call(app, "PATCH", "/regions/abc", key: keys.operatorKey, json: #"{"timezone":"UTC"}"#).status == 404)
            // Region 2 has no agency: a create names the PATCH that fixes it, and works after it.
            let noAgency = try await Self.call(
                app, "POST", "/regions/2/alerts", key: keys.operatorKey, json: #"{"header":"x","start_time":"2026-08-15T14:00:00Z"}"#)
            #expect(
                noAgency.status == 400
                    && Self.error(noAgency)
                        == "no agency_id given and region 2 has no default agency id; set one with PATCH /api/admin/v1/regions/2 or pass agency_id"
            )
            #expect(try await Self.call(app, "PATCH", "/regions/2", key: keys.operatorKey, json: #"{"default_agency_id":"KCM"}"#).status == 200)
            _ = try await Self.makeAlert(app, key: keys.operatorKey, region: 2)
            let cleared = try await Self.call(app, "PATCH", "/regions/2", key: keys.operatorKey, json: #"{"default_agency_id":""}"#)
            #expect(cleared.json?["default_agency_id"] as? String == "")
            #expect(try await RegionSettingsStore(database: app.sidecar.database).settings(regionID: 1)?.timezone == "America/Chicago")
        }
    }

    /// admin_alerts_test.go: `TestAdminAlerts_CreateSuccess`, `TestAdminAlerts_CreateRejections`,
    /// `TestAdminAlerts_CreateEmptyEnumsDegrade`, `TestAdminAlerts_List`, `TestAdminAlerts_Get`,
    /// `TestAdminAlerts_PatchEndTime`, `TestAdminAlerts_PatchRejections`, `TestAdminAlerts_PatchIsTestFalse`,
    /// `TestAdminAlerts_PublishUnpublish`, `TestAdminAlerts_Delete`; region_scope_test.go
    /// `TestLoadAlert_ForeignAlertIs404`, `TestLoadAlert_MalformedIDIs400`, `TestAdminAlerts_CreateRejectsRegionID`,
    /// `TestAdminAlerts_CreateLocationCarriesTheRegion`.
    @Test func alertsAreAuthoredPublishedAndDeleted() async throws {
        try await Self.run { app, keys in
            #expect(try await Self.call(app, "GET", "/regions/1/alerts", key: keys.regionOne).text == "[]\n")
            let created = try await Self.call(
                app, "POST", "/regions/1/alerts", key: keys.regionOne,
                json:
                    #"{"header":"Detour <44>","description":"Use 3rd & Pine","cause":" construction ","start_time":"2026-08-15T14:00:00-07:00","region_id":null}"#
            )
            #expect(created.status == 201, "\(created.text)")
            let alert = try #require(created.json)
            let id = try #require(alert["id"] as? Int)
            #expect(created.header("Location") == "/api/admin/v1/regions/1/alerts/\(id)")
            #expect(created.header("Content-Type") == "application/json")
            #expect(created.text.contains("Detour \\u003c44\\u003e") && created.text.hasSuffix("}\n"), "Go's encoder")
            #expect(
                Set(alert.keys) == [
                    "id", "region_id", "agency_id", "header", "description", "url", "cause", "effect", "severity", "start_time", "end_time",
                    "published", "is_test", "created_at", "updated_at", "translations",
                ])
            #expect(alert["cause"] as? String == "CONSTRUCTION" && alert["effect"] as? String == "UNKNOWN_EFFECT")
            #expect(alert["severity"] as? String == "UNKNOWN_SEVERITY" && alert["agency_id"] as? String == "1")
            #expect(alert["start_time"] as? String == "2026-08-15T21:00:00Z" && alert["end_time"] is NSNull)
            #expect(alert["published"] as? Bool == false && (alert["translations"] as? [Any])?.isEmpty == true)
            // The reference's refusals, each a 400 that writes nothing.
            for (body, start) in [
                (#"{"header":"x","start_time":"2026-08-15T14:00:00Z","region_id":0}"#, "region_id is not accepted"),
                (#"{"start_time":"2026-08-15T14:00:00Z"}"#, "header is required"),
                (#"{"header":"x","start_time":"2026-08-15T14:00:00"}"#, "\"2026-08-15T14:00:00\" must be RFC 3339 with an explicit offset"),
                (#"{"header":"x","start_time":"1999-08-15T14:00:00Z"}"#, "start 1999-08-15 14:00:00 +0000 UTC is before 2000"),
                (
                    #"{"header":"x","start_time":"2026-08-15T14:00:00Z","end_time":"2026-08-15T13:00:00Z"}"#,
                    "end 2026-08-15 13:00:00 +0000 UTC must be after start"
                ),
                (
                    #"{"header":"x","start_time":"2026-08-15T14:00:00Z","effect":"teleport"}"#,
                    "unknown effect \"teleport\"; valid values: ACCESSIBILITY_ISSUE, ADDITIONAL_SERVICE"
                ),
                ("", "invalid JSON"), ("{", "invalid JSON"),
            ] {
                let refused = try await Self.call(app, "POST", "/regions/1/alerts", key: keys.regionOne, json: body)
                #expect(refused.status == 400 && Self.error(refused)?.hasPrefix(start) == true, "\(body): \(refused.text)")
            }
            #expect(
                try await Self.call(
                    app, "POST", "/regions/1/alerts", key: keys.regionOne, json: #"{"header":"x","start_time":"2026-08-15T14:00:00"}"#
                ).text
                    .contains("region 1 is configured as America/Los_Angeles"))
            #expect(Self.array(try await Self.call(app, "GET", "/regions/1/alerts", key: keys.regionOne)).count == 1, "nothing written")
            // Reads: a bad id 400, another region's alert 404 alike.
            let bad = try await Self.call(app, "GET", "/regions/1/alerts/abc", key: keys.regionOne)
            #expect(bad.status == 400 && Self.error(bad) == "invalid id \"abc\": must be an integer")
            let foreignID = try await Self.makeAlert(app, key: keys.operatorKey, region: 0)
            for method in ["GET", "DELETE"] {
                let foreign = try await Self.call(app, method, "/regions/1/alerts/\(foreignID)", key: keys.regionOne)
                #expect(foreign.status == 404 && Self.error(foreign) == "alert not found")
            }
            #expect(try await app.administration.alert(id: Int64(foreignID)).header == "Detour on 44", "not deleted")
            // PATCH: end_time sets, clear_end_time clears, both refuse; the window is the merged one.
            let ended = try await Self.call(
                app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne, json: #"{"end_time":"2026-08-16T00:00:00Z","is_test":true}"#)
            #expect(ended.json?["end_time"] as? String == "2026-08-16T00:00:00Z" && ended.json?["is_test"] as? Bool == true)
            #expect(ended.json?["header"] as? String == "Detour <44>", "what was not sent is kept")
            let both = try await Self.call(
                app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne, json: #"{"end_time":"2026-08-17T00:00:00Z","clear_end_time":true}"#)
            #expect(both.status == 400 && Self.error(both) == "send only one of end_time and clear_end_time")
            let early = try await Self.call(
                app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne, json: #"{"start_time":"2026-08-16T01:00:00Z"}"#)
            #expect(early.status == 400, "a start after the stored end: \(early.text)")
            let later = try await Self.call(
                app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne,
                json: #"{"start_time":"2026-08-16T01:00:00Z","clear_end_time":true,"is_test":false}"#)
            #expect(later.status == 200 && later.json?["end_time"] is NSNull && later.json?["is_test"] as? Bool == false, "\(later.text)")
            for (body, message) in [(#"{"header":""}"#, "header must not be empty"), (#"{"agency_id":""}"#, "agency_id must not be empty")] {
                let refused = try await Self.call(app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne, json: body)
                #expect(refused.status == 400 && Self.error(refused) == message)
            }
            #expect(try await Self.call(app, "PATCH", "/regions/1/alerts/424242", key: keys.regionOne, json: "{}").status == 404)
            // Publish and withdraw; delete once.
            let future = try await Self.call(
                app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne, json: #"{"start_time":"2027-01-01T00:00:00Z"}"#)
            #expect(future.status == 200)
            let published = try await Self.call(app, "POST", "/regions/1/alerts/\(id)/publish", key: keys.regionOne)
            #expect(published.status == 200 && published.json?["published"] as? Bool == true, "\(published.text)")
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/\(id)/unpublish", key: keys.regionOne).json?["published"] as? Bool == false)
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/424242/publish", key: keys.regionOne).status == 404)
            let deleted = try await Self.call(app, "DELETE", "/regions/1/alerts/\(id)", key: keys.regionOne)
            #expect(deleted.status == 204 && deleted.body.isEmpty)
            #expect(try await Self.call(app, "GET", "/regions/1/alerts/\(id)", key: keys.regionOne).status == 404)
            #expect(try await Self.call(app, "DELETE", "/regions/1/alerts/\(id)", key: keys.regionOne).status == 404)
        }
    }

    /// admin_alerts_test.go `TestAdminAlerts_Translations`, `TestAdminAlerts_TranslationStaleFlag`,
    /// `TestAdminAlerts_PatchKeepsTranslations`.
    @Test func translationsKeepTheirFieldsAndSayWhenStale() async throws {
        try await Self.run { app, keys in
            let id = try await Self.makeAlert(app, key: keys.regionOne)
            let put = try await Self.call(
                app, "PUT", "/regions/1/alerts/\(id)/translations/ES", key: keys.regionOne, json: #"{"header":"Desvío","description":"Use la 3ra"}"#)
            #expect(put.status == 200, "\(put.text)")
            let translations = try #require(put.json?["translations"] as? [[String: Any]])
            #expect(translations.count == 1 && translations[0]["language"] as? String == "es" && translations[0]["stale"] as? Bool == false)
            // A field not given keeps the stored one.
            let headerOnly = try await Self.call(
                app, "PUT", "/regions/1/alerts/\(id)/translations/es", key: keys.regionOne, json: #"{"header":"Desvío en la 44"}"#)
            let kept = (headerOnly.json?["translations"] as? [[String: Any]])?.first
            #expect(kept?["header"] as? String == "Desvío en la 44" && kept?["description"] as? String == "Use la 3ra")
            for body in ["{}", #"{"header":null,"description":null}"#] {
                let refused = try await Self.call(app, "PUT", "/regions/1/alerts/\(id)/translations/es", key: keys.regionOne, json: body)
                #expect(refused.status == 400 && Self.error(refused) == "provide header and/or description")
            }
            let blank = try await Self.call(app, "PUT", "/regions/1/alerts/\(id)/translations/%20", key: keys.regionOne, json: #"{"header":"x"}"#)
            #expect(blank.status == 400 && Self.error(blank) == "invalid language \" \": must be a BCP-47 tag such as es", "\(blank.text)")
            // Editing the English makes it stale; a PATCH answers with the translations.
            let edited = try await Self.call(app, "PATCH", "/regions/1/alerts/\(id)", key: keys.regionOne, json: #"{"description":"Use 4th Ave"}"#)
            #expect((edited.json?["translations"] as? [[String: Any]])?.first?["stale"] as? Bool == true)
            let retranslated = try await Self.call(
                app, "PUT", "/regions/1/alerts/\(id)/translations/es", key: keys.regionOne, json: #"{"description":"Use la 4ta"}"#)
            #expect((retranslated.json?["translations"] as? [[String: Any]])?.first?["stale"] as? Bool == false)
            // DELETE: 204, then 404.
            #expect(try await Self.call(app, "DELETE", "/regions/1/alerts/\(id)/translations/es", key: keys.regionOne).status == 204)
            let again = try await Self.call(app, "DELETE", "/regions/1/alerts/\(id)/translations/es", key: keys.regionOne)
            #expect(again.status == 404 && Self.error(again) == "alert not found")
            #expect(try await Self.call(app, "DELETE", "/regions/1/alerts/424242/translations/es", key: keys.regionOne).status == 404)
        }
    }

    /// admin_pushes_test.go `TestAdminCreatePushAcceptsAnEmptyBody`, `TestAdminCreatePushPreconditions`,
    /// `TestAdminListCancelAndAudience`, `TestAdminPushAudienceForcedTest`, `TestAdminPushes_PushScopedKeyCanSendAndCancel`,
    /// `TestAdminCreatePush_CustomMessages`, `TestAdminCreatePush_InvalidMessagesAre400`,
    /// `TestAdminPushRoutesRequireAPrincipalAndAreAbsentWithoutWaker`.
    @Test func pushesStartListCancelAndCount() async throws {
        try await Self.run { app, keys in
            let id = try await Self.makeAlert(app, key: keys.regionOne, extra: #","start_time":"2027-01-01T00:00:00Z""#)
            let path = "/regions/1/alerts/\(id)/pushes"
            #expect(try await Self.call(app, "GET", path, key: keys.regionOne).text == "[]\n")
            let unpublished = try await Self.call(app, "POST", path, key: keys.regionOnePush)
            #expect(unpublished.status == 409 && Self.error(unpublished) == "alert is not published")
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/\(id)/publish", key: keys.regionOne).status == 200)
            let empty = try await Self.call(app, "POST", path, key: keys.regionOnePush)
            #expect(empty.status == 409 && Self.error(empty) == "no registered devices in the audience")
            // The push scope: a plain key may not start or cancel.
            #expect(try await Self.call(app, "POST", path, key: keys.regionOne).status == 403)
            #expect(try await Self.call(app, "POST", path, key: keys.regionOnePush, json: #"{"audience":"everyone"}"#).status == 400)
            for messages in [
                "{}", #"{"es":{"title":"a","body":"b"}}"#, #"{"en":{"title":"a","body":"  "}}"#,
                #"{"en":{"title":"\#(String(repeating: "t", count: 49))","body":"b"}}"#,
                #"{"en":{"title":"a","body":"\#(String(repeating: "b", count: 121))"}}"#,
                #"{"en":{"title":"a","body":"b"},"ES":{"title":"a","body":"b"}}"#,
                "[]",
            ] {
                let refused = try await Self.call(app, "POST", path, key: keys.regionOnePush, json: "{\"messages\":\(messages)}")
                #expect(refused.status == 400, "\(messages): \(refused.text)")
            }
            try await app.registerDevices("reference", count: 3)
            let audience = try #require(try await Self.call(app, "GET", "/regions/1/alerts/\(id)/push_audience", key: keys.regionOne).json)
            #expect((audience["all"] as? [String: Int]) == ["total": 3, "ios": 3, "android": 0])
            #expect((audience["test"] as? [String: Int]) == ["total": 0, "ios": 0, "android": 0] && audience["forced_test"] as? Bool == false)
            let started = try await Self.call(
                app, "POST", path, key: keys.regionOnePush,
                json: #"{"messages":{"en":{"title":"Detour","body":"Use 3rd Ave"},"es":{"title":"Desvío","body":"Use la 3ra"}}}"#)
            #expect(started.status == 202, "\(started.text)")
            let push = try #require(started.json)
            #expect(
                Set(push.keys) == [
                    "id", "alert_id", "region_id", "audience", "status", "device_count", "submitted_count", "failed_count", "attempts", "last_error",
                    "messages", "failure_reasons", "created_at", "started_at", "completed_at",
                ])
            #expect(push["audience"] as? String == "all" && push["last_error"] as? String == "")
            #expect(((push["messages"] as? [String: [String: String]])?["es"])?["title"] == "Desvío", "stored word for word")
            let pushID = try #require(push["id"] as? Int)
            // It runs to the end; the list shows it sent; a finished push cannot be cancelled.
            #expect(
                try await app.eventually {
                    Self.array(try await Self.call(app, "GET", path, key: keys.regionOne)).first?["status"] as? String == "sent"
                })
            let late = try await Self.call(app, "DELETE", "\(path)/\(pushID)", key: keys.regionOnePush)
            #expect(late.status == 409 && Self.error(late) == "alert push already completed")
            let notNumber = try await Self.call(app, "DELETE", "\(path)/not-a-number", key: keys.regionOnePush)
            #expect(notNumber.status == 400 && Self.error(notNumber) == "invalid pushId \"not-a-number\": must be an integer")
            #expect(try await Self.call(app, "DELETE", "\(path)/424242", key: keys.regionOnePush).status == 404)
            let other = try await Self.makeAlert(app, key: keys.regionOne)
            let through = try await Self.call(app, "DELETE", "/regions/1/alerts/\(other)/pushes/\(pushID)", key: keys.regionOnePush)
            #expect(through.status == 404 && Self.error(through) == "alert push not found")
            // A test alert's audience is forced to the test devices.
            let test = try await Self.makeAlert(app, key: keys.regionOne, extra: #","is_test":true"#)
            #expect(
                try await Self.call(app, "GET", "/regions/1/alerts/\(test)/push_audience", key: keys.regionOne).json?["forced_test"] as? Bool == true)
        }
    }

    /// A push cancelled while it runs stops after the page in hand and is
    /// never resumed (admin_pushes_test.go `TestAdminListCancelAndAudience`:
    /// cancel gives 204, a second cancel 409).
    @Test func aRunningPushIsCancelledOnce() async throws {
        try await Self.run { app, keys in
            let id = try await Self.makeAlert(app, key: keys.regionOne, extra: #","start_time":"2027-01-01T00:00:00Z""#)
            _ = try await app.administration.setPublished(id: Int64(id), true)
            try await app.registerDevices("cancel", count: 2)
            // A send as a server that died mid-way would leave it: running, not launched here.
            let (send, _) = try await app.administration.startSend(id: Int64(id), audience: .all)
            let path = "/regions/1/alerts/\(id)/pushes/\(send.id)"
            #expect(try await Self.call(app, "DELETE", path, key: keys.regionOnePush).status == 204)
            let again = try await Self.call(app, "DELETE", path, key: keys.regionOnePush)
            #expect(again.status == 409 && Self.error(again) == "alert push already completed")
            let listed = Self.array(try await Self.call(app, "GET", "/regions/1/alerts/\(id)/pushes", key: keys.regionOne))
            #expect(listed.first?["status"] as? String == "canceled" && listed.first?["completed_at"] is String)
            #expect(
                try await AlertStore(database: app.sidecar.database).sends.claimLapsedSends(now: app.clock.nowSeconds.adding(seconds: 3600)).isEmpty)
            // A new push may start: the cancelled one no longer holds the alert.
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/\(id)/pushes", key: keys.regionOnePush).status == 202)
        }
    }

    /// admin_pushes_test.go `TestAdminPushRoutesRequireAPrincipalAndAreAbsentWithoutWaker`,
    /// region_scope_test.go `TestGetRegion_FeaturesFollowTheWiring`.
    @Test func withoutATransportThereAreNoPushRoutes() async throws {
        try await Self.run(transport: false) { app, keys in
            let id = try await Self.makeAlert(app, key: keys.regionOne)
            #expect(try await Self.call(app, "POST", "/regions/1/alerts/\(id)/pushes", key: keys.regionOnePush).status == 404)
            #expect(try await Self.call(app, "GET", "/regions/1/alerts/\(id)/push_audience", key: keys.regionOne).status == 404)
            let features = try await Self.call(app, "GET", "/regions/1", key: keys.regionOne).json?["features"] as? [String]
            #expect(features?.contains("pushes") == false && features?.first == "alerts")
        }
    }

    /// admin_alarms_test.go `TestAdminAlarms_OmitsPushCredentials`, `TestAdminAlarms_RegionScoped`;
    /// admin_pushregs_test.go `TestAdminPushRegistrations_Count`.
    @Test func alarmsAndRegistrationCountsNeverShowATokenAndStayInTheirRegion() async throws {
        try await Self.run { app, keys in
            try await app.registerDevices("count", count: 2)
            let alarms = AlarmStore(database: app.sidecar.database)
            try await alarms.insert(
                AlarmStore.NewAlarm(
                    token: "alarm-secret-token", regionID: 1, apiVersion: .v2,
                    request: AlarmRequest(
                        userPushID: "device-secret", operatingSystem: .ios, apnsSandbox: false, stopID: "1_75403", tripID: "1_604318",
                        serviceDate: EpochMillis(1_786_000_000_000), vehicleID: nil, stopSequence: 4, secondsBefore: 300),
                    message: "Your bus", departureEstimate: nil, nowMillis: EpochMillis(1_785_000_000_000)))
            let listed = try await Self.call(app, "GET", "/regions/1/alarms", key: keys.regionOne)
            let items = Self.array(listed)
            #expect(items.count == 1 && !listed.text.contains("secret") && !listed.text.contains("token"))
            let alarm = try #require(items.first)
            #expect(
                Set(alarm.keys) == [
                    "id", "api_version", "operating_system", "stop_id", "trip_id", "service_date", "vehicle_id", "stop_sequence", "seconds_before",
                    "message", "failure_count", "created_at",
                ])
            #expect(alarm["service_date"] as? Int == 1_786_000_000_000)
            let alarmID = try #require(alarm["id"] as? Int)
            #expect(try await Self.call(app, "GET", "/regions/1/alarms/\(alarmID)", key: keys.regionOne).json?["trip_id"] as? String == "1_604318")
            let foreign = try await Self.call(app, "GET", "/regions/0/alarms/\(alarmID)", key: keys.operatorKey)
            #expect(foreign.status == 404 && Self.error(foreign) == "alarm not found")
            #expect(try await Self.call(app, "GET", "/regions/0/alarms", key: keys.operatorKey).text == "[]\n")
            let count = try await Self.call(app, "GET", "/regions/1/push_registrations/count", key: keys.regionOne)
            #expect(count.text == #"{"total":2,"ios":2,"android":0,"test":{"total":0,"ios":0,"android":0}}"# + "\n")
        }
    }

    static let survey = #"""
        {"study_id": STUDY, "name": "Rider survey", "show_on_map": true, "visible_stop_list": [" 1_75403 ", ""],
         "questions": [{"required": true, "position": 9, "content": {"type": "text", "label_text": "How was your trip?"}},
                       {"content": {"type": "radio", "label_text": "Again?", "options": ["yes", "no"]}}]}
        """#

    /// admin_surveys_test.go: `TestAdminStudies_CRUD`, `TestAdminStudies_ForeignStudyIs404`,
    /// `TestAdminSurveys_StrictDecoding`, `TestAdminSurveys_BodyCap`, `TestAdminSurveys_ServerOwnedFieldsRejected`,
    /// `TestAdminSurveys_ForeignStudyIsNotFound`, `TestAdminSurveys_RoundTrip`, `TestAdminSurveys_ConflictCodes`,
    /// `TestAdminSurveys_ListCarriesResponseCounts`, `TestAdminSurveys_PutPreservesQuestionIDs`; admin_responses_test.go
    /// `TestAdminResponses_ReachedThroughAnotherRegionsSurveyIs404`, `TestAdminResponses_JSONShape`,
    /// `TestAdminResponses_UnknownPublicIDIs404`.
    @Test func studiesSurveysAndResponses() async throws {
        try await Self.run { app, keys in
            // Studies.
            let study = try await Self.call(
                app, "POST", "/regions/1/studies", key: keys.regionOne, json: #"{"name":" Winter ","description":"Rides"}"#)
            #expect(study.status == 201, "\(study.text)")
            #expect(Set(study.json?.keys.map { $0 } ?? []) == ["id", "name", "description", "created_at", "updated_at"])
            #expect(study.json?["name"] as? String == "Winter" && (study.json?["created_at"] as? String)?.hasSuffix(".000Z") == true)
            let studyID = try #require(study.json?["id"] as? Int)
            #expect(study.header("Location") == "/api/admin/v1/regions/1/studies/\(studyID)")
            #expect(try await Self.call(app, "POST", "/regions/1/studies", key: keys.regionOne, json: #"{"name":"  "}"#).status == 422)
            #expect(try await Self.call(app, "POST", "/regions/1/studies", key: keys.regionOne, json: "{").status == 400)
            let patched = try await Self.call(
                app, "PATCH", "/regions/1/studies/\(studyID)", key: keys.regionOne, json: #"{"description":"All rides"}"#)
            #expect(patched.json?["name"] as? String == "Winter" && patched.json?["description"] as? String == "All rides")
            let foreignStudy = try await Self.call(app, "POST", "/regions/0/studies", key: keys.operatorKey, json: #"{"name":"Tampa"}"#)
            let foreignStudyID = try #require(foreignStudy.json?["id"] as? Int)
            for method in ["GET", "PATCH"] {
                let refused = try await Self.call(app, method, "/regions/1/studies/\(foreignStudyID)", key: keys.regionOne, json: #"{"name":"x"}"#)
                #expect(refused.status == 404 && Self.error(refused) == "study not found")
            }
            #expect(Self.array(try await Self.call(app, "GET", "/regions/1/studies", key: keys.regionOne)).count == 1)
            // Surveys: the strict document.
            let document = Self.survey.replacingOccurrences(of: "STUDY", with: "\(studyID)")
            let unknown = try await Self.call(
                app, "POST", "/regions/1/surveys", key: keys.regionOne, json: document.replacingOccurrences(of: "show_on_map", with: "show_on_maps"))
            #expect(unknown.status == 400 && Self.error(unknown)?.contains("show_on_maps") == true, "\(unknown.text)")
            for owned in ["id", "study", "created_at", "updated_at"] {
                let refused = try await Self.call(
                    app, "POST", "/regions/1/surveys", key: keys.regionOne,
                    json: document.replacingOccurrences(of: "{\"study_id\"", with: "{\"\(owned)\": 1, \"study_id\""))
                #expect(refused.status == 422 && Self.error(refused) == "\(owned) is server-owned and cannot be set", "\(owned): \(refused.text)")
            }
            let big = #"{"study_id": 1, "name": ""# + String(repeating: "x", count: 300 * 1024) + "\"}"
            let tooBig = try await Self.call(app, "POST", "/regions/1/surveys", key: keys.regionOne, json: big)
            #expect(tooBig.status == 400 && Self.error(tooBig) == "request body too large")
            #expect(try await Self.call(app, "POST", "/regions/1/surveys", key: keys.regionOne, json: #"{"name":"x"}"#).status == 422)
            let foreign = try await Self.call(
                app, "POST", "/regions/1/surveys", key: keys.regionOne,
                json: document.replacingOccurrences(of: "\"study_id\": \(studyID)", with: "\"study_id\": \(foreignStudyID)"))
            #expect(foreign.status == 404 && Self.error(foreign) == "study not found", "\(foreign.text)")
            let withID = try await Self.call(
                app, "POST", "/regions/1/surveys", key: keys.regionOne,
                json: document.replacingOccurrences(of: "{\"required\": true,", with: "{\"id\": 5, \"required\": true,"))
            #expect(withID.status == 422 && Self.error(withID) == "question id does not belong to this survey")
            let created = try await Self.call(app, "POST", "/regions/1/surveys", key: keys.regionOne, json: document)
            #expect(created.status == 201, "\(created.text)")
            let survey = try #require(created.json)
            #expect(
                Set(survey.keys) == [
                    "id", "name", "available", "start_date", "end_date", "show_on_map", "show_on_stops", "always_visible",
                    "allows_multiple_responses", "visible_stop_list", "visible_route_list", "questions", "study", "created_at", "updated_at",
                ])
            #expect(survey["available"] as? Bool == true && survey["show_on_stops"] as? Bool == false, "the reference's defaults")
            #expect(survey["visible_stop_list"] as? [String] == ["1_75403"] && survey["visible_route_list"] is NSNull)
            let questions = try #require(survey["questions"] as? [[String: Any]])
            #expect(questions.map { $0["position"] as? Int } == [1, 2], "renumbered in order")
            let surveyID = try #require(survey["id"] as? Int)
            let firstQuestion = try #require(questions.first?["id"] as? Int)
            // PUT keeps a named question's id, gives a new one its own, refuses another survey's.
            let replaced = try await Self.call(
                app, "PUT", "/regions/1/surveys/\(surveyID)", key: keys.regionOne,
                json:
                    #"{"name":"Rider survey 2","questions":[{"id":\#(firstQuestion),"content":{"type":"text","label_text":"How was it?"}},{"content":{"type":"text","label_text":"New"}}]}"#
            )
            #expect(replaced.status == 200, "\(replaced.text)")
            let kept = try #require(replaced.json?["questions"] as? [[String: Any]])
            #expect(kept.first?["id"] as? Int == firstQuestion && (kept.last?["id"] as? Int ?? 0) > firstQuestion)
            #expect(replaced.json?["show_on_map"] as? Bool == false, "a whole replacement: what is left out returns to its default")
            for body in [#"{"name":"x","study_id":1}"#, #"{"name":"x","questions":[{"id":424242,"content":{"type":"text","label_text":"x"}}]}"#] {
                #expect(try await Self.call(app, "PUT", "/regions/1/surveys/\(surveyID)", key: keys.regionOne, json: body).status == 422, "\(body)")
            }
            // Responses freeze the questions and keep the survey.
            let store = SurveyStore(database: app.sidecar.database)
            let stored = try await store.createResponse(
                surveyID: Int64(surveyID), userIdentifier: "rider", stopIdentifier: nil, stopLatitude: 47.6, stopLongitude: nil,
                answers: [
                    [
                        "question_id": .integer(Int64(firstQuestion)), "question_type": .string("text"), "question_label": .string("How was it?"),
                        "answer": .string("=cmd"),
                    ]
                ],
                now: app.clock.nowSeconds)
            let frozen = try await Self.call(
                app, "PUT", "/regions/1/surveys/\(surveyID)", key: keys.regionOne,
                json: #"{"name":"x","questions":[{"content":{"type":"text","label_text":"Other"}}]}"#)
            #expect(frozen.status == 409 && Self.error(frozen) == "survey questions are frozen")
            let undeletable = try await Self.call(app, "DELETE", "/regions/1/surveys/\(surveyID)", key: keys.regionOne)
            #expect(undeletable.status == 409 && Self.error(undeletable) == "survey has responses")
            let listed = Self.array(try await Self.call(app, "GET", "/regions/1/surveys", key: keys.regionOne))
            #expect(listed.first?["response_count"] as? Int == 1 && listed.first?["study_id"] as? Int == studyID)
            // Responses: their shape, and 404 through another region.
            let responses = Self.array(try await Self.call(app, "GET", "/regions/1/surveys/\(surveyID)/responses", key: keys.regionOne))
            let response = try #require(responses.first)
            #expect(
                Set(response.keys) == [
                    "id", "survey_id", "public_id", "user_identifier", "stop_identifier", "stop_latitude", "stop_longitude", "answers", "created_at",
                    "updated_at",
                ])
            #expect(response["stop_identifier"] as? String == "" && response["stop_longitude"] is NSNull)
            #expect(
                Set(((response["answers"] as? [[String: Any]])?.first?.keys).map(Array.init) ?? []) == [
                    "question_id", "question_type", "question_label", "answer",
                ])
            let one = try await Self.call(app, "GET", "/regions/1/survey_responses/\(stored.publicID)", key: keys.regionOne)
            #expect(one.status == 200 && one.json?["public_id"] as? String == stored.publicID)
            #expect(try await Self.call(app, "GET", "/regions/0/survey_responses/\(stored.publicID)", key: keys.operatorKey).status == 404)
            #expect(try await Self.call(app, "GET", "/regions/0/surveys/\(surveyID)/responses", key: keys.operatorKey).status == 404)
            // admin_responses_test.go `TestAdminResponses_CSVContract`: the fixed name, a formula neutralised.
            let csv = try await Self.call(app, "GET", "/regions/1/surveys/\(surveyID)/responses.csv", key: keys.regionOne)
            #expect(csv.status == 200 && csv.header("Content-Type") == "text/csv; charset=utf-8" && csv.header("X-Content-Type-Options") == "nosniff")
            #expect(
                csv.header("Content-Disposition") == "attachment; filename=\"survey-\(surveyID)-responses.csv\""
                    && csv.header("Cache-Control") == "no-store")
            let lines = csv.text.split(separator: "\n")
            #expect(
                lines.first
                    == "response_id,user_identifier,stop_identifier,stop_latitude,stop_longitude,created_at,updated_at,question_id,question_type,question_label,answer"
            )
            // Quoted only where a reader needs it, as Go's encoding/csv writes.
            #expect(lines.count == 2 && lines[1].hasSuffix(",'=cmd") && lines[1].hasPrefix("\(stored.publicID),"), "\(csv.text)")
            #expect(try await Self.call(app, "GET", "/regions/0/surveys/\(surveyID)/responses.csv", key: keys.operatorKey).status == 404)
            let unknownResponse = try await Self.call(app, "GET", "/regions/1/survey_responses/nope", key: keys.regionOne)
            #expect(unknownResponse.status == 404 && Self.error(unknownResponse) == "response not found")
            // A survey without responses deletes.
            let spare = try await Self.call(app, "POST", "/regions/1/surveys", key: keys.regionOne, json: #"{"study_id":\#(studyID),"name":"Empty"}"#)
            #expect(spare.status == 201 && spare.json?["available"] as? Bool == false, "nothing to ask: left unavailable. \(spare.text)")
            let spareID = try #require(spare.json?["id"] as? Int)
            #expect(try await Self.call(app, "DELETE", "/regions/1/surveys/\(spareID)", key: keys.regionOne).status == 204)
        }
    }

    /// admin_ghostbus_test.go `TestAdminGhostBus_ListAndSince`, `TestAdminGhostBus_JSONShape`,
    /// `TestAdminGhostBus_EpochMillisecondFieldsPassThrough`, `TestAdminGhostBus_DetailCarriesTheRawSnapshot`.
    @Test func ghostBusReportsInTheReferencesShape() async throws {
        try await Self.run { app, keys in
            let store = GhostBusStore(database: app.sidecar.database)
            func report(_ trip: String, by rider: String = "rider") -> GhostBusReport {
                GhostBusReport(
                    userIdentifier: rider, tripIdentifier: trip, serviceDate: EpochMillis(1_786_000_000_000), routeIdentifier: "1_100",
                    stopIdentifier: "1_75403", vehicleIdentifier: nil, stopSequence: 4, predicted: true, scheduleDeviationMinutes: nil,
                    waitDurationMinutes: 10, comment: "=never came", userLatitude: 47.6, userLongitude: -122.3,
                    scheduledArrivalAt: EpochMillis(1_786_000_300_000), predictedArrivalAt: nil,
                    predictionLastUpdatedAt: EpochMillis(1_786_000_100_000))
            }
            let start = app.clock.nowMillis
            _ = try await store.insert(report("1_1"), regionID: 1, now: start)
            _ = try await store.insert(report("1_2"), regionID: 1, now: start.adding(seconds: 3600))
            _ = try await store.insert(report("0_1"), regionID: 0, now: start)
            let listed = Self.array(try await Self.call(app, "GET", "/regions/1/ghost_bus_reports", key: keys.regionOne))
            #expect(listed.map { $0["trip_identifier"] as? String } == ["1_1", "1_2"], "the region's, by id")
            let first = try #require(listed.first)
            #expect(
                Set(first.keys) == [
                    "id", "region_id", "public_identifier", "user_identifier", "trip_identifier", "service_date", "route_identifier",
                    "stop_identifier", "vehicle_identifier", "stop_sequence", "predicted", "schedule_deviation_minutes", "wait_duration_minutes",
                    "comment", "user_latitude", "user_longitude", "scheduled_arrival_at", "predicted_arrival_at", "prediction_last_updated_at",
                    "snapshot_status", "snapshot_json", "snapshot_captured_at", "snapshot_attempts", "created_at",
                ])
            #expect(first["service_date"] as? Int == 1_786_000_000_000 && first["scheduled_arrival_at"] as? Int == 1_786_000_300_000)
            #expect(first["predicted_arrival_at"] is NSNull && first["snapshot_json"] is NSNull)
            // since: RFC 3339 with an offset, else 400.
            let sinceText = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(start.value) / 1000 + 60))
            let since = Self.array(try await Self.call(app, "GET", "/regions/1/ghost_bus_reports?since=\(sinceText)", key: keys.regionOne))
            #expect(since.map { $0["trip_identifier"] as? String } == ["1_2"])
            for bad in ["2026-08-15T14:00:00", "yesterday", "1786000000"] {
                #expect(try await Self.call(app, "GET", "/regions/1/ghost_bus_reports?since=\(bad)", key: keys.regionOne).status == 400, "\(bad)")
            }
            // The detail carries the snapshot once captured; another region's is 404.
            let publicID = try #require(first["public_identifier"] as? String)
            try await store.recordSnapshot(publicID: publicID, snapshot: #"{"tripId":"1_1"}"#, attempts: 1, nowMillis: start)
            let detail = try await Self.call(app, "GET", "/regions/1/ghost_bus_reports/\(publicID)", key: keys.regionOne)
            #expect(detail.json?["snapshot_status"] as? String == "captured")
            #expect((detail.json?["snapshot_json"] as? [String: Any])?["tripId"] as? String == "1_1")
            let foreign = try await Self.call(app, "GET", "/regions/0/ghost_bus_reports/\(publicID)", key: keys.operatorKey)
            #expect(foreign.status == 404 && Self.error(foreign) == "ghost bus report not found")
            // admin_ghostbus_test.go `TestAdminGhostBus_CSVContract`: the fixed name, 30 columns, the comment neutralised.
            _ = try await store.insert(report("1_1", by: "another rider"), regionID: 1, now: start.adding(seconds: 7200))
            let csv = try await Self.call(app, "GET", "/regions/1/ghost_bus_reports.csv", key: keys.regionOne)
            #expect(csv.status == 200 && csv.header("Content-Disposition") == "attachment; filename=\"ghost-bus-reports-1.csv\"")
            let lines = csv.text.split(separator: "\n").map(String.init)
            #expect(lines.count == 4 && lines[0].split(separator: ",").count == 30, "\(csv.text)")
            #expect(lines[0].hasPrefix("public_identifier,reported_at_utc,reported_at_local,service_date,route_id,"))
            #expect(lines[1].contains(",'=never came,") && lines[1].contains(",1_1,2,"), "two reports of trip 1_1 that day: \(lines[1])")
            #expect(lines[1].contains("-07:00") || lines[1].contains("-08:00"), "reported_at_local in Los Angeles")
            let sinceCSV = try await Self.call(app, "GET", "/regions/1/ghost_bus_reports.csv?since=\(sinceText)", key: keys.regionOne)
            #expect(sinceCSV.text.split(separator: "\n").count == 3)
        }
    }
}
