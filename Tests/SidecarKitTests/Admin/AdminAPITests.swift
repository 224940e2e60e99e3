import Database
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// The admin API beyond alerts (issue: an admin API for everything the
/// console does): scope, principals, redaction, pagination, streamed CSV,
/// stale edits, idempotent starts and bad input, against the binary's
/// server on whichever backend the run uses.
@Suite("Admin API: coverage, scope and conventions")
struct AdminAPITests {
    /// A running sidecar with region 1 and 0 set up, a fake gorush, and
    /// keys: region 1 with push, region 1 without push, every region admin.
    struct Keys {
        let regionOne: String
        let regionOneNoPush: String
        let admin: String
    }

    static func run(_ body: (TestSidecar, FakeGorush, Keys) async throws -> Void) async throws {
        let gorush = try FakeGorush()
        try await TestSidecar.run({
            $0.gorushURL = gorush.url
            $0.runsSendResumer = false
        }) { app in
            for region in [0, 1, 2] { _ = try await app.administration.setRegion(id: region, agencyID: "\(region)", timezone: "America/Los_Angeles") }
            let store = ApiKeyStore(database: app.sidecar.database)
            let keys = Keys(
                regionOne: try await store.create(name: "one", regions: [1], canPush: true, actor: "cli:test", now: 0).key,
                regionOneNoPush: try await store.create(name: "one-read", regions: [1], actor: "cli:test", now: 0).key,
                admin: try await store.create(name: "root", canPush: true, isAdmin: true, actor: "cli:test", now: 0).key)
            try await body(app, gorush, keys)
        }
        await gorush.server.shutdown()
    }

    static func call(
        _ app: TestSidecar, _ method: String, _ path: String, key: String, json: String? = nil, headers: [String: String] = [:]
    ) async throws -> RawResponse {
        var all = headers
        all["Authorization"] = "Bearer \(key)"
        if json != nil { all["Content-Type"] = "application/json" }
        return try await app.send(method, path, headers: all, body: Array((json ?? "").utf8))
    }

    static func list(_ response: RawResponse) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [[String: Any]] ?? []
    }

    /// The path of the `Link: <…>; rel="next"` header, if any.
    static func next(_ response: RawResponse) -> String? {
        guard let link = response.header("Link"), let open = link.firstIndex(of: "<"), let close = link.firstIndex(of: ">") else { return nil }
        return String(link[link.index(after: open)..<close])
    }

    static let survey = #"""
        {"study_id": STUDY, "name": "Rider survey", "available": true, "show_on_stops": true,
         "questions": [{"required": true, "content": {"type": "text", "label_text": "How was your trip?"}},
                       {"required": false, "content": {"type": "text", "label_text": "Anything else?"}}]}
        """#

    /// A study and a survey in region 1 through the API; the survey's JSON.
    static func makeSurvey(_ app: TestSidecar, key: String, region: Int = 1) async throws -> [String: Any] {
        let study = try await call(app, "POST", "/admin/api/regions/\(region)/studies", key: key, json: #"{"name":"Winter"}"#)
        #expect(study.status == 201, "\(study.text)")
        let studyID = try #require(study.json?["id"] as? Int)
        let created = try await call(
            app, "POST", "/admin/api/regions/\(region)/surveys", key: key, json: survey.replacingOccurrences(of: "STUDY", with: "\(studyID)"))
        #expect(created.status == 201, "\(created.text)")
        return try #require(created.json)
    }

    /// Android 26.2.0 shows a survey only when `show_on_map` is true: a survey
    /// made without saying where goes on the map and on stop pages.
    @Test func aSurveyMadeWithTheDefaultsReachesBothApps() async throws {
        try await Self.run { app, _, keys in
            let created = try await Self.makeSurvey(app, key: keys.admin)
            #expect(created["show_on_map"] as? Bool == true, "Android's map screen")
            #expect(created["show_on_stops"] as? Bool == true, "iOS's stop pages")
        }
    }

    @Test func aKeySeesAndChangesOnlyItsRegions() async throws {
        try await Self.run { app, _, keys in
            let other = try await Self.makeSurvey(app, key: keys.admin, region: 2)
            let otherID = try #require(other["id"] as? Int)
            for path in [
                "/admin/api/regions/2/surveys", "/admin/api/regions/2/studies", "/admin/api/regions/2/ghost-bus-reports",
                "/admin/api/regions/2/ghost-bus-reports.csv", "/admin/api/regions/2/alarms", "/admin/api/regions/2/live-activities",
                "/admin/api/regions/2/activity", "/admin/api/surveys/\(otherID)", "/admin/api/surveys/\(otherID)/responses",
                "/admin/api/surveys/\(otherID)/responses.csv",
            ] {
                let answer = try await Self.call(app, "GET", path, key: keys.regionOne)
                #expect(answer.status == 404, "\(path): \(answer.status)")
                #expect(answer.json?["messages"] is [String], "\(path): the documented error shape")
            }
            #expect(try await Self.call(app, "DELETE", "/admin/api/surveys/\(otherID)", key: keys.regionOne).status == 404)
            #expect(try await Self.call(app, "POST", "/admin/api/surveys/\(otherID)/archive", key: keys.regionOne).status == 404)
            #expect(try await SurveyStore(database: app.sidecar.database).survey(id: Int64(otherID)) != nil, "nothing changed")
            // A region missing from the directory is 404 on every route, even for a key of every region.
            for list in ["alerts", "surveys", "studies", "ghost-bus-reports", "alarms", "live-activities", "activity", "sources"] {
                #expect(try await Self.call(app, "GET", "/admin/api/regions/4242/\(list)", key: keys.admin).status == 404, "\(list)")
            }
            // Region 0 is a region like any other: the first page starts before it.
            let regionIDs = Self.list(try await Self.call(app, "GET", "/admin/api/regions", key: keys.admin)).compactMap { $0["id"] as? Int }
            #expect(regionIDs.starts(with: [0, 1, 2]), "\(regionIDs)")
            // Reads within the region work for a key without the push scope.
            #expect(try await Self.call(app, "GET", "/admin/api/regions/1/activity", key: keys.regionOneNoPush).status == 200)
            // Managing keys needs --admin or a principal.
            #expect(try await Self.call(app, "GET", "/admin/api/keys", key: keys.regionOne).status == 403)
            #expect(try await Self.call(app, "GET", "/admin/api/principals", key: keys.regionOne).status == 403)
            // The audit of a region-1 key holds region 1's changes only.
            let audit = Self.list(try await Self.call(app, "GET", "/admin/api/audit", key: keys.regionOne))
            #expect(audit.allSatisfy { $0["region_id"] as? Int == 1 })
            let everything = Self.list(try await Self.call(app, "GET", "/admin/api/audit", key: keys.admin))
            #expect(everything.contains { $0["region_id"] as? Int == 2 })
        }
    }

    @Test func aServicePrincipalProvisionsRegionKeysAndTakesThemWithIt() async throws {
        try await Self.run { app, _, keys in
            // Only an --admin key of every region manages principals.
            let made = try await Self.call(app, "POST", "/admin/api/principals", key: keys.admin, json: #"{"name":"provisioner"}"#)
            #expect(made.status == 201, "\(made.text)")
            let principal = try #require(made.json?["key"] as? String)
            let principalID = try #require(made.json?["id"] as? Int)
            #expect(principal.hasPrefix("obasp_") && principal.count == 49, "the Go reference's format")
            #expect(made.header("Cache-Control") == "no-store")

            // A principal may only manage keys.
            #expect(try await Self.call(app, "GET", "/admin/api/regions", key: principal).status == 403)
            #expect(try await Self.call(app, "GET", "/admin/api/principals", key: principal).status == 403)
            // It makes region keys, never every region, never admin keys.
            let refusedAll = try await Self.call(app, "POST", "/admin/api/keys", key: principal, json: #"{"name":"x","regions":["all"]}"#)
            #expect(refusedAll.status == 403)
            let refusedAdmin = try await Self.call(app, "POST", "/admin/api/keys", key: principal, json: #"{"name":"x","regions":[1],"admin":true}"#)
            #expect(refusedAdmin.status == 403)
            let refusedRegion = try await Self.call(app, "POST", "/admin/api/keys", key: principal, json: #"{"name":"x","regions":[99999]}"#)
            #expect(refusedRegion.status == 422)
            let key = try await Self.call(
                app, "POST", "/admin/api/keys", key: principal, json: #"{"name":"agency tool","regions":[1],"push":true}"#)
            #expect(key.status == 201, "\(key.text)")
            let secret = try #require(key.json?["key"] as? String)
            let keyID = try #require(key.json?["id"] as? Int)
            #expect(try await Self.call(app, "GET", "/admin/api/regions/1/surveys", key: secret).status == 200)
            #expect(try await Self.call(app, "GET", "/admin/api/regions/2/surveys", key: secret).status == 404)

            // It lists only the keys it made, never their secrets.
            let listed = try await Self.call(app, "GET", "/admin/api/keys", key: principal)
            #expect(Self.list(listed).map { $0["id"] as? Int } == [keyID])
            #expect(!listed.text.contains(secret))
            let all = try await Self.call(app, "GET", "/admin/api/keys", key: keys.admin)
            #expect(Self.list(all).count == 4, "the admin key sees every key: \(all.text)")
            #expect(!Self.list(all).contains { $0["kind"] as? String == "principal" })

            // A region-scoped --admin key manages keys within its regions only.
            let regional = try await ApiKeyStore(database: app.sidecar.database).create(
                name: "regional", regions: [2], isAdmin: true, actor: "cli:test", now: 0)
            let regionalList = Self.list(try await Self.call(app, "GET", "/admin/api/keys", key: regional.key))
            #expect(regionalList.compactMap { $0["id"] as? Int } == [Int(regional.record.id)], "only itself, of region 2")
            #expect(try await Self.call(app, "DELETE", "/admin/api/keys/\(keyID)", key: regional.key).status == 404)
            let grantsPush = try await Self.call(app, "POST", "/admin/api/keys", key: regional.key, json: #"{"name":"x","regions":[2],"push":true}"#)
            #expect(grantsPush.status == 403, "it cannot grant a push scope it lacks")

            // Revoked with its keys.
            let revoked = try await Self.call(app, "DELETE", "/admin/api/principals/\(principalID)?revoke_keys=true", key: keys.admin)
            #expect(revoked.status == 200)
            #expect(revoked.json?["revoked_keys"] as? Int == 1)
            #expect(try await Self.call(app, "GET", "/admin/api/regions/1/surveys", key: secret).status == 401)
            #expect(try await Self.call(app, "GET", "/admin/api/keys", key: principal).status == 401)
            #expect(try await Self.call(app, "DELETE", "/admin/api/principals/\(principalID)", key: keys.admin).status == 404)
            #expect(!app.log.lines.contains { $0.contains(secret) || $0.contains(principal) }, "secrets never reach the log")
        }
    }

    @Test func surveysAreAuthoredWithStaleEditsRefused() async throws {
        try await Self.run { app, _, keys in
            let survey = try await Self.makeSurvey(app, key: keys.regionOne)
            let id = try #require(survey["id"] as? Int)
            let shown = try await Self.call(app, "GET", "/admin/api/surveys/\(id)", key: keys.regionOne)
            let etag = try #require(shown.header("ETag"))
            let questions = try #require(shown.json?["questions"] as? [[String: Any]]).compactMap { $0["id"] as? Int }
            #expect(questions.count == 2)

            // Reorder with the current ETag: a new one comes back.
            let reordered = try await Self.call(
                app, "PUT", "/admin/api/surveys/\(id)/question-order", key: keys.regionOne,
                json: #"{"question_ids":[\#(questions[1]),\#(questions[0])]}"#, headers: ["If-Match": etag])
            #expect(reordered.status == 200, "\(reordered.text)")
            let after = try #require(reordered.header("ETag"))
            #expect(after != etag)
            let order = try #require(reordered.json?["questions"] as? [[String: Any]])
                .sorted { ($0["position"] as? Int ?? 0) < ($1["position"] as? Int ?? 0) }.compactMap { $0["id"] as? Int }
            #expect(order == [questions[1], questions[0]])

            // A second editor still holding the first ETag is refused, and nothing changes.
            let stale = try await Self.call(
                app, "PUT", "/admin/api/surveys/\(id)", key: keys.regionOne, json: #"{"name":"Overwritten"}"#, headers: ["If-Match": etag])
            #expect(stale.status == 412)
            #expect(stale.header("ETag") == after)
            #expect(try await SurveyStore(database: app.sidecar.database).survey(id: Int64(id))?.name == "Rider survey")
            // Without If-Match an edit goes through (today's clients keep working).
            let renamed = try await Self.call(app, "PUT", "/admin/api/surveys/\(id)", key: keys.regionOne, json: #"{"name":"Renamed"}"#)
            #expect(renamed.json?["name"] as? String == "Renamed")

            let archived = try await Self.call(app, "POST", "/admin/api/surveys/\(id)/archive", key: keys.regionOne)
            #expect(archived.json?["available"] as? Bool == false)
            let activated = try await Self.call(app, "POST", "/admin/api/surveys/\(id)/activate", key: keys.regionOne)
            #expect(activated.json?["available"] as? Bool == true)
        }
    }

    @Test func aRetriedSendStartIsTheSameSendAndCallerTextFansOutByLanguage() async throws {
        try await Self.run { app, gorush, keys in
            let draft = #"{"header":"Snow","description":"Snow routes","start":"2026-12-01T05:00:00-08:00"}"#
            let alert = try await Self.call(
                app, "POST", "/admin/api/regions/1/alerts", key: keys.regionOne, json: draft, headers: ["Idempotency-Key": "draft-1"])
            let id = try #require(alert.json?["id"] as? Int)
            // A retried create is the same draft, answered with the same ETag.
            let again = try await Self.call(
                app, "POST", "/admin/api/regions/1/alerts", key: keys.regionOne, json: draft, headers: ["Idempotency-Key": "draft-1"])
            #expect(again.json?["id"] as? Int == id)
            #expect(again.header("ETag") != nil && again.header("ETag") == alert.header("ETag"))
            #expect(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).count == 1)
            #expect(try await Self.call(app, "POST", "/admin/api/alerts/\(id)/publish", key: keys.regionOne).status == 200)
            for (index, locale) in ["es-MX", "en-US", "fr-FR"].enumerated() {
                _ = try await app.post(
                    "/api/v2/regions/1/push_registrations", [("token", "device-\(index)"), ("operating_system", "ios"), ("locale", locale)])
            }
            let body =
                #"{"audience":"all","messages":{"en":{"title":"Buses on snow routes","body":"Check your stop"},"es":{"title":"Autobuses en rutas de nieve","body":"Revise su parada"}}}"#
            // Without the push scope: 403, nothing sent.
            #expect(try await Self.call(app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOneNoPush, json: body).status == 403)
            let first = try await Self.call(
                app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOne, json: body, headers: ["Idempotency-Key": "start-1"])
            #expect(first.status == 202, "\(first.text)")
            let retry = try await Self.call(
                app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOne, json: body, headers: ["Idempotency-Key": "start-1"])
            #expect(retry.status == 202)
            #expect(retry.header("Idempotent-Replayed") == "true")
            #expect(retry.json?["id"] as? Int == first.json?["id"] as? Int)
            let reused = try await Self.call(
                app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOne, json: #"{"audience":"test"}"#,
                headers: ["Idempotency-Key": "start-1"])
            #expect(reused.status == 422, "a key used for another request is refused")
            #expect(try await app.eventually { gorush.notifications.count == 3 })
            #expect(try await AlertStore(database: app.sidecar.database).sends.list(alertID: Int64(id)).count == 1)
            let byToken = Dictionary(
                gorush.notifications.flatMap { note in (note["tokens"] as? [String] ?? []).map { ($0, note["title"] as? String ?? "") } },
                uniquingKeysWith: { first, _ in first })
            #expect(byToken["device-0"] == "Autobuses en rutas de nieve")
            #expect(byToken["device-1"] == "Buses on snow routes")
            #expect(byToken["device-2"] == "Buses on snow routes", "a language without its own text gets the English")

            // The same rules as the alert's own text.
            let noEnglish = try await Self.call(
                app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOne, json: #"{"messages":{"es":{"title":"Hola"}}}"#)
            #expect(noEnglish.status == 422)
            let long = String(repeating: "x", count: FieldLimits.alertHeader + 1)
            let tooLong = try await Self.call(
                app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOne, json: #"{"messages":{"en":{"title":"\#(long)"}}}"#)
            #expect(tooLong.status == 422)
            let unknownLanguage = try await Self.call(
                app, "POST", "/admin/api/alerts/\(id)/sends", key: keys.regionOne,
                json: #"{"messages":{"en":{"title":"a"},"xx-Klingon":{"title":"b"}}}"#)
            #expect(unknownLanguage.status == 422)

            // An idempotent create makes one alert.
            for _ in 0..<2 {
                _ = try await Self.call(
                    app, "POST", "/admin/api/regions/1/alerts", key: keys.regionOne, json: #"{"header":"Once","start":"2026-12-01T05:00:00-08:00"}"#,
                    headers: ["Idempotency-Key": "create-once"])
            }
            #expect(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).filter { $0.header == "Once" }.count == 1)
        }
    }

    @Test func pagesOverTenThousandRowsSkipNothingWhileRowsAreAdded() async throws {
        try await Self.run { app, _, keys in
            let survey = try await Self.makeSurvey(app, key: keys.regionOne)
            let surveyID = Int64(try #require(survey["id"] as? Int))
            func add(_ range: Range<Int>) async throws {
                _ = try await app.sidecar.database.write { connection in
                    for index in range {
                        try SurveyStore.insertImported(
                            connection,
                            response: SurveyStore.StoredResponse(
                                publicID: "r\(index)", surveyID: surveyID, userIdentifier: "u\(index)", answers: [], createdAt: 1_780_000_000,
                                updatedAt: 1_780_000_000))
                    }
                }
            }
            try await add(0..<10_000)
            var seen: [String] = []
            var path: String? = "/admin/api/surveys/\(surveyID)/responses?limit=500"
            var added = 10_000
            while let current = path {
                let page = try await Self.call(app, "GET", current, key: keys.regionOne)
                #expect(page.status == 200, "\(page.text)")
                seen += Self.list(page).compactMap { $0["id"] as? String }
                path = Self.next(page)
                if added < 12_000 {
                    try await add(added..<added + 100)
                    added += 100
                }
            }
            #expect(Set(seen).count == seen.count, "no row twice")
            #expect(seen.count == added, "every row, including those added while paging")
            #expect(Set(seen) == Set((0..<added).map { "r\($0)" }))
        }
    }

    @Test func csvExportsStreamEveryRowSafeForSpreadsheets() async throws {
        try await Self.run { app, _, keys in
            let survey = try await Self.makeSurvey(app, key: keys.regionOne)
            let surveyID = Int64(try #require(survey["id"] as? Int))
            let question = try #require((survey["questions"] as? [[String: Any]])?.first?["id"] as? Int)
            _ = try await app.sidecar.database.write { connection in
                for index in 0..<2_500 {
                    let answer = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "plain"][index % 5]
                    try SurveyStore.insertImported(
                        connection,
                        response: SurveyStore.StoredResponse(
                            publicID: "r\(index)", surveyID: surveyID, userIdentifier: "u\(index)",
                            answers: [["question_id": .integer(Int64(question)), "answer": .string(answer)]],
                            createdAt: EpochSeconds(1_780_000_000 + Int64(index)), updatedAt: 1_780_000_000))
                }
            }
            let csv = try await Self.call(app, "GET", "/admin/api/surveys/\(surveyID)/responses.csv", key: keys.regionOne)
            #expect(csv.status == 200)
            #expect(csv.header("Content-Type")?.hasPrefix("text/csv") == true)
            let lines = csv.text.split(separator: "\n")
            #expect(lines.count == 2_501, "a header and every row, across export pages")
            #expect(!lines.dropFirst().contains { $0.contains(#""=1+1""#) || $0.contains(#""+SUM"#) || $0.contains(#""@cmd""#) })
            #expect(lines.dropFirst().contains { $0.contains(#""'=1+1""#) })
            #expect(lines.dropFirst().contains { $0.contains(#""'-2+3""#) })
            // A time range narrows it.
            let ranged = try await Self.call(
                app, "GET", "/admin/api/surveys/\(surveyID)/responses.csv?from=2026-05-28T20:26:40Z&to=2026-05-28T20:26:49Z", key: keys.regionOne)
            #expect(ranged.text.split(separator: "\n").count == 11, "\(ranged.text.prefix(300))")
        }
    }

    @Test func riderActivityIsCountedWithoutATokenInSight() async throws {
        try await Self.run { app, _, keys in
            let tokens = ["push-token-secret-1", "push-token-secret-2"]
            for (index, token) in tokens.enumerated() {
                let registered = try await app.post(
                    "/api/v2/regions/1/push_registrations",
                    [("token", token), ("operating_system", index == 0 ? "ios" : "android"), ("locale", index == 0 ? "es-MX" : "en-US")])
                #expect(registered.status < 300)
            }
            let activity = try await app.post(
                "/api/v2/regions/1/live_activities",
                [
                    ("activity_id", "activity-secret"), ("push_token", "la-push-secret"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                    ("trip_headsign", "Downtown"), ("apns_sandbox", "1"), ("trip_id", "t1"),
                ])
            #expect(activity.status == 201, "\(activity.text)")
            let activityURL = try #require(activity.json?["url"] as? String)
            let activityToken = String(activityURL.split(separator: "/").last ?? "")
            let counts = try await Self.call(app, "GET", "/admin/api/regions/1/activity", key: keys.regionOne)
            let registrations = try #require(counts.json?["push_registrations"] as? [String: Any])
            #expect(registrations["total"] as? Int == 2)
            #expect((registrations["by_platform"] as? [String: Int]) == ["ios": 1, "android": 1])
            #expect(counts.json?["live_activities"] as? Int == 1)
            var bodies = counts.text
            for path in ["/admin/api/regions/1/alarms", "/admin/api/regions/1/live-activities", "/admin/api/audit", "/admin/api/keys"] {
                bodies += try await Self.call(app, "GET", path, key: keys.admin).text
            }
            #expect(bodies.contains("Downtown"), "the activity is listed")
            for secret in tokens + ["la-push-secret", "activity-secret", activityToken] {
                #expect(!bodies.contains(secret), "\(secret) never appears")
            }
        }
    }

    @Test func badInputIsAClear4xxAndChangesNothing() async throws {
        try await Self.run { app, _, keys in
            let key = keys.regionOne
            let before = try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).count
            let unknown = try await Self.call(
                app, "POST", "/admin/api/regions/1/alerts", key: key, json: #"{"header":"x","start":"2026-12-01T05:00:00Z","colour":"red"}"#)
            #expect(unknown.status == 422)
            #expect((unknown.json?["messages"] as? [String])?.first?.contains("'colour'") == true)
            let wrongType = try await Self.call(
                app, "POST", "/admin/api/regions/1/alerts", key: key, json: #"{"header":5,"start":"2026-12-01T05:00:00Z"}"#)
            #expect(wrongType.status == 422)
            #expect((wrongType.json?["messages"] as? [String])?.contains("header must be a string") == true)
            for limit in ["0", "100000", "-1", "ten"] {
                #expect(try await Self.call(app, "GET", "/admin/api/regions/1/alerts?limit=\(limit)", key: key).status == 422, "limit=\(limit)")
            }
            let forged = try await Self.call(app, "GET", "/admin/api/regions/1/alerts?after=bm90LWEtY3Vyc29y", key: key)
            #expect(forged.status == 422)
            // Signed with this database's key, but for another list.
            let cursorKey = try await ConsoleStore(database: app.sidecar.database).secret(named: "admin-cursor")
            let foreign = AdminConventions.cursor(list: "surveys:1", id: 1, key: cursorKey)
            #expect(try await Self.call(app, "GET", "/admin/api/regions/1/alerts?after=\(foreign)", key: key).status == 422)
            let huge = #"{"header":""# + String(repeating: "a", count: 1_100_000) + #"","start":"2026-12-01T05:00:00Z"}"#
            let tooBig = try await Self.call(app, "POST", "/admin/api/regions/1/alerts", key: key, json: huge)
            #expect(tooBig.status == 413)
            var invalid = Array(#"{"header":""#.utf8) + [0xC3, 0x28] + Array(#"","start":"2026-12-01T05:00:00Z"}"#.utf8)
            let badUTF8 = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json"], body: invalid)
            #expect((400..<500).contains(badUTF8.status))
            invalid = Array("name=".utf8) + [0xFF, 0xFE]
            let badForm = try await app.send(
                "POST", "/admin/api/regions/1/studies",
                headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/x-www-form-urlencoded"], body: invalid)
            #expect((400..<500).contains(badForm.status))
            let notJSON = try await app.send(
                "POST", "/admin/api/regions/1/surveys",
                headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/x-www-form-urlencoded"], body: Array("name=x".utf8))
            #expect(notJSON.status == 422)
            let badKey = try await Self.call(
                app, "POST", "/admin/api/regions/1/studies", key: key, json: #"{"name":"x"}"#, headers: ["Idempotency-Key": "a b"])
            #expect(badKey.status == 422)
            #expect(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).count == before)
            #expect(try await SurveyStore(database: app.sidecar.database).studies(regionID: 1).isEmpty)
        }
    }

    @Test func throttledCallersAreToldWhenToComeBack() async throws {
        let gorush = try FakeGorush()
        try await TestSidecar.run({
            $0.gorushURL = gorush.url
            $0.adminAPILimit = 3
        }) { app in
            let key = try await ApiKeyStore(database: app.sidecar.database).create(name: "busy", regions: [1], actor: "cli:test", now: 0).key
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(try await Self.call(app, "GET", "/admin/api/regions", key: key).status) }
            #expect(statuses == [200, 200, 200, 429])
            let refused = try await Self.call(app, "GET", "/admin/api/regions", key: key)
            #expect(refused.header("Retry-After").flatMap { Int($0) }.map { $0 > 0 } == true)
            #expect(refused.json?["messages"] is [String])
            // Guessing keys is throttled per address too.
            var guesses: [Int] = []
            for index in 0..<4 { guesses.append(try await Self.call(app, "GET", "/admin/api/regions", key: "sidecar_guess\(index)").status) }
            #expect(guesses == [401, 401, 401, 429])
        }
        await gorush.server.shutdown()
    }
}
