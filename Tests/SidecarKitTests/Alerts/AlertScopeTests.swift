import Core
import Foundation
import GTFSRealtime
import TestSupport
import Testing

@testable import SidecarKit

/// An authored alert's scope: the text editors type, the feed's informed
/// entities made from it, and the check against the region's OneBusAway
/// server (issue 40: "alerts scoped as agencies write them").
@Suite("Alerts: scoped to routes, stops and trips")
struct AlertScopeTests {
    // MARK: The text's rules

    @Test(arguments: [
        ("", "", "no scope: the whole agency"),
        ("route=1_44", "route=1_44", "a route by its OneBusAway id"),
        ("route=44", "route=1_44", "a bare id takes the alert's agency"),
        ("stop=1_75403 route=1_44", "route=1_44 stop=1_75403", "a stop on a route, words in any order"),
        ("trip=1_604318 date=2026-12-01", "trip=1_604318 date=20261201", "a trip on one service day"),
        ("trip=1_604318 date=20261201", "trip=1_604318 date=20261201", "the day in GTFS's own form"),
        ("route_type=bus", "route_type=bus", "every bus"),
        ("route_type=3", "route_type=bus", "a type by number, shown by name"),
        ("route_type=715", "route_type=715", "an extended route type"),
        ("route=1_44; stop=1_75403\nroute=40_100", "route=1_44; stop=1_75403; route=40_100", "places split by ; and new lines"),
        ("  route=1_44 ;; ", "route=1_44", "blank places are skipped"),
        ("ROUTE=1_44", "route=1_44", "keys in any case"),
        ("route=1_a_b", "route=1_a_b", "OneBusAway splits at the first underscore only"),
    ])
    func textsTheRulesAccept(_ text: String, _ canonical: String, _ why: String) throws {
        let selectors = try AlertScope.parse(text, agencyID: "1").get()
        #expect(AlertScope.text(selectors) == canonical, "\(why)")
        // The canonical text reads back to the same selectors (what is stored).
        #expect(try AlertScope.stored(canonical) == selectors, "\(why)")
    }

    @Test(arguments: [
        ("line=44", "not a selector word", "an unknown key"),
        ("route=", "needs a value", "an empty value"),
        ("route", "needs a value", "a key alone"),
        ("route=1_44 route=1_45", "gives route twice", "one key twice in a place"),
        ("route=1_44; route=1_44", "twice", "a place listed twice"),
        ("date=2026-12-01", "goes with trip", "a date without a trip"),
        ("trip=1_9 date=2026-02-30", "service day", "a day that does not exist"),
        ("trip=1_9 date=12/01/2026", "service day", "a day in another form"),
        ("trip=1_9 date=1999-12-01", "service day", "a day out of range"),
        ("route_type=bicycle", "GTFS route type", "an unknown type name"),
        ("route_type=9", "GTFS route type", "a number GTFS does not define"),
        ("route=1_44 stop=40_9", "mixes agencies", "one place spanning two agencies"),
        ("route=\u{7}1_44", "control character", "a control character in an id"),
        ("route=_44", "needs its agency", "an id with an empty agency"),
    ])
    func textsTheRulesRefuse(_ text: String, _ message: String, _ why: String) {
        guard case .failure(let failure) = AlertScope.parse(text, agencyID: "1") else {
            Issue.record("accepted: \(why)")
            return
        }
        #expect(failure.messages.contains { $0.contains(message) }, "\(why): \(failure.messages)")
    }

    @Test func aRegionWideAlertNeedsIdsWithTheirAgency() throws {
        #expect(throws: (any Error).self) { try AlertScope.parse("route=44", agencyID: "").get() }
        #expect(try AlertScope.parse("route=1_44", agencyID: "").get() == [AlertSelector(routeID: "1_44")])
    }

    @Test func theNumberOfPlacesAndTheTextAreBounded() {
        let many = (0...AlertScope.maxSelectors).map { "stop=1_\($0)" }.joined(separator: "; ")
        guard case .failure(let failure) = AlertScope.parse(many, agencyID: "1") else {
            Issue.record("\(AlertScope.maxSelectors + 1) places accepted")
            return
        }
        #expect(failure.messages.first?.contains("at most \(AlertScope.maxSelectors)") == true)
        let long = "route=1_" + String(repeating: "x", count: FieldLimits.identifier)
        #expect(throws: (any Error).self) { try AlertScope.parse(long, agencyID: "1").get() }
        var alert = Self.alert()
        let messages = AlertInputRules.apply(["scope": String(repeating: "a", count: AlertScope.maxTextLength + 1)], to: &alert)
        #expect(messages.contains { $0.hasPrefix("Scope is too long") }, "\(messages)")
    }

    @Test(
        arguments: [
            ("2024-02-29", "20240229"), ("2025-02-29", nil), ("20261231", "20261231"), ("2026-13-01", nil), ("2026-1-01", nil),
            ("2026-12-00", nil), ("２０２６１２０１", nil),
        ] as [(String, String?)])
    func serviceDays(_ text: String, _ expected: String?) {
        #expect(AlertScope.serviceDate(text) == expected, "\(text)")
    }

    // MARK: The feed

    @Test func theFeedCarriesEachPlaceWithItsAgencyAndGTFSIds() {
        var alert = Self.alert()
        #expect(AlertScope.feedSelectors(alert) == [EntitySelector(agencyID: "1")], "unscoped: the agency alone")
        alert.scope = try! AlertScope.parse(
            "route=1_44 stop=1_75403; trip=40_604318 date=2026-12-01; route_type=bus; stop=1_a_b", agencyID: "1"
        ).get()
        let selectors = AlertScope.feedSelectors(alert)
        #expect(selectors.count == 4)
        #expect(selectors[0] == EntitySelector(agencyID: "1", routeID: "44", stopID: "75403"))
        #expect(selectors[1] == EntitySelector(agencyID: "40", trip: TripDescriptor(tripID: "604318", startDate: "20261201")))
        #expect(selectors[2] == EntitySelector(agencyID: "1", routeType: 3), "a route type belongs to the alert's agency")
        #expect(selectors[3] == EntitySelector(agencyID: "1", stopID: "a_b"))
        // The entity the feed serves is made from them, and survives encoding.
        let entity = AlertFeedRules.entity(alert, translations: [])
        #expect(entity.alert?.informedEntities == selectors)
        let message = FeedMessage(header: FeedHeader(timestamp: 1), entities: [entity])
        let decoded = try? FeedMessage(decoding: message.encoded())
        #expect(decoded?.entities.first?.alert?.informedEntities == selectors)
        // Both apps still find the agency on it (they keep only such alerts).
        let findings = AlertAppVisibility.findings(entity, stamp: 0, now: 0, knownAgencies: nil)
        #expect(!findings.contains { $0.text.contains("no informed entity carries an agency_id") })
    }

    @Test func lookupsAreTheDistinctIdsInOrder() throws {
        let selectors = try AlertScope.parse("route=1_44 stop=1_7; stop=1_7; route=1_44; trip=1_9; route_type=bus", agencyID: "1").get()
        #expect(
            AlertScope.lookups(selectors) == [
                .init(kind: .route, id: "1_44"), .init(kind: .stop, id: "1_7"), .init(kind: .trip, id: "1_9"),
            ])
    }

    @Test func theCheckRefusesUnknownIdsAndWarnsOfUncheckedOnes() {
        let route = AlertScope.Lookup(kind: .route, id: "1_44"), stop = AlertScope.Lookup(kind: .stop, id: "1_7")
        let fine = AlertScopeCheckRules.outcome([(route, .known), (stop, .known)], regionID: 1)
        #expect(fine.refusals.isEmpty && fine.warnings.isEmpty)
        let unknown = AlertScopeCheckRules.outcome([(route, .known), (stop, .unknown)], regionID: 1)
        #expect(unknown.refusals.count == 1 && unknown.refusals[0].contains("does not know stop 1_7"))
        let unchecked = AlertScopeCheckRules.outcome([(route, .unchecked("down")), (stop, .unchecked("down"))], regionID: 1)
        #expect(unchecked.refusals.isEmpty)
        #expect(unchecked.warnings == ["Scope not checked against OneBusAway for route 1_44, stop 1_7: down"])
    }

    // MARK: Saving, on both backends

    /// A checker that answers from a table and counts what it was asked.
    struct TableChecker: AlertScopeChecker {
        let verdicts: [String: AlertScopeVerdict]
        var otherwise = AlertScopeVerdict.unknown
        let asked = Locked<[String]>([])
        func check(_ lookup: AlertScope.Lookup, region: Region, client: String) async -> AlertScopeVerdict {
            asked.withLock { $0.append("\(lookup.kind.rawValue)/\(lookup.id)") }
            return verdicts["\(lookup.kind.rawValue)/\(lookup.id)"] ?? otherwise
        }
    }

    @Test func aSaveStopsAskingOnceALookupCouldNotBeMade() async throws {
        // OneBusAway down must not hold an editor's save for 50 timeouts.
        try await AlertRouteTests.run { app, _, _ in
            let checker = TableChecker(verdicts: [:], otherwise: .unchecked("unreachable"))
            var admin = app.administration
            admin.scopeChecker = checker
            let scope = (1...20).map { "stop=1_\($0)" }.joined(separator: "; ")
            let saved = try await admin.create(regionID: 1, fields: ["header": "Stops closed", "start": AlertRouteTests.start, "scope": scope])
            #expect(checker.asked.withLock { $0.count } <= AlertScopeCheckRules.concurrency)
            #expect(saved.warnings.count == 1 && saved.warnings[0].contains("stop 1_20") == false && saved.warnings[0].contains("stop 1_1"))
            #expect(saved.scope.count == 20)
        }
    }

    @Test func aSaveChecksOnlyTheIdsItAddsAndKeepsTheScope() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let checker = TableChecker(verdicts: ["route/1_44": .known, "stop/1_7": .known, "stop/1_8": .unchecked("unreachable")])
            var admin = app.administration
            admin.scopeChecker = checker
            let saved = try await admin.create(
                regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start, "scope": "route=44; stop=7"])
            #expect(saved.warnings.isEmpty)
            #expect(checker.asked.withLock { $0 } == ["route/1_44", "stop/1_7"])
            let stored = try #require(try await admin.alert(id: saved.id))
            #expect(AlertScope.text(stored.scope) == "route=1_44; stop=1_7", "stored with the agency completed")
            // An unknown id refuses the save and changes nothing.
            await #expect(throws: AdministrationError.self) {
                _ = try await admin.edit(id: saved.id, fields: ["scope": "route=1_44; stop=1_99"])
            }
            #expect(try await admin.alert(id: saved.id).scope == stored.scope)
            // Unless the editor says it is known (a stop OneBusAway lists tomorrow).
            let forced = try await admin.edit(id: saved.id, fields: ["scope": "route=1_44; stop=1_99", "scope_check": "false"])
            #expect(AlertScope.text(forced.scope) == "route=1_44; stop=1_99")
            // Ids kept from before are not asked again; one that cannot be
            // checked is saved with a warning.
            checker.asked.withLock { $0 = [] }
            let warned = try await admin.edit(id: saved.id, fields: ["scope": "route=1_44; stop=1_99; stop=1_8"])
            #expect(checker.asked.withLock { $0 } == ["stop/1_8"])
            #expect(warned.warnings.count == 1 && warned.warnings[0].contains("stop 1_8: unreachable"))
            // A save that does not touch the scope asks nothing and keeps it.
            checker.asked.withLock { $0 = [] }
            let other = try await admin.edit(id: saved.id, fields: ["header": "Route 44 detoured at 45th"])
            #expect(checker.asked.withLock { $0 }.isEmpty)
            #expect(other.scope.count == 3)
            // Exported as its text, and imported into a fresh server as it was.
            let document = try await RegionExport.export(regionID: 1, database: app.sidecar.database, nowMillis: 0)
            #expect(String(decoding: document.encoded(), as: UTF8.self).contains(#""scope":"route=1_44; stop=1_99; stop=1_8""#))
            try await TestSidecar.run { fresh in
                let parsed = try RegionDocumentParser.parse(document, regions: fresh.sidecar.regions)
                _ = try await RegionImport.importDocument(parsed, database: fresh.sidecar.database, dryRun: false, nowSeconds: 0)
                #expect(try await fresh.administration.alert(id: saved.id).scope == other.scope)
                // A document's scope is held to the same rules as a typed one.
                let forged = String(decoding: document.encoded(), as: UTF8.self).replacingOccurrences(of: "stop=1_8", with: "line=8")
                let value = try JSONDecoder().decode(JSONValue.self, from: Data(forged.utf8))
                #expect(throws: RegionExchange.Failure.self) { try RegionDocumentParser.parse(value, regions: fresh.sidecar.regions) }
            }
            // Cleared: the whole agency again.
            let cleared = try await admin.edit(id: saved.id, fields: ["scope": ""])
            #expect(cleared.scope.isEmpty)
        }
    }

    @Test func theAdminAPIAndTheFeedCarryTheScopeCheckedAgainstOneBusAway() async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        oba.state.withLock { $0.entities = ["route/1_44", "stop/1_75403"] }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scope-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(clock: clock, { $0.regions = regions }) { app in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles")
            let (key, _) = try await ApiKeyStore(database: app.sidecar.database).create(name: "test", canPush: false, actor: "cli:test", now: 0)
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            func create(_ scope: String) async throws -> RawResponse {
                try await app.send(
                    "POST", "/admin/api/regions/1/alerts", headers: headers,
                    body: Array(#"{"header": "Route 44 detoured", "start": "2026-12-01T08:00:00Z", "scope": "\#(scope)"}"#.utf8))
            }
            let created = try await create("route=44 stop=75403")
            #expect(created.status == 201, "\(created.text)")
            let body = try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any]
            #expect(body?["scope"] as? String == "route=1_44 stop=1_75403")
            let entities = body?["informed_entities"] as? [[String: Any]]
            #expect(entities?.first?["route_id"] as? String == "44")
            #expect(entities?.first?["agency_id"] as? String == "1")
            #expect(body?["warnings"] == nil)
            // An id OneBusAway does not know: 422, naming it.
            let unknown = try await create("route=1_45")
            #expect(unknown.status == 422)
            #expect(unknown.text.contains("does not know route 1_45"))
            // A malformed scope: 422 before anything is asked.
            let asked = oba.state.withLock { $0.entityRequests }
            let malformed = try await create("line=44")
            #expect(malformed.status == 422 && malformed.text.contains("not a selector word"))
            #expect(oba.state.withLock { $0.entityRequests } == asked)
            // OneBusAway down: saved, with a warning saying so.
            oba.state.withLock { $0.mode = .serverError }
            let unchecked = try await create("route=1_46")
            #expect(unchecked.status == 201)
            #expect(unchecked.text.contains("Scope not checked against OneBusAway for route 1_46"))
            // Published, the feed places it on its route and stop.
            let id = try #require(body?["id"] as? Int)
            let published = try await app.send("POST", "/admin/api/alerts/\(id)/publish", headers: headers)
            #expect(published.status == 200)
            let feed = try await app.send("GET", "/api/v1/regions/1/alerts")
            let message = try FeedMessage(decoding: feed.body)
            let entity = message.entities.first { $0.id == "Alert_\(id)" }
            #expect(entity?.alert?.informedEntities == [EntitySelector(agencyID: "1", routeID: "44", stopID: "75403")])
        }
        await oba.server.shutdown()
    }

    static func alert() -> ServiceAlert {
        ServiceAlert(
            id: 1, regionID: 1, agencyID: "1", header: "Route 44 detoured", description: "", url: nil, cause: .construction, effect: .detour,
            severity: .warning, startsAt: 1_764_604_800, endsAt: nil, published: true, test: false, sourceVersion: 1, createdAt: 0,
            updatedAt: 0)
    }
}
