import Foundation
import HTTPServer
import Testing

@testable import SidecarKit

@Suite("App: command line and environment")
struct CommandLineTests {
    func serve(_ arguments: [String], _ environment: [String: String] = [:]) throws -> SidecarConfiguration {
        guard case .serve(let configuration) = try CommandLineInterface.parse(["serve"] + arguments, environment: environment) else {
            throw CommandLineError("not serve")
        }
        return configuration
    }

    @Test func defaults() throws {
        let configuration = try serve([])
        #expect(configuration.server.port == 8080)
        #expect(configuration.server.host == "0.0.0.0")
        #expect(configuration.pushRegistrationLimit == 30)
        #expect(configuration.sqliteSynchronous == .normal)
        #expect(configuration.regions == nil)
        #expect(configuration.effectivePublicURL() == "http://localhost:8080")
    }

    /// PostgreSQL connections without `--database-connections`: two per
    /// HTTP thread, never fewer than four (four beat eight on two cores).
    @Test(arguments: [(threads: 1, connections: 4), (threads: 2, connections: 4), (threads: 3, connections: 6), (threads: 8, connections: 16)])
    func postgresConnectionsDefaultToTwoPerThread(threads: Int, connections: Int) throws {
        #expect(SidecarConfiguration.defaultPostgresConnections(threads: threads) == connections)
        let configuration = try serve(["--threads", String(threads)])
        #expect(configuration.postgresConnections == nil, "nil until the database is opened: the default follows --threads")
    }

    @Test func flagsInBothSpellings() throws {
        let configuration = try serve([
            "--port", "9000", "--host=127.0.0.1", "--database", "/tmp/x.db",
            "--regions", "https://example.org/regions-v3.json", "--public-url=https://sidecar.example.org/",
            "--log-level", "warn", "--push-registration-limit", "0", "--sqlite-synchronous", "FULL",
            "--locales", "es, fr ,zh-Hans",
        ])
        #expect(configuration.server.port == 9000)
        #expect(configuration.server.host == "127.0.0.1")
        #expect(configuration.database == "/tmp/x.db")
        #expect(configuration.regions == "https://example.org/regions-v3.json")
        #expect(configuration.effectivePublicURL() == "https://sidecar.example.org")
        #expect(configuration.logLevel == .warning)
        #expect(configuration.pushRegistrationLimit == 0)
        #expect(configuration.sqliteSynchronous == .full)
        #expect(configuration.locales.languages == ["es", "fr", "zh-Hans"])
    }

    @Test func environmentVariablesAndFlagsWin() throws {
        let environment = ["SIDECAR_PORT": "7000", "SIDECAR_PUSH_REGISTRATION_LIMIT": "5", "SIDECAR_DATABASE": "/tmp/env.db"]
        let configuration = try serve(["--port", "7100"], environment)
        #expect(configuration.server.port == 7100)
        #expect(configuration.pushRegistrationLimit == 5)
        #expect(configuration.database == "/tmp/env.db")
    }

    @Test(
        "bad command lines say what is wrong",
        arguments: [
            (["serve", "--bogus", "1"], "unknown flag --bogus"),
            (["serve", "--port", "99999"], "--port must be a whole number from 0 to 65535"),
            (["serve", "--port", "abc"], "got 'abc'"),
            (["serve", "--port"], "--port needs a value"),
            (["serve", "--log-level", "loud"], "--log-level must be"),
            (["serve", "--sqlite-synchronous", "off"], "normal or full"),
            (["serve", "--public-url", "sidecar.example.org"], "--public-url must be an http(s) URL"),
            (["serve", "--apns-url", "ftp://api.push.apple.com"], "--apns-url must be an http(s) URL"),
            (["serve", "--gorush-url", "http://"], "--gorush-url must be an http(s) URL"),
            (["serve", "stray"], "unexpected argument 'stray'"),
            (["launch"], "unknown command 'launch'"),
            (["migrate", "--port", "1"], "unknown flag --port for 'migrate'"),
        ])
    func refuses(arguments: [String], message: String) {
        do {
            _ = try CommandLineInterface.parse(arguments, environment: [:])
            Issue.record("accepted \(arguments)")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
        }
    }

    @Test func badEnvironmentValuesNameTheVariable() {
        #expect(throws: CommandLineError("SIDECAR_PORT: --port must be a whole number from 0 to 65535, got 'x'")) {
            try CommandLineInterface.parse(["serve"], environment: ["SIDECAR_PORT": "x"])
        }
    }

    @Test func helpAndVersion() throws {
        guard case .help(let text) = try CommandLineInterface.parse(["--help"], environment: [:]) else {
            Issue.record("no help")
            return
        }
        #expect(text.contains("sidecar serve"))
        guard case .help(let serveHelp) = try CommandLineInterface.parse(["serve", "--help"], environment: [:]) else {
            Issue.record("no help")
            return
        }
        #expect(serveHelp.contains("--push-registration-limit"))
        #expect(serveHelp.contains("SIDECAR_PUSH_REGISTRATION_LIMIT"))
        guard case .version = try CommandLineInterface.parse(["--version"], environment: [:]) else {
            Issue.record("no version")
            return
        }
    }

    @Test func loopIntervalsAcceptOneSecond() throws {
        guard
            case .serve(let configuration) = try CommandLineInterface.parse(
                ["serve", "--alarm-check-interval", "1", "--live-activity-interval", "1"], environment: [:])
        else {
            Issue.record("not a serve command")
            return
        }
        #expect(configuration.alarmCheckIntervalSeconds == 1)
        #expect(configuration.liveActivityIntervalSeconds == 1)
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--alarm-check-interval", "0"], environment: [:]) }
    }

    @Test func secretsCanComeFromFiles() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try "sk_live_from_file\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        guard case .serve(let fromFlag) = try CommandLineInterface.parse(["serve", "--stripe-secret-key-file", file.path], environment: [:]),
            case .serve(let fromEnvironment) = try CommandLineInterface.parse(["serve"], environment: ["SIDECAR_OBA_API_KEY_FILE": file.path])
        else {
            Issue.record("not serve commands")
            return
        }
        #expect(fromFlag.stripeSecretKey == "sk_live_from_file")
        #expect(fromEnvironment.obaAPIKey == "sk_live_from_file")
        do {
            _ = try CommandLineInterface.parse(["serve", "--pirate-weather-key-file", "/nonexistent/key"], environment: [:])
            Issue.record("a missing secret file was accepted")
        } catch {
            #expect(error.description == "--pirate-weather-key-file: cannot read /nonexistent/key")
        }
    }
}
