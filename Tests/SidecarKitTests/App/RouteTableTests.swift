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
            #expect(access["POST /admin/alerts/:id/sends"] == .session("sendToTestDevices"))
            #expect(access["POST /admin/alerts/:id/publish"] == .session("author"))
            #expect(access["POST /admin/keys"] == .session("manageKeys"))
            #expect(access["POST /admin/regions/:region/settings"] == .session("manageRegion"))
            #expect(access["GET /admin/audit"] == .session("read"))
            #expect(access["POST /admin/api/alerts/:id/sends"] == .apiKey("push"))
            #expect(access["GET /admin/api/regions"] == .apiKey("any"))
        }
    }

    @Test func everyRiderWriteIsThrottled() async throws {
        try await TestSidecar.run { app in
            for route in Self.table(app) where route.pattern.hasPrefix("/api/") && route.method != "GET" {
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
