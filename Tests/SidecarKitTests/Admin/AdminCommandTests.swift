import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// The CLI says which database it used and never creates one to read; an
/// API key names its regions.
@Suite("Admin: the database a command touches", .enabled(if: TestBackend.isSQLite, "SQLite files of their own: once, on the SQLite run"))
struct AdminDatabaseCommandTests: OperatorCommandSuite {
    @Test func aReadOnlyCommandNeverCreatesADatabase() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("missing.sqlite3").path
            for command in [
                ["alert", "list", "--region", "1"], ["apikey", "list"], ["user", "list"], ["region", "list"], ["export", "--region", "1"],
                ["survey", "list"], ["alert", "show", "1"], ["ghostbus", "export", "--region", "1"],
            ] {
                let result = try await Self.run(command, database: path)
                #expect(result.status == 1, "\(command)")
                #expect(result.output.isEmpty)
                #expect(result.errors.first?.contains("there is no database at \(path)") == true, "\(command): \(result.errors)")
                #expect(result.errors.first?.contains("never creates one") == true)
                #expect(!FileManager.default.fileExists(atPath: path), "\(command) created the database")
            }
        }
    }

    @Test func aCommandThatChangesExistingRowsNeverCreatesADatabase() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("missing.sqlite3").path
            for command in [
                ["apikey", "revoke", "3"], ["user", "passwd", "--email", "ops@example.org"], ["alert", "publish", "1"],
                ["alert", "delete", "1"], ["source", "approve", "1", "--entity", "e"], ["survey", "delete", "2"],
                ["import", "--file", directory.appendingPathComponent("x.json").path, "--dry-run"],
            ] {
                let result = try await Self.run(command, database: path)
                #expect(result.status == 1, "\(command)")
                #expect(result.errors.first?.contains("there is no database at \(path)") == true, "\(command): \(result.errors)")
                #expect(result.errors.first?.contains("never creates one") == true, "\(command): \(result.errors)")
                #expect(!FileManager.default.fileExists(atPath: path), "\(command) created the database")
            }
        }
    }

    @Test func keysAndAccountsOnlyForRegionsOfTheDirectory() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("keys.sqlite3").path
            let key = try await Self.run(["apikey", "create", "--name", "typo", "--region", "4711"], database: path)
            #expect(key.status == 1)
            #expect(key.errors.contains { $0.contains("no region 4711 in the regions directory") }, "\(key.errors)")
            if FileManager.default.fileExists(atPath: path) {
                let listed = try await Self.run(["apikey", "list"], database: path)
                #expect(listed.output.isEmpty, "no key was made")
            }
        }
    }

    @Test func theDemoRegionIsReachableFromTheCommandLineOnceServeSeededIt() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("demo.sqlite3").path
            let before = try await Self.run(["alert", "list", "--region", "9999"], database: path + ".absent")
            #expect(before.status == 1)
            var configuration = SidecarConfiguration()
            configuration.database = path
            let database = try await configuration.openMigrated(announce: { _ in }).database
            try await RegionSettingsStore(database: database).set(
                RegionSettings(regionID: 9999, agencyID: DemoTransit.agencyID, timezone: DemoTransit.timezone))
            await database.close()
            let listed = try await Self.run(["source", "list", "--region", "9999"], database: path)
            #expect(listed.status == 0, "\(listed.errors)")
            let key = try await Self.run(["apikey", "create", "--name", "demo", "--region", "9999"], database: path)
            #expect(key.status == 0, "\(key.errors)")
        }
    }

    @Test func aWriteCommandSaysItCreatedADatabaseAndStandardOutputKeepsTheResult() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("new.sqlite3").path
            let created = try await Self.run(["apikey", "create", "--name", "ops", "--region", "1"], database: path)
            #expect(created.status == 0, "\(created.errors)")
            #expect(created.errors.first == "sidecar: created a new database at \(path)")
            #expect(created.output.count == 1 && created.output[0].hasPrefix("obask_1_"), "standard output holds the key alone: \(created.output)")
            let listed = try await Self.run(["apikey", "list"], database: path)
            #expect(listed.errors == ["sidecar: database: \(path)"])
            #expect(listed.output.count == 1 && listed.output[0].contains("ops"))
        }
    }

    @Test func aRelativePathIsNamedInFull() async throws {
        var configuration = SidecarConfiguration()
        configuration.database = "sidecar.sqlite3"
        #expect(configuration.databaseName == FileManager.default.currentDirectoryPath + "/sidecar.sqlite3")
        configuration.database = "postgres://sidecar:secret@db.example.org:5433/sidecar"
        #expect(configuration.databaseName.contains("db.example.org"))
        #expect(!configuration.databaseName.contains("secret"), "never the password")
    }

    @Test func anAPIKeyMustNameItsRegions() async throws {
        #expect(throws: CommandLineError("'apikey create' needs --region N|all")) {
            try CommandLineInterface.parse(["apikey", "create", "--name", "ops"], environment: [:])
        }
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("keys.sqlite3").path
            #expect(try await Self.run(["apikey", "create", "--name", "all", "--region", "all"], database: path).status == 0)
            #expect(try await Self.run(["apikey", "create", "--name", "two", "--region", "1", "--region", "3"], database: path).status == 0)
            let mixed = try await Self.run(["apikey", "create", "--name", "bad", "--region", "all", "--region", "1"], database: path)
            #expect(mixed.status == 1)
            let listed = try await Self.run(["apikey", "list"], database: path).output.joined(separator: "\n")
            #expect(listed.contains("all regions"))
            #expect(listed.contains("regions 1,3"))
        }
    }
}

/// The audit log names the operating system's user as the actor of a command.
@Suite("Admin: who a command acts as")
struct AdminActorTests {
    @Test func theCLIActorIsTheOperatingSystemsUser() {
        let actor = CommandRun.operatorLogin()
        #expect(!actor.isEmpty && actor != "unknown")
    }
}
