import Foundation
import HTTPServer
import Testing

@testable import SidecarKit

/// The served OpenAPI document and the router describe the same API: every
/// route is in the document and every documented operation is a route. The
/// console's HTML pages (under /admin, outside /admin/api) are pages, not an
/// API, and are left out of both sides.
@Suite("App: OpenAPI document against the router")
struct OpenAPIRouteTests {
    /// `METHOD /path/{}` with every parameter written alike.
    static func normalized(_ method: String, _ path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            if segment.hasPrefix(":") { return "{}" }
            return String(segment).replacing(/\{[^}]+\}/, with: "{}")
        }
        return method.uppercased() + " " + segments.joined(separator: "/")
    }

    /// The operations the YAML lists: paths two spaces in, methods four.
    static func documented() -> Set<String> {
        var operations = Set<String>()
        var path: String?
        var inPaths = false
        for line in OpenAPIDocument.yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            if inPaths, let first = line.first, first != " " { inPaths = false }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
                continue
            }
            if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = String(line.dropFirst(4).dropLast())
                if ["get", "post", "put", "patch", "delete", "head"].contains(method) { operations.insert(normalized(method, path)) }
            }
        }
        return operations
    }

    static func isConsolePage(_ pattern: String) -> Bool {
        pattern == "/admin" || (pattern.hasPrefix("/admin/") && !pattern.hasPrefix("/admin/api/"))
    }

    @Test func everyRouteIsDocumentedAndEveryOperationIsARoute() async throws {
        try await TestSidecar.run({ $0.gorushWebhookSecret = "secret" }) { app in
            var routed = Set<String>()
            for route in app.sidecar.features.flatMap(\.routes) where !Self.isConsolePage(route.pattern) {
                routed.insert(Self.normalized(route.method, route.pattern))
                // A route answering a suffix (`alerts.pb`) may be documented with it.
                for suffix in route.suffixes { routed.insert(Self.normalized(route.method, route.pattern + suffix)) }
            }
            let documented = Self.documented()
            let baseRoutes = Set(
                app.sidecar.features.flatMap(\.routes).filter { !Self.isConsolePage($0.pattern) }
                    .map { Self.normalized($0.method, $0.pattern) })
            #expect(baseRoutes.subtracting(documented).sorted() == [], "routes the document does not describe")
            #expect(documented.subtracting(routed).sorted() == [], "operations the router does not answer")
        }
    }
}
