import Foundation
import TestSupport

@testable import SidecarKit

/// A suite that runs operator commands as `main` does, against SQLite files
/// of its own in a temporary directory (such suites run once, on the SQLite
/// run: `.enabled(if: TestBackend.isSQLite, ...)`).
protocol OperatorCommandSuite {}

extension OperatorCommandSuite {
    static func inDirectory(_ body: (URL) async throws -> Void) async throws {
        try await TemporaryDirectory.run("commands", body)
    }

    /// Runs an operator command as `main` does; standard output and error apart.
    static func run(_ arguments: [String], database: String) async throws -> (status: Int32, output: [String], errors: [String]) {
        guard
            case .admin(let invocation) = try CommandLineInterface.parse(
                arguments + ["--database", database, "--regions", try SharedFixtures.requirePath("ios/regions-v3.json")], environment: [:])
        else {
            throw CommandLineError("not an operator command")
        }
        let out = Locked<[String]>([])
        let err = Locked<[String]>([])
        let status = await AdminCommands.run(
            invocation, output: { line in out.withLock { $0.append(line) } },
            errors: { line in err.withLock { $0.append(line) } })
        return (status, out.value, err.value)
    }

    static func help(_ arguments: [String]) throws -> String {
        guard case .help(let text) = try CommandLineInterface.parse(arguments, environment: [:]) else { throw CommandLineError("no help") }
        return text
    }
}
