import Database
import Foundation
import Testing

@testable import SidecarKit

/// A send reads its audience a page at a time, in registration-id order. Each
/// page must come from an index already in that order: a query that sorts
/// the rest of the region for every page makes a send quadratic in the
/// region's size (1,000,000 devices took 160 s instead of 62).
@Suite("PushRegistrations: a send's audience pages")
struct AudiencePageTests {
    static func withDatabase(_ body: (any Database) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("audience-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = SidecarConfiguration()
        configuration.database = directory.appendingPathComponent("audience.sqlite3").path
        let (database, _) = try await configuration.openMigrated { _ in }
        do { try await body(database) } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    @Test(arguments: [false, true])
    func eachPageIsReadFromAnIndexInIdOrderWithoutSorting(testOnly: Bool) async throws {
        try await Self.withDatabase { database in
            let plan = try await database.read { connection in
                try connection.query(
                    "EXPLAIN QUERY PLAN \(PushRegistrationStore.audiencePageSQL(regionID: 1, testOnly: testOnly, after: 0, limit: 1000))"
                ).map { try $0.string("detail") }
            }
            #expect(plan.count == 1, "\(plan)")
            #expect(plan.allSatisfy { !$0.contains("TEMP B-TREE") }, "\(plan)")
            let index = testOnly ? "push_registrations_audience" : "push_registrations_region_order"
            #expect(plan.first?.contains("USING INDEX \(index) (region_id=?") == true, "\(plan)")
        }
    }

    @Test func pagesCoverTheRegionsAudienceOnceInIdOrder() async throws {
        try await Self.withDatabase { database in
            try await database.write { connection in
                for (index, region) in [1, 2, 1, 1, 2, 1, 1].enumerated() {
                    let testDevice = index == 3 || index == 4 ? 1 : 0
                    try connection.execute(
                        """
                        INSERT INTO push_registrations (region_id, token, operating_system, test_device, created_at, last_seen_at)
                        VALUES (\(region), \(String(format: "%064x", index)), 'ios', \(testDevice), 0, 0)
                        """)
                }
            }
            func everyone(testOnly: Bool) async throws -> [String] {
                var tokens: [String] = []
                var cursor: Int64 = 0
                while true {
                    let after = cursor
                    let page = try await database.read { connection in
                        try PushRegistrationStore.audiencePage(connection, regionID: 1, testOnly: testOnly, after: after, limit: 2)
                    }
                    guard let last = page.last else { return tokens }
                    tokens += page.map(\.registration.token)
                    cursor = last.id
                }
            }
            let byIndex = { (indexes: [Int]) in indexes.map { String(format: "%064x", $0) } }
            #expect(try await everyone(testOnly: false) == byIndex([0, 2, 3, 5, 6]))
            #expect(try await everyone(testOnly: true) == byIndex([3]))
        }
    }
}
