import Foundation
import SidecarClient
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 23: add-region links carry `region-id` and every value the apps
/// read, the client decodes them, and old poster links still work.
@Suite("Links: add-region links as the apps read them")
struct AddRegionLinkTests {
    static let fullRegion = Region(
        id: 7, name: "Tampa Bay", obaBaseURL: "https://api.tampa.example.org/api/", sidecarBaseURL: "https://sidecar.tampa.example.org/",
        bounds: [],
        tripPlanner: .init(
            restURL: "https://otp.tampa.example.org/otp/", graphqlURL: "https://otp.tampa.example.org/graphql",
            graphqlBikeshare: true),
        analytics: .init(url: "https://analytics.example.org", siteID: "abc-123"))

    @Test func aDirectoryRegionsLinkCarriesEveryValueTheAppsReadAndTheClientDecodesIt() throws {
        let link = LinkRules.addRegionLink(LinkRules.AddRegion(region: Self.fullRegion, sidecarURL: "https://ignored.example.org"))
        let items = try #require(LinkRules.queryItems(link))
        #expect(
            items == [
                "name": "Tampa Bay", "oba-url": "https://api.tampa.example.org/api/", "region-id": "7",
                "sidecar-url": "https://sidecar.tampa.example.org", "otp-url": "https://otp.tampa.example.org/otp/",
                "otp-graphql-url": "https://otp.tampa.example.org/graphql", "otp-graphql-bikeshare": "true",
                "umami-url": "https://analytics.example.org", "umami-id": "abc-123",
            ])
        guard case .addRegion(let decoded)? = SidecarLink(url: try #require(URL(string: link))) else {
            Issue.record("not decoded")
            return
        }
        #expect(decoded.regionID == 7)
        #expect(decoded.otpGraphqlURL?.absoluteString == "https://otp.tampa.example.org/graphql" && decoded.otpGraphqlBikeshare)
        #expect(decoded.sidecarURL?.absoluteString == "https://sidecar.tampa.example.org", "never a trailing slash: Android concatenates")
        #expect(decoded.umami?.id == "abc-123")
        // The client encodes what it decodes.
        #expect(SidecarLink.addRegion(decoded).url()?.absoluteString == link)
    }

    @Test func aRegionWithoutExtrasAndAnOldPosterLinkStillWork() throws {
        let bare = Region(id: 0, name: "Bear Transit", obaBaseURL: "https://oba.example.org/", sidecarBaseURL: nil, bounds: [])
        let link = LinkRules.addRegionLink(LinkRules.AddRegion(region: bare, sidecarURL: "https://sidecar.example.org"))
        #expect(
            try #require(LinkRules.queryItems(link)) == [
                "name": "Bear Transit", "oba-url": "https://oba.example.org/", "region-id": "0",
                "sidecar-url": "https://sidecar.example.org",
            ], "region 0 is a real region")
        let old = try #require(URL(string: "onebusaway://add-region?name=Old&oba-url=https%3A%2F%2Foba.example.org"))
        guard case .addRegion(let decoded)? = SidecarLink(url: old) else {
            Issue.record("an old poster's link must decode")
            return
        }
        #expect(decoded.regionID == nil && decoded.otpGraphqlURL == nil && !decoded.otpGraphqlBikeshare)
        for (text, expected) in [(" 12 ", Int64(12)), ("abc", nil), ("1.5", nil)] as [(String, Int64?)] {
            let url = try #require(
                URL(string: "onebusaway://add-region?name=X&oba-url=https%3A%2F%2Fo.org&region-id=\(text.replacingOccurrences(of: " ", with: "%20"))")
            )
            guard case .addRegion(let read)? = SidecarLink(url: url) else {
                Issue.record("a bad region-id drops only itself")
                return
            }
            #expect(read.regionID == expected, "\(text)")
        }
        for (text, expected) in [("TRUE", true), ("1", true), ("yes", false), ("", false)] {
            let url = try #require(URL(string: "onebusaway://add-region?name=X&oba-url=https%3A%2F%2Fo.org&otp-graphql-bikeshare=\(text)"))
            guard case .addRegion(let read)? = SidecarLink(url: url) else {
                Issue.record("not decoded")
                return
            }
            #expect(read.otpGraphqlBikeshare == expected, "\(text): only true and 1 mean true, as the iOS app reads it")
        }
    }

    @Test(arguments: ["-1", "abc", "1.5", String(repeating: "9", count: 30), "9223372036854775808", "", "+1", "0x10"])
    func aRegionIDThatIsNotANonNegative64BitIntegerIsRefused(_ value: String) {
        #expect(LinkRules.regionIDValue(value) == nil)
    }

    @Test(arguments: [("0", Int64(0)), ("7", 7), ("9223372036854775807", .max), (" 12 ", 12)])
    func regionIDsThatFit(_ value: String, _ expected: Int64) {
        #expect(LinkRules.regionIDValue(value) == expected)
    }

    static func linksCommand(_ arguments: [String], regions: String) async throws -> (status: Int32, output: [String], errors: [String]) {
        guard
            case .admin(let invocation) = try CommandLineInterface.parse(
                ["links", "add-region"] + arguments + ["--regions", regions],
                environment: [:])
        else { throw CommandLineError("not an admin command") }
        let output = Locked<[String]>([])
        let errors = Locked<[String]>([])
        let status = await AdminCommands.run(
            invocation, output: { line in output.withLock { $0.append(line) } },
            errors: { line in errors.withLock { $0.append(line) } })
        return (status, output.value, errors.value)
    }

    static func regionsFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("regions-\(UUID().uuidString).json").path
        let json = #"""
            {"data": {"list": [{"id": 7, "regionName": "Tampa Bay", "obaBaseUrl": "https://api.tampa.example.org/api/",
              "sidecarBaseUrl": "https://sidecar.tampa.example.org/", "otpBaseUrl": "https://otp.tampa.example.org/otp/",
              "otpBaseGraphqlUrl": "https://otp.tampa.example.org/graphql", "supportsOtpGraphqlBikeshare": true,
              "umamiAnalytics": {"url": "https://analytics.example.org", "id": "abc-123"}},
              {"id": 8, "regionName": "Odd", "obaBaseUrl": "https://oba.odd.example.org/", "supportsOtpGraphqlBikeshare": "yes",
               "umamiAnalytics": {"url": "https://analytics.example.org"}}]}}
            """#
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func theLinksCommandCarriesTheRegionIDAndRefusesBadOnes() async throws {
        let regions = try Self.regionsFile()
        defer { try? FileManager.default.removeItem(atPath: regions) }
        var run = try await Self.linksCommand(["--region", "7"], regions: regions)
        #expect(run.status == 0, "\(run.errors)")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["region-id"] == "7")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["umami-id"] == "abc-123")
        // An odd directory entry (a string where a bool belongs, half an analytics pair) still makes a link.
        run = try await Self.linksCommand(["--region", "8", "--sidecar-url", "https://s.example.org"], regions: regions)
        #expect(run.status == 0, "\(run.errors)")
        #expect(
            try #require(LinkRules.queryItems(run.output.last ?? "")) == [
                "name": "Odd", "oba-url": "https://oba.odd.example.org/",
                "region-id": "8", "sidecar-url": "https://s.example.org",
            ])
        // --region-id of a directory region: its values as defaults, overridden by flags.
        run = try await Self.linksCommand(["--region-id", "7", "--name", "Tampa"], regions: regions)
        let items = try #require(LinkRules.queryItems(run.output.last ?? ""))
        #expect(run.status == 0 && items["name"] == "Tampa" && items["otp-graphql-url"] == "https://otp.tampa.example.org/graphql")
        // Explicit values: --region-id sets the id whether or not the directory has it.
        run = try await Self.linksCommand(
            [
                "--region-id", "4242", "--name", "Elsewhere", "--oba-url", "https://oba.example.org",
                "--sidecar-url", "https://s.example.org/", "--umami-url", "https://u.example.org", "--umami-id", "x",
            ],
            regions: regions)
        #expect(run.status == 0, "\(run.errors)")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["region-id"] == "4242")
        #expect(LinkRules.queryItems(run.output.last ?? "")?["sidecar-url"] == "https://s.example.org")
        for bad in ["-1", "abc", "1.5", String(repeating: "1", count: 30)] {
            run = try await Self.linksCommand(
                [
                    "--region-id=\(bad)", "--name", "X", "--oba-url", "https://oba.example.org",
                    "--sidecar-url", "https://s.example.org",
                ], regions: regions)
            #expect(run.status == 1 && run.output.isEmpty, "\(bad)")
            #expect(run.errors.contains { $0.contains("--region-id must be a non-negative integer that fits 64 bits") }, "\(bad): \(run.errors)")
        }
        run = try await Self.linksCommand(
            ["--name", "X", "--oba-url", "https://oba.example.org", "--sidecar-url", "https://s.example.org"],
            regions: regions)
        #expect(run.status == 1 && run.errors.contains { $0.contains("--region-id") }, "without an id the apps invent one")
        run = try await Self.linksCommand(
            [
                "--region-id", "1", "--name", "X", "--oba-url", "https://oba.example.org",
                "--sidecar-url", "https://s.example.org", "--umami-url", "https://u.example.org",
            ], regions: regions)
        #expect(run.status == 1 && run.errors.contains { $0.contains("Umami URL and site id go together") })
    }

    // MARK: Site association

    @Test func stopPagesAreClaimedByDefaultAndCanBeLeftToTheWeb() throws {
        guard case .serve(let defaults) = try CommandLineInterface.parse(["serve"], environment: [:]),
            case .serve(let off) = try CommandLineInterface.parse(["serve", "--universal-link-stops", "false", "--port", "9"], environment: [:]),
            case .serve(let on) = try CommandLineInterface.parse(["serve", "--universal-link-stops"], environment: [:]),
            case .serve(let environment) = try CommandLineInterface.parse(["serve"], environment: ["SIDECAR_UNIVERSAL_LINK_STOPS": "false"])
        else {
            Issue.record("not serve")
            return
        }
        #expect(defaults.links.claimStopPages && on.links.claimStopPages)
        #expect(!off.links.claimStopPages && off.server.port == 9, "a switch's value may follow it")
        #expect(!environment.links.claimStopPages)
    }
}
