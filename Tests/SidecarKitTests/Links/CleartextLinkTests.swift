import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// The apps refuse cleartext: OneBusAway/onebusaway-android's network
/// security config allows http only to `10.0.2.2` (the emulator's address
/// of the development machine), and iOS App Transport Security allows none.
/// An add-region link to an `http://` sidecar adds a region that can reach
/// nothing, so it is refused unless the host is development or the
/// operator asks for it.
@Suite("Links: no add-region link to a cleartext sidecar")
struct CleartextLinkTests {
    @Test(arguments: [
        ("https://sidecar.example.org", false, true),
        ("http://sidecar.example.org", false, false),
        ("http://sidecar.example.org", true, true),
        ("HTTP://Sidecar.Example.org:8080/", false, false),
        ("http://127.0.0.1:8080", false, true),
        ("http://127.8.9.10", false, true),
        ("http://localhost:8080", false, true),
        ("http://[::1]:8080", false, true),
        ("http://10.0.2.2:8080", false, true),
        ("http://10.0.2.3:8080", false, false),
        ("http://127.0.0.1.evil.example.org", false, false),
        ("http://user@127.0.0.1:8080", false, true),
        ("http://127.0.0.1@evil.example.org", false, false),
    ])
    func theCleartextRule(_ url: String, _ allowHTTP: Bool, _ accepted: Bool) {
        let link = LinkRules.AddRegion(name: "Tampa", obaURL: "https://oba.example.org", sidecarURL: url, regionID: 7)
        #expect(LinkRules.cleartextProblems(link, allowHTTP: allowHTTP).isEmpty == accepted, "\(url)")
    }

    @Test func theCommandRefusesAnHTTPSidecarAndSaysWhy() async throws {
        let regions = try AddRegionLinkTests.regionsFile()
        let base = ["--region-id", "7", "--name", "Tampa", "--oba-url", "https://oba.example.org"]
        let refused = try await AddRegionLinkTests.linksCommand(base + ["--sidecar-url", "http://sidecar.example.org"], regions: regions)
        #expect(refused.status == 1)
        #expect(refused.output.isEmpty, "no link printed")
        #expect(refused.errors.joined().contains("cleartext http"), "\(refused.errors)")
        #expect(refused.errors.joined().contains("10.0.2.2"))
        let allowed = try await AddRegionLinkTests.linksCommand(
            base + ["--sidecar-url", "http://sidecar.example.org", "--allow-http", "true"], regions: regions)
        #expect(allowed.status == 0)
        #expect(allowed.output.first?.contains("sidecar-url=http%3A%2F%2Fsidecar.example.org") == true)
        let emulator = try await AddRegionLinkTests.linksCommand(base + ["--sidecar-url", "http://10.0.2.2:8080"], regions: regions)
        #expect(emulator.status == 0, "the emulator reaches the development machine at 10.0.2.2")
        let bad = try await AddRegionLinkTests.linksCommand(
            base + ["--sidecar-url", "https://s.example.org", "--allow-http", "maybe"], regions: regions)
        #expect(bad.status != 0)
    }

    static func run(allowHTTP: Bool, _ body: (TestSidecar) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cleartext-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = directory.appendingPathComponent("regions.json")
        try Data(
            #"{"data":{"list":[{"id":1,"regionName":"Plain","obaBaseUrl":"https://oba.example.org/","sidecarBaseUrl":"http://sidecar.example.org"}]}}"#
                .utf8
        ).write(to: regions)
        try await TestSidecar.run({
            $0.regions = regions.path
            $0.links.allowHTTPLinks = allowHTTP
        }) { app in try await body(app) }
    }

    @Test func theAddRegionPageExplainsInsteadOfAQRCode() async throws {
        try await Self.run(allowHTTP: false) { app in
            let page = try await app.send("GET", "/regions/1/add")
            #expect(page.status == 409)
            #expect(page.text.contains("plain http"))
            #expect(!page.text.contains("<svg"), "no code to scan")
            #expect(!page.text.contains("onebusaway://add-region"))
        }
        try await Self.run(allowHTTP: true) { app in
            let page = try await app.send("GET", "/regions/1/add")
            #expect(page.status == 200)
            #expect(page.text.contains("<svg"))
        }
    }

    @Test func serveTakesTheFlag() throws {
        guard case .serve(let on) = try CommandLineInterface.parse(["serve", "--allow-http-links", "true"], environment: [:]),
            case .serve(let off) = try CommandLineInterface.parse(["serve"], environment: [:])
        else {
            Issue.record("not serve")
            return
        }
        #expect(on.links.allowHTTPLinks && !off.links.allowHTTPLinks)
    }
}
