import Database
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// The Go reference's cutover runbook, run against Sidecar's commands:
/// `region sync`, `principal create`, `sequence show|bump --min N`, and
/// `principal revoke` taking the principal's keys unless `--keep-keys`
/// (its `cmd/sidecar-admin` commands and README "Cutover runbook").
@Suite("Admin: the Go reference's cutover runbook", .enabled(if: TestBackend.isSQLite, "SQLite files of their own: once, on the SQLite run"))
struct ReferenceRunbookTests: OperatorCommandSuite {
    @Test func theRunbooksCommandsDoWhatItExpects() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("runbook.sqlite3").path
            let principal = try await Self.run(["principal", "create", "--name", "obacloud-production"], database: path)
            #expect(principal.status == 0 && principal.output.count == 1 && principal.output[0].hasPrefix("obasp_"), "\(principal)")
            let synced = try await Self.run(["region", "sync"], database: path)
            #expect(synced.status == 0 && synced.output.first?.hasPrefix("the regions directory holds") == true, "\(synced)")
            // Before the first cutover: every sequence moved to a million, and again changes nothing.
            let shown = try await Self.run(["sequence", "show"], database: path)
            #expect(shown.output == ["alerts\t0", "studies\t0", "surveys\t0", "survey_questions\t0"])
            let bumped = try await Self.run(["sequence", "bump", "--min", "1000000"], database: path)
            #expect(
                bumped.output == [
                    "alerts: 0 -> 1000000", "studies: 0 -> 1000000", "surveys: 0 -> 1000000", "survey_questions: 0 -> 1000000",
                ])
            #expect((try await Self.run(["sequence", "bump", "--min", "5"], database: path)).output.first == "alerts: 1000000 -> 1000000")
            let zero = try await Self.run(["sequence", "bump", "--min", "0"], database: path)
            #expect(zero.status == 1 && zero.errors.last == "sidecar: error: sequence bump: --min must be positive, got 0")
            // The next ids are above it.
            let alert = try await Self.run(
                ["alert", "create", "--region", "1", "--agency-id", "1", "--header", "Detour", "--start", "2027-01-01T00:00:00Z"], database: path)
            #expect(alert.status == 0 && alert.output.joined().contains("1000001"), "\(alert)")
            let study = try await Self.run(["study", "create", "--region", "1", "--name", "Winter"], database: path)
            #expect(study.output.joined().contains("1000001"), "\(study)")
        }
    }

    @Test func revokingAPrincipalTakesItsKeysUnlessTheyAreKept() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("principals.sqlite3").path
            _ = try await Self.run(["principal", "list"], database: path)
            for name in ["first", "second"] { _ = try await Self.run(["principal", "create", "--name", name], database: path) }
            let database = try SQLiteDatabase(path: path, readers: 1)
            let keys = ApiKeyStore(database: database)
            let principals = try await keys.list(principals: true)
            for principal in principals {
                _ = try await keys.create(name: "k", regions: [1], madeBy: principal.id, actor: principal.actorTag, now: 1)
            }
            await database.close()
            let revoked = try await Self.run(["principal", "revoke", String(principals[0].id)], database: path)
            #expect(revoked.status == 0 && revoked.output.first?.hasPrefix("revoked keys: ") == true, "\(revoked)")
            let kept = try await Self.run(["principal", "revoke", String(principals[1].id), "--keep-keys"], database: path)
            #expect(kept.status == 0 && kept.output.count == 1 && kept.output[0].contains("--keep-keys"), "\(kept)")
            let reopened = try SQLiteDatabase(path: path, readers: 1)
            let live = try await ApiKeyStore(database: reopened).list().filter { $0.revokedAt == nil }
            #expect(live.map(\.principalID) == [principals[1].id], "only the kept principal's key still works")
            let gone = try await ApiKeyStore(database: reopened).list().first { $0.principalID == principals[0].id }
            #expect(gone?.revokedBy?.hasPrefix("cli:") == true, "the revoker is recorded")
            await reopened.close()
        }
    }
}
