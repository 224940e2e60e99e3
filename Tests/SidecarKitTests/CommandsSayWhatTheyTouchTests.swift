@testable import Database
import Foundation
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 25: the CLI says which database it used, never creates one to
/// read, leaves a complete main file behind, and its help is true.
@Suite("Commands say what they touch", .enabled(if: TestBackend.isSQLite, "SQLite files of their own: once, on the SQLite run"))
struct CommandsSayWhatTheyTouchTests {
    static func inDirectory(_ body: (URL) async throws -> Void) async throws {
        try await TemporaryDirectory.run("commands", body)
    }

    /// Runs an operator command as `main` does; standard output and error apart.
    static func run(_ arguments: [String], database: String) async throws -> (status: Int32, output: [String], errors: [String]) {
        guard case .admin(let invocation) = try CommandLineInterface.parse(
            arguments + ["--database", database, "--regions", SharedFixtures.path("ios/regions-v3.json")], environment: [:]) else {
            throw CommandLineError("not an operator command")
        }
        let out = Locked<[String]>([])
        let err = Locked<[String]>([])
        let status = await AdminCommands.run(invocation, output: { line in out.withLock { $0.append(line) } },
                                             errors: { line in err.withLock { $0.append(line) } })
        return (status, out.value, err.value)
    }

    static func help(_ arguments: [String]) throws -> String {
        guard case .help(let text) = try CommandLineInterface.parse(arguments, environment: [:]) else { throw CommandLineError("no help") }
        return text
    }

    // MARK: Which database

    @Test func aReadOnlyCommandNeverCreatesADatabase() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("missing.sqlite3").path
            for command in [["alert", "list", "--region", "1"], ["apikey", "list"], ["user", "list"], ["region", "list"], ["export", "--region", "1"],
                            ["survey", "list"], ["alert", "show", "1"], ["ghostbus", "export", "--region", "1"]] {
                let result = try await Self.run(command, database: path)
                #expect(result.status == 1, "\(command)")
                #expect(result.output.isEmpty)
                #expect(result.errors.first?.contains("there is no database at \(path)") == true, "\(command): \(result.errors)")
                #expect(result.errors.first?.contains("never creates one") == true)
                #expect(!FileManager.default.fileExists(atPath: path), "\(command) created the database")
            }
        }
    }

    @Test func aWriteCommandSaysItCreatedADatabaseAndStandardOutputKeepsTheResult() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("new.sqlite3").path
            let created = try await Self.run(["apikey", "create", "--name", "ops", "--region", "1"], database: path)
            #expect(created.status == 0, "\(created.errors)")
            #expect(created.errors.first == "sidecar: created a new database at \(path)")
            #expect(created.output.count == 1 && created.output[0].hasPrefix("sidecar_"), "standard output holds the key alone: \(created.output)")
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

    // MARK: The main file alone

    @Test func aCommandLeavesEveryRowInTheMainFile() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("sidecar.sqlite3").path
            #expect(try await Self.run(["apikey", "create", "--name", "ops", "--region", "all"], database: path).status == 0)
            #expect(try await Self.run(["region", "set", "--id", "1", "--agency-id", "1", "--timezone", "America/Los_Angeles"],
                                       database: path).status == 0)
            // What an operator does after `systemctl stop`: copy the main file alone.
            let copy = directory.appendingPathComponent("copy.sqlite3").path
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let opened = try SQLiteDatabase(path: copy, readers: 1)
            let keys = try await opened.read { try $0.queryOne("SELECT COUNT(*) AS n FROM api_keys", [])?.optionalInt("n") }
            let zone = try await opened.read { try $0.queryOne("SELECT timezone FROM region_settings WHERE region_id = 1", [])?.optionalString("timezone") }
            await opened.close()
            #expect(keys == 1)
            #expect(zone == "America/Los_Angeles")
        }
    }

    @Test func aCleanStopFoldsTheLogIntoTheMainFile() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("server.sqlite3").path
            let database = try SQLiteDatabase(path: path, readers: 2)
            try await database.write { try $0.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, text TEXT NOT NULL)", []) }
            for number in 0..<200 {
                try await database.write { try $0.execute("INSERT INTO rows (text) VALUES ($1)", [.text("row \(number)")]) }
            }
            // A reader that was used stays pooled until the close.
            _ = try await database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM rows", []) }
            await database.close()
            let log = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            #expect(log == 0, "the write-ahead log was folded in and emptied")
            let copy = directory.appendingPathComponent("copy.sqlite3").path
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let reopened = try SQLiteDatabase(path: copy, readers: 1)
            #expect(try await reopened.read { try $0.queryOne("SELECT COUNT(*) AS n FROM rows", [])?.optionalInt("n") } == 200)
            await reopened.close()
        }
    }

    @Test func backupsAreReadableByTheirOwnerOnly() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("live.sqlite3").path
            #expect(try await Self.run(["apikey", "create", "--name", "ops", "--region", "all"], database: path).status == 0)
            let target = directory.appendingPathComponent("backup.sqlite3").path
            _ = try SQLiteBackup.copy(from: path, to: target)
            let mode = try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int
            #expect(mode == 0o600, "mode \(String(mode ?? 0, radix: 8))")
        }
    }

    @Test func copyDatabaseCarriesTheAlertIDCounterIntoAFreshTarget() async throws {
        try await Self.inDirectory { directory in
            let source = directory.appendingPathComponent("source.sqlite3").path
            #expect(try await Self.run(["region", "set", "--id", "1", "--agency-id", "1"], database: source).status == 0)
            for header in ["First", "Second", "Third"] {
                #expect(try await Self.run(["alert", "create", "--region", "1", "--header", header, "--start", "2026-12-01T08:00:00Z"],
                                           database: source).status == 0)
            }
            #expect(try await Self.run(["alert", "delete", "3"], database: source).status == 0)
            var from = SidecarConfiguration()
            from.database = source
            var to = SidecarConfiguration()
            to.database = directory.appendingPathComponent("target.sqlite3").path
            let sourceDatabase = try await from.openMigrated(readsOnly: true) { _ in }.database
            let targetDatabase = try await to.openMigrated { _ in }.database
            let counts = try await DatabaseCopy.run(from: sourceDatabase, to: targetDatabase, replace: false) { _ in }
            await sourceDatabase.close()
            await targetDatabase.close()
            #expect(counts.first { $0.table == "alerts" }?.rows == 2)
            let created = try await Self.run(["alert", "create", "--region", "1", "--header", "Fourth", "--start", "2026-12-01T08:00:00Z"],
                                             database: to.database)
            #expect(created.output.first?.hasPrefix("created alert 4 ") == true, "a deleted alert's id is never reused after a copy: \(created.output)")
        }
    }

    // MARK: The relay keeps to its own

    @Test func theRelayReadsItsOwnEnvironmentAndDefault() throws {
        let sidecarEnvironment = ["SIDECAR_DATABASE": "/var/lib/sidecar/sidecar.sqlite3", "SIDECAR_PORT": "8080"]
        guard case .relay(let configuration) = try CommandLineInterface.parse(["relay"], environment: sidecarEnvironment) else {
            Issue.record("not the relay")
            return
        }
        #expect(configuration.database == "sidecar-relay.sqlite3", "a sidecar's environment file never points the relay at its database")
        guard case .relay(let own) = try CommandLineInterface.parse(["relay"], environment: ["SIDECAR_RELAY_DATABASE": "/srv/relay.sqlite3",
                                                                                              "SIDECAR_RELAY_PORT": "9090"]) else { return }
        #expect(own.database == "/srv/relay.sqlite3")
        #expect(own.port == 9090)
        let help = try Self.help(["relay", "--help"])
        #expect(help.contains("default sidecar-relay.sqlite3"))
        #expect(help.contains("env: SIDECAR_RELAY_DATABASE"))
        #expect(!help.contains("default sidecar.sqlite3"), "the relay's help states its real default")
    }

    @Test func eachRefusesTheOthersDatabase() async throws {
        try await Self.inDirectory { directory in
            var sidecar = SidecarConfiguration()
            sidecar.database = directory.appendingPathComponent("sidecar.sqlite3").path
            let opened = try await sidecar.openMigrated { _ in }
            await opened.database.close()
            var relay = sidecar
            relay.database = sidecar.database
            do {
                let wrong = try await relay.openMigrated(for: .relay) { _ in }
                await wrong.database.close()
                Issue.record("the relay took a sidecar's database")
            } catch {
                #expect("\(error)".contains("is a sidecar's database"), "\(error)")
            }
            relay.database = directory.appendingPathComponent("relay.sqlite3").path
            let relayOpened = try await relay.openMigrated(for: .relay) { _ in }
            await relayOpened.database.close()
            sidecar.database = relay.database
            do {
                let wrong = try await sidecar.openMigrated { _ in }
                await wrong.database.close()
                Issue.record("a sidecar took the relay's database")
            } catch {
                #expect("\(error)".contains("is a relay's database"), "\(error)")
            }
        }
    }

    @Test func relayKeyShowNeverCreatesAKey() async throws {
        try await Self.inDirectory { directory in
            let path = directory.appendingPathComponent("relay-key.pem").path
            let errors = Locked<[String]>([])
            let output = Locked<[String]>([])
            #expect(RelayServer.key(path: path, create: false, output: { line in output.withLock { $0.append(line) } },
                                    errors: { line in errors.withLock { $0.append(line) } }) == 1)
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(errors.value.last?.contains("sidecar relay-key create") == true)
            #expect(RelayServer.key(path: path, create: true, output: { line in output.withLock { $0.append(line) } }, errors: { _ in }) == 0)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let first = output.value.first
            #expect(RelayServer.key(path: path, create: true, output: { _ in }, errors: { _ in }) == 1, "never replaces a key")
            output.withLock { $0.removeAll() }
            #expect(RelayServer.key(path: path, create: false, output: { line in output.withLock { $0.append(line) } }, errors: { _ in }) == 0)
            #expect(output.value.first == first)
        }
        guard case .relayKey(_, let create) = try CommandLineInterface.parse(["relay-key", "show"], environment: [:]) else { return }
        #expect(!create)
    }

    // MARK: Help that is true

    @Test func everyCommandIsListedAndHasItsOwnHelp() throws {
        let top = try Self.help(["--help"])
        for group in OperatorCommands.groups.sorted() { #expect(top.contains("sidecar \(group)"), "\(group) missing from --help") }
        for command in ["serve", "migrate", "doctor", "probe", "healthcheck", "backup", "copy-database", "relay", "relay-key", "export", "import",
                        "push test"] {
            #expect(top.contains("sidecar \(command)"), "\(command) missing from --help")
        }
        for command in OperatorCommands.all {
            let words = command.name.split(separator: " ").map(String.init)
            let own = try Self.help(words + ["--help"])
            #expect(own.hasPrefix("Usage: sidecar \(command.name)"), "\(command.name): \(own.prefix(80))")
            for option in command.options { #expect(own.contains("--\(option.name)"), "\(command.name) --\(option.name)") }
            if words.count == 2 { #expect(try Self.help([words[0]]).contains("sidecar \(command.name)")) }
        }
    }

    @Test func requiredOptionsAreMarkedAndSwitchesTakeNoValue() throws {
        let create = try Self.help(["alert", "create", "--help"])
        #expect(create.contains("Usage: sidecar alert create --region N --header TEXT --start TIME [--description TEXT]"))
        #expect(create.contains("--region N   (required)"))
        let key = try Self.help(["apikey", "create", "--help"])
        #expect(key.contains("[--push]"))
        #expect(!key.contains("--push VALUE") && !key.contains("--push true"))
        let test = try Self.help(["push", "test", "--help"])
        #expect(test.contains("Usage: sidecar push test --platform ios|android --token TOKEN [--sandbox]"))
        #expect(test.contains("--gorush-url") && test.contains("--apns-key-file") && test.contains("--fcm-service-account"), "the flags it needs")
        #expect(!test.contains("--database"), "it touches no database")
        #expect(try Self.help(["import", "--help"]).contains("[--dry-run]"))
    }

    @Test("errors point at the command's own help", arguments: [
        (["alert", "create", "--bogus"], "sidecar alert create --help"),
        (["alert", "create", "--region", "1"], "sidecar alert create --help"),
        (["alert", "frob"], "sidecar alert --help"),
        (["push", "test", "--platform", "ios"], "sidecar push test --help"),
        (["serve", "--port", "x"], "sidecar serve --help"),
        (["backup"], "sidecar backup --help"),
        (["relay-key", "frob"], "sidecar relay-key --help"),
        (["launch"], "sidecar --help"),
    ])
    func errorsPointAtTheirHelp(arguments: [String], help: String) {
        do {
            _ = try CommandLineInterface.parse(arguments, environment: [:])
            Issue.record("accepted \(arguments)")
        } catch {
            #expect(error.helpCommand == help, "\(arguments): \(error.description)")
        }
    }

    @Test func serveHelpOpensWithWhatProductionSets() throws {
        let text = try Self.help(["serve", "--help"])
        let production = try #require(text.range(of: "What production sets"))
        let others = try #require(text.range(of: "Every other flag"))
        for flag in ["--database", "--public-url", "--regions", "--oba-api-key-file", "--apns-key-file", "--trusted-proxies"] {
            let position = try #require(text.range(of: "  \(flag) "), "\(flag)")
            #expect(position.lowerBound > production.lowerBound && position.lowerBound < others.lowerBound, "\(flag) is among production's")
        }
        #expect(text.range(of: "  --threads ")!.lowerBound > others.lowerBound)
        #expect(text.contains("  --demo\n"), "a switch is shown without a value")
    }

    // MARK: doctor, probe and the demo

    @Test func doctorWarnsAboutTheSampleRegions() async {
        var configuration = SidecarConfiguration()
        configuration.database = ":memory:"
        let lines = Locked<[String]>([])
        _ = await Doctor.run(configuration, offline: true) { line in lines.withLock { $0.append(line) } }
        #expect(lines.value.contains { $0.contains("regions") && $0.contains("bundled sample regions are in use") && $0.hasPrefix("  warn") },
                "\(lines.value)")
    }
}
