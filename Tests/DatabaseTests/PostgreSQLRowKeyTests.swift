import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Database

/// Writes that name the rows they lock (`write(locking:)`): PostgreSQL
/// commits queued writes in batches on several connections, and two batches
/// holding each other's rows wait, or deadlock until `deadlock_timeout` (a
/// second) has passed: the tail of POST push_registrations when apps
/// register the same tokens again (issue 39).
@Suite("PostgreSQL: writes naming one row never run in two batches at once")
struct PostgreSQLRowKeyTests {
    @Test(.enabled(if: TestBackend.isPostgreSQL, "needs SIDECAR_TEST_POSTGRES_URL"), .timeLimit(.minutes(2)))
    func aWriteNamingAHeldRowWaitsInTheQueueWhileOthersRun() async throws {
        try await DatabaseConformanceTests.withDatabase(.postgresql) { database in
            let postgres = try #require(database as? PostgreSQLDatabase)
            try await database.migrate(DatabaseConformanceTests.schema)
            try await database.write { connection in
                try connection.execute("INSERT INTO things (name) VALUES ('a'), ('b')", [])
            }
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let secondStarted = Atomic<Bool>(false)
            // The first write updates row a and keeps its transaction open.
            let first = Task {
                try await database.write(locking: ["things/a"]) { connection in
                    try connection.execute("UPDATE things SET hits = hits + 1 WHERE name = 'a'", [])
                    holding.signal()
                    release.wait()
                }
            }
            await offPool { holding.wait() }
            // A second write of row a is queued ...
            let second = Task {
                try await database.write(locking: ["things/a"]) { connection in
                    secondStarted.store(true, ordering: .sequentiallyConsistent)
                    try connection.execute("UPDATE things SET hits = hits + 1 WHERE name = 'a'", [])
                }
            }
            while postgres.queuedCalls == 0 { await Task.yield() }
            // ... and stays queued while a write of another row, queued after
            // it, runs on another connection and commits.
            try await database.write(locking: ["things/b"]) { connection in
                try connection.execute("UPDATE things SET hits = hits + 1 WHERE name = 'b'", [])
            }
            let ranMeanwhile = secondStarted.load(ordering: .sequentiallyConsistent)
            #expect(!ranMeanwhile, "a write ran while another batch held its row")
            #expect(postgres.queuedCalls == 1)
            release.signal()
            try await first.value
            try await second.value
            let hits = try await database.read { connection in
                try connection.query("SELECT name, hits FROM things ORDER BY name", []).map { try $0.int("hits") }
            }
            #expect(hits == [2, 1])
        }
    }
}
