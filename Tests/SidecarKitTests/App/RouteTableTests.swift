import Foundation
import HTTPServer
import Testing

@testable import SidecarKit

/// Every route declares who may call it; the whole table is read here.
@Suite("App: route table")
struct RouteTableTests {
    static func table(_ app: TestSidecar) -> [(method: String, pattern: String, access: Access)] {
        app.sidecar.features.flatMap(\.routes).map { ($0.method, $0.pattern, $0.access) }
    }

    @Test func everyConsolePageNeedsASessionButSigningIn() async throws {
        try await TestSidecar.run { app in
            let open: Set<String> = ["GET /admin", "GET /admin/login", "POST /admin/login"]
            for route in Self.table(app) where route.pattern.hasPrefix("/admin") {
                let key = "\(route.method) \(route.pattern)"
                if route.pattern.hasPrefix("/admin/api/") {
                    guard case .apiKey = route.access else {
                        Issue.record("\(key) is \(route.access)")
                        continue
                    }
                } else if route.pattern.hasPrefix("/admin/static/") || open.contains(key) {
                    #expect(route.access == .open, "\(key)")
                } else {
                    guard case .session = route.access else {
                        Issue.record("\(key) is \(route.access), not a session")
                        continue
                    }
                }
            }
        }
    }

    @Test func whatEachRoleMayDoIsDeclared() async throws {
        try await TestSidecar.run { app in
            let access = Dictionary(Self.table(app).map { ("\($0.method) \($0.pattern)", $0.access) }, uniquingKeysWith: { first, _ in first })
            #expect(access["POST /admin/alerts/:alert/sends"] == .session("sendToTestDevices"))
            #expect(access["POST /admin/alerts/:alert/publish"] == .session("author"))
            #expect(access["POST /admin/keys"] == .session("manageKeys"))
            #expect(access["POST /admin/regions/:region/settings"] == .session("manageRegion"))
            #expect(access["GET /admin/audit"] == .session("read"))
            #expect(access["POST /admin/api/alerts/:alert/sends"] == .apiKey("push", object: "alert"))
            #expect(access["GET /admin/api/regions"] == .apiKey("any", object: "none"))
            #expect(access["POST /admin/api/regions/:region/sources"] == .apiKey("sources", object: "region"))
            #expect(access["DELETE /admin/api/principals/:principal"] == .apiKey("principals", object: "principal"))
        }
    }

    /// The admin API's scope column, as the Go reference's route test keeps
    /// one: each route names the object it acts on, the kit resolves it
    /// before the handler, and the object is the one its path leads with.
    @Test func everyAdminRouteDeclaresTheObjectItActsOn() async throws {
        try await TestSidecar.run { app in
            let admin = Self.table(app).filter { $0.pattern.hasPrefix("/admin/api/") }
            #expect(admin.count >= 46)
            for route in admin {
                let key = "\(route.method) \(route.pattern)"
                guard case .apiKey(_, let declared) = route.access, let object = AdminObject(rawValue: declared) else {
                    Issue.record("\(key) is \(route.access), with no object")
                    continue
                }
                let path = route.pattern.dropFirst("/admin/api".count).split(separator: "/").map(String.init)
                // The first capture names what the route acts on: /regions/:region/... is the
                // region's, /alerts/:alert/... the alert's, /keys and /audit nothing's.
                let firstCapture = path.first { $0.hasPrefix(":") }.map { String($0.dropFirst()) }
                #expect(object.parameter == firstCapture, "\(key) declares \(object)")
                if route.pattern.hasPrefix("/admin/api/regions/:region") { #expect(object == .region, "\(key)") }
                if let firstCapture, firstCapture != "key", firstCapture != "principal" {
                    #expect(object.isOfARegion, "\(key): a \(object) must resolve to its region")
                }
            }
            // Every kind of object is in use, so none is declared and forgotten.
            #expect(
                Set(admin.compactMap { route -> String? in if case .apiKey(_, let object) = route.access { object } else { nil } })
                    == Set(AdminObject.allCases.map(\.rawValue)))
        }
    }

    /// A path parameter has one meaning wherever it appears: no bare `:id`.
    @Test func pathParametersNameWhatTheyCarry() async throws {
        try await TestSidecar.run { app in
            for route in Self.table(app) {
                let captures = route.pattern.split(separator: "/").filter { $0.hasPrefix(":") }
                #expect(!captures.contains(":id"), "\(route.method) \(route.pattern)")
            }
        }
    }

    @Test func everyRiderWriteIsThrottled() async throws {
        try await TestSidecar.run { app in
            // The Go reference's admin contract is under /api/admin/v1: keyed, not rider writes.
            for route in Self.table(app) where route.pattern.hasPrefix("/api/") && !route.pattern.hasPrefix("/api/admin/") && route.method != "GET" {
                guard case .throttled = route.access else {
                    Issue.record("\(route.method) \(route.pattern) is \(route.access)")
                    continue
                }
            }
            let access = Dictionary(Self.table(app).map { ("\($0.method) \($0.pattern)", $0.access) }, uniquingKeysWith: { first, _ in first })
            #expect(access["POST /api/v2/regions/:region/push_registrations"] == .throttled("push_registrations"))
            #expect(access["POST /api/v2/regions/:region/ghost_bus_reports"] == .throttled("ghost_bus_ip"))
            #expect(access["GET /api/v1/regions/:region/alerts"] == .open)
        }
    }

    @Test func aDuplicateRouteIsRefusedAtStart() {
        var router = Router()
        let first = Route("GET", "/x") { _ in .empty(204) }
        let second = Route("GET", "/x") { _ in .empty(200) }
        #expect(throws: Router.Conflict.self) { try router.register([first, second]) }
        var other = Router()
        #expect(throws: Never.self) { try other.register([first, Route("POST", "/x") { _ in .empty(204) }]) }
    }
}
