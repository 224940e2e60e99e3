import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Every command is listed and has its own help; errors point at it.
@Suite("App: command-line help that is true", .enabled(if: TestBackend.isSQLite, "no storage of its own: once, on the SQLite run"))
struct CommandLineHelpTests: OperatorCommandSuite {
    @Test func everyCommandIsListedAndHasItsOwnHelp() throws {
        let top = try Self.help(["--help"])
        for group in OperatorCommands.groups.sorted() { #expect(top.contains("sidecar \(group)"), "\(group) missing from --help") }
        for command in [
            "serve", "migrate", "doctor", "probe", "healthcheck", "backup", "copy-database", "relay", "relay-key", "export", "import",
            "push test",
        ] {
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

    @Test(
        "errors point at the command's own help",
        arguments: [
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
}
