import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import SidecarKit

/// A regions directory served over HTTP by a fake upstream whose document
/// the test swaps.
@Suite("Regions: directory from a URL")
struct RegionRefreshTests {
    final class Document: Sendable {
        let current = Mutex<(status: Int, body: String)>((200, ""))
    }

    final class Upstream: Sendable {
        let document = Document()
        let server: HTTPServer

        init() throws {
            var router = Router()
            let document = self.document
            router.add(
                Route("GET", "/regions-v3.json", parsesParameters: false) { _ in
                    let current = document.current.withLock { $0 }
                    return .bytes(current.status, contentType: "application/json", Array(current.body.utf8))
                })
            server = try startLocalServer(router)
        }

        var url: String { "http://127.0.0.1:\(server.port)/regions-v3.json" }

        func serve(_ status: Int, _ body: String) { document.current.withLock { $0 = (status, body) } }
    }

    static func directory(_ regions: [(Int, String)]) -> String {
        let list = regions.map { #"{"id": \#($0.0), "regionName": "\#($0.1)", "obaBaseUrl": "https://oba.example/", "sidecarBaseUrl": null}"# }
        return #"{"data": {"list": [\#(list.joined(separator: ","))]}}"#
    }

    @Test func refreshesPeriodicallyAndKeepsTheLastGoodDirectoryOnABadRefresh() async throws {
        let upstream = try Upstream()
        upstream.serve(200, Self.directory([(1, "Puget Sound")]))
        try await TestSidecar.run({
            $0.regions = upstream.url
            $0.regionsRefreshSeconds = 300
        }) { (app: TestSidecar) async throws in
            #expect(app.sidecar.regions.all.map(\.id) == [1])
            #expect(try await app.post("/api/v2/regions/2/push_registrations", [("token", "t-000000"), ("operating_system", "ios")]).status == 404)

            upstream.serve(200, Self.directory([(1, "Puget Sound"), (2, "New Region")]))
            #expect(try await app.eventually { app.clock.sleeperCount >= 2 })
            app.clock.advance(seconds: 300)
            #expect(try await app.eventually { app.sidecar.regions.region(id: 2) != nil })
            #expect(
                try await app.post("/api/v2/regions/2-new-region/push_registrations", [("token", "t-000000"), ("operating_system", "ios")]).status
                    == 204)

            for (status, body) in [(200, "{not json"), (500, "oops"), (200, #"{"data": {"list": []}}"#)] {
                upstream.serve(status, body)
                #expect(try await app.eventually { app.clock.sleeperCount >= 2 })
                let warnings = app.log.lines.filter { $0.contains("regions refresh failed") }.count
                app.clock.advance(seconds: 300)
                #expect(try await app.eventually { app.log.lines.filter { $0.contains("regions refresh failed") }.count > warnings })
                #expect(app.sidecar.regions.all.map(\.id) == [1, 2], "the last good directory stays")
            }
        }
        await upstream.server.shutdown()
    }

    @Test func anUnreachableURLAtStartIsAStartupError() async throws {
        var configuration = SidecarConfiguration()
        configuration.regions = "http://127.0.0.1:1/regions-v3.json"
        configuration.database = FileManager.default.temporaryDirectory.appendingPathComponent("unused-\(UUID().uuidString).sqlite3").path
        do {
            _ = try await Sidecar.prepare(
                configuration: configuration, logger: Logger(level: .error, sink: MemorySink()),
                httpClient: HTTPClient(timeoutSeconds: 2))
            Issue.record("started without a regions directory")
        } catch {
            #expect(error.exitCode == 2)
            #expect(error.description.contains("cannot fetch"))
        }
    }
}
