import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// The relay keeps to its own: its environment and default database, a
/// sidecar's database refused (and the other way round), a key never
/// created by `show`.
@Suite("Relay: its own database, environment and key", .enabled(if: TestBackend.isSQLite, "SQLite files of their own: once, on the SQLite run"))
struct RelayCommandTests: OperatorCommandSuite {
    @Test func theRelayReadsItsOwnEnvironmentAndDefault() throws {
        let sidecarEnvironment = ["SIDECAR_DATABASE": "/var/lib/sidecar/sidecar.sqlite3", "SIDECAR_PORT": "8080"]
        guard case .relay(let configuration) = try CommandLineInterface.parse(["relay"], environment: sidecarEnvironment) else {
            Issue.record("not the relay")
            return
        }
        #expect(configuration.database == "sidecar-relay.sqlite3", "a sidecar's environment file never points the relay at its database")
        guard
            case .relay(let own) = try CommandLineInterface.parse(
                ["relay"],
                environment: [
                    "SIDECAR_RELAY_DATABASE": "/srv/relay.sqlite3",
                    "SIDECAR_RELAY_PORT": "9090",
                ])
        else { return }
        #expect(own.database == "/srv/relay.sqlite3")
        #expect(own.server.port == 9090)
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
            #expect(
                RelayServer.key(
                    path: path, create: false, output: { line in output.withLock { $0.append(line) } },
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
}
