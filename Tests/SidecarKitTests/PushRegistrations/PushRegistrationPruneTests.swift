import Database
import Foundation
import Testing

@testable import SidecarKit

/// The daily prune without an index on `last_seen_at`: every launch moves
/// that column, so an index on it made each re-registration write into every
/// index of the table (on PostgreSQL, no in-place update). The prune walks
/// the table by id instead and must still find every stale row.
@Suite("PushRegistrations: the prune walks the table by id")
struct PushRegistrationPruneTests {
    @Test func everyStaleRowIsRemovedAcrossPagesAndGapsAndNoSeenRowIs() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let now = app.clock.now()
            let cutoff = now.addingTimeInterval(-10 * 86_400)
            // Stale rows are seen 20 days ago, the rest now; the server's own
            // prune (180 days) removes none of them.
            let stale: Set<Int> = [0, 1, 2, 5, 8, 9, 12, 13]
            let gaps: Set<Int> = [3, 4, 10]
            try await app.sidecar.database.write { connection in
                for index in 0..<14 {
                    let seen = stale.contains(index) ? now.addingTimeInterval(-20 * 86_400) : now
                    try connection.execute(
                        """
                        INSERT INTO push_registrations (region_id, token, operating_system, created_at, last_seen_at)
                        VALUES (\(Int64(1 + index % 2)), \(Self.token(index)), 'ios', 0, \(seen.epochMillis))
                        """)
                }
                // Ids with holes, as deletions leave them.
                for index in gaps { try connection.execute("DELETE FROM push_registrations WHERE token = \(Self.token(index))") }
            }
            let removed = try await app.pushStore.prune(seenAtOrBefore: cutoff, batchSize: 3)
            #expect(removed == stale.count)
            for index in 0..<14 {
                let kept = try await app.pushStore.find(regionID: 1 + index % 2, token: Self.token(index)) != nil
                #expect(kept == !(stale.contains(index) || gaps.contains(index)), "row \(index)")
            }
            // A row seen exactly at the cutoff is stale; one a millisecond later is not.
            try await app.sidecar.database.write { connection in
                for (index, seen) in [(20, cutoff), (21, cutoff.addingTimeInterval(0.001))] {
                    try connection.execute(
                        """
                        INSERT INTO push_registrations (region_id, token, operating_system, created_at, last_seen_at)
                        VALUES (1, \(Self.token(index)), 'ios', 0, \(seen.epochMillis))
                        """)
                }
            }
            #expect(try await app.pushStore.prune(seenAtOrBefore: cutoff) == 1)
            #expect(try await app.pushStore.find(regionID: 1, token: Self.token(21)) != nil)
            #expect(try await app.pushStore.prune(seenAtOrBefore: cutoff) == 0)
        }
    }

    @Test func lastSeenAtHasNoIndex() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let indexed = try await app.sidecar.database.read { connection in
                try connection.query(
                    app.sidecar.database.dialect == .sqlite
                        ? "SELECT sql AS definition FROM sqlite_master WHERE type = 'index' AND tbl_name = 'push_registrations' AND sql IS NOT NULL"
                        : "SELECT indexdef AS definition FROM pg_indexes WHERE tablename = 'push_registrations'"
                ).map { try $0.string("definition") }
            }
            #expect(!indexed.isEmpty)
            #expect(indexed.allSatisfy { !$0.contains("last_seen_at") }, "\(indexed)")
        }
    }

    static func token(_ index: Int) -> String { String(format: "%064x", index) }
}
