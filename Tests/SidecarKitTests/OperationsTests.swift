import Foundation
import HTTPServer
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 14: running the sidecar behind proxies, with metrics and logs an
/// operator's tools can read.
@Suite("Operating it")
struct OperationsTests {
    static let registrations = "/api/v2/regions/1/push_registrations"

    @Test func throttlesCountTheClientBehindATrustedProxyAndIgnoreEveryoneElsesHeaders() async throws {
        try await TestSidecar.run({ configuration in
            configuration.trustedProxies = try? TrustedProxies("127.0.0.1")
            configuration.pushRegistrationLimit = 3
        }) { (app: TestSidecar) async throws in
            func register(_ token: String, forwardedFor: String, source: String) async throws -> Int {
                let body = RawHTTPClient.form([("token", token), ("operating_system", "ios")])
                let response = try await app.send("POST", Self.registrations, headers: [
                    "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": forwardedFor], body: body, source: source)
                return response.status
            }
            // Two riders behind the proxy each get their own budget.
            var statuses: [Int] = []
            for index in 0..<4 { statuses.append(try await register("a\(index)", forwardedFor: "203.0.113.7", source: "127.0.0.1")) }
            for index in 0..<3 { statuses.append(try await register("b\(index)", forwardedFor: "203.0.113.8", source: "127.0.0.1")) }
            #expect(statuses == [204, 204, 204, 429, 204, 204, 204])
            // A client reaching the server directly cannot escape its budget
            // by inventing X-Forwarded-For values.
            var direct: [Int] = []
            for index in 0..<5 { direct.append(try await register("c\(index)", forwardedFor: "198.51.100.\(index)", source: "127.0.0.2")) }
            #expect(direct == [204, 204, 204, 429, 429])
            #expect(app.log.lines.contains { $0.contains("status=429") && $0.contains("client=203.0.113.7") })
            #expect(app.log.lines.contains { $0.contains("status=429") && $0.contains("client=127.0.0.2") })
        }
    }

    @Test func trustedProxyFlags() throws {
        guard case .serve(let configuration) = try CommandLineInterface.parse(
            ["serve", "--trusted-proxies", "10.0.0.0/8,::1", "--client-ip-header", "CF-Connecting-IP"], environment: [:]) else {
            Issue.record("not serve"); return
        }
        #expect(configuration.trustedProxies?.contains("10.9.8.7") == true)
        #expect(configuration.serverConfiguration.trustedProxies?.clientIPHeader == "cf-connecting-ip")
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--trusted-proxies", "10.0.0.0/99"], environment: [:]) }
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--client-ip-header", "X-Real-IP"], environment: [:]) }
        #expect(throws: CommandLineError.self) {
            try CommandLineInterface.parse(["serve", "--trusted-proxies", "::1", "--client-ip-header", "Bad Header"], environment: [:])
        }
    }
}
