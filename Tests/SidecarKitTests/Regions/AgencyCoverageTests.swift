import Core
import Foundation
import OBA
import TestSupport
import Testing

@testable import SidecarKit

/// iOS drops an alert whose agency its OneBusAway server does not list in
/// `agencies-with-coverage` (OneBusAway/onebusaway-ios `AgencyAlert.swift:76-83`),
/// so the commands that name an agency check it there first.
@Suite("Regions: agency ids the apps know")
struct AgencyCoverageTests {
    static let covered = [AgencyCoverage(id: "1", name: "Metro Transit"), AgencyCoverage(id: "40", name: "Sound Transit")]

    @Test(arguments: [
        ("1", Result<[AgencyCoverage], OBAError>.success(covered), AgencyCoverageRules.Verdict.covered),
        ("", .success(covered), .regionWide),
        ("KCM", .success(covered), .unknown(agencyID: "KCM", covered: covered)),
        ("1", .success([]), .unverified(reason: "the OneBusAway server lists no agencies")),
        ("1", .failure(.notFound), .unverified(reason: "the OneBusAway server has no agencies-with-coverage")),
        (
            "1", .failure(.transient("GET https://oba.example.org/api/where/agencies-with-coverage.json?key=SECRET: timed out")),
            .unverified(reason: "the OneBusAway server could not be asked (unreachable, or it refused the request)")
        ),
    ])
    func theRule(_ agency: String, _ lookup: Result<[AgencyCoverage], OBAError>, _ expected: AgencyCoverageRules.Verdict) {
        let verdict = AgencyCoverageRules.verdict(agency, lookup: lookup)
        #expect(verdict == expected)
        let region = Region(id: 1, name: "Puget Sound", obaBaseURL: "https://oba.example.org/", sidecarBaseURL: nil, bounds: [])
        #expect(AgencyCoverageRules.message(verdict, region: region)?.contains("SECRET") != true, "never the API key")
    }

    @Test func theListNamesEachAgency() {
        #expect(AgencyCoverageRules.list(Self.covered) == "1 (Metro Transit), 40 (Sound Transit)")
    }

    static func cli(_ app: TestSidecar, _ arguments: [String]) async throws -> (status: Int32, errors: [String]) {
        let errors = Locked<[String]>([])
        let status = try await AlertSendTests.cli(app, arguments, errors: errors)
        return (status, errors.value)
    }

    @Test func regionSetAndAlertCreateRefuseAnAgencyTheServerDoesNotList() async throws {
        let oba = try FakeOBA { Int64(Date().timeIntervalSince1970 * 1000) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("agencies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run({ $0.regions = regions }) { app in
            // ios/2_agencies_with_coverage.json lists 98 and 1.
            let refused = try await Self.cli(app, ["region", "set", "--id", "1", "--agency-id", "KCM"])
            #expect(refused.status == 1)
            #expect(refused.errors.joined().contains("agency id KCM is not one region 1's OneBusAway server covers"), "\(refused.errors)")
            #expect(refused.errors.joined().contains("98 ("), "the valid ids are listed")
            #expect(try await RegionSettingsStore(database: app.sidecar.database).all()[1]?.agencyID == nil, "nothing stored")
            let set = try await Self.cli(app, ["region", "set", "--id", "1", "--agency-id", "1"])
            #expect(set.status == 0 && !set.errors.contains { $0.contains("agency") }, "\(set.errors)")
            let alert = try await Self.cli(
                app, ["alert", "create", "--region", "1", "--header", "Detour", "--start", "2026-12-01T08:00:00Z", "--agency-id", "KCM"])
            #expect(alert.status == 1)
            let anyway = try await Self.cli(
                app,
                [
                    "alert", "create", "--region", "1", "--header", "Detour", "--start", "2026-12-01T08:00:00Z", "--agency-id", "KCM",
                    "--agency-check", "false",
                ])
            #expect(anyway.status == 0, "the operator may know better")
            let regionWide = try await Self.cli(
                app, ["alert", "create", "--region", "1", "--header", "Storm", "--start", "2026-12-01T08:00:00Z", "--region-wide", "true"])
            #expect(regionWide.status == 0 && !regionWide.errors.contains { $0.contains("agency") }, "a region-wide alert needs no check")
            // A server that cannot answer: a warning, and the command goes on.
            oba.setMode(.serverError)
            let unverified = try await Self.cli(app, ["region", "set", "--id", "0", "--agency-id", "1"])
            #expect(unverified.status == 0)
            #expect(unverified.errors.contains { $0.hasPrefix("warning: agency ids of region 0 not checked") }, "\(unverified.errors)")
        }
        await oba.server.shutdown()
    }
}
