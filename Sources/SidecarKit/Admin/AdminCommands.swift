import Core
import Database
import FoundationEssentials
import HTTPClient

/// Runs the operator commands (`sidecar region|alert|apikey ...`): opens the
/// database a command's access calls for (never creating one to read), says
/// which on standard error, runs the command as its group's file describes
/// it, and reports its errors.
enum AdminCommands {
    /// Runs one command; returns the process exit status (0 ok, 1 failed,
    /// 2 usage). Normal output goes to `output`, errors and progress to `errors`.
    static func run(
        _ invocation: AdminInvocation, clock: any WallClock = SystemClock(),
        output: @escaping @Sendable (String) -> Void = { print($0) },
        errors: @escaping @Sendable (String) -> Void = { StandardErrorSink().write($0) }
    ) async -> Int32 {
        guard let command = OperatorCommands.named(invocation.command) else {
            errors("sidecar: error: unknown command '\(invocation.command)'")
            return 2
        }
        let configuration = invocation.configuration
        let http = HTTPClient()
        defer { http.shutdown() }
        var regionList: [Region] = []
        if command.needsRegions {
            do { regionList = try await RegionSource(argument: configuration.regions).load(client: http) } catch {
                errors("sidecar: error: regions directory: \(error.description)")
                return 2
            }
        }
        var database: (any Database)?
        if command.access != .none {
            // A dry run only reads, whatever the command would write.
            let dryRun = invocation.options["dry_run"].map { $0 != "false" } ?? false
            do {
                database = try await configuration.openMigrated(
                    readsOnly: command.access == .reads || dryRun, changesOnly: command.access == .changes,
                    announce: { errors("sidecar: \($0)") }
                ).database
            } catch {
                errors("sidecar: error: \(error.description)")
                return error.exitCode
            }
        }
        // The demo region lives in the database serve --demo seeded, not in
        // the directory: commands reach it there as the demo guide says.
        if command.needsRegions, let database, let demo = await DemoRegion.seeded(in: database, avoiding: regionList, configuration: configuration) {
            regionList.append(demo)
        }
        let regions = RegionDirectory(regionList)
        let run = CommandRun(
            invocation: invocation, opened: database, regions: regions, clock: clock, logger: configuration.makeLogger(),
            http: http, output: output, errors: errors)
        let status = await report(errors) { try await command.run(run) }
        // Closed before the process exits: SQLite folds its log into the
        // main file, which then holds every row on its own.
        await database?.close()
        return status
    }

    /// Runs a command, turning what it throws into messages and a status.
    static func report(_ errors: @Sendable (String) -> Void, _ body: () async throws -> Int32) async -> Int32 {
        do {
            return try await body()
        } catch ConsoleStore.Failure.duplicateEmail {
            errors("sidecar: error: an account with this email exists (sidecar user passwd to change its password)")
        } catch AdministrationError.approvalPending(_, let message) {
            // Not a failure: the action waits for a second person, and says so.
            errors("sidecar: " + message)
            return 0
        } catch let error as AdministrationError {
            error.messages.forEach { errors("sidecar: error: \($0)") }
        } catch let error as StartupError {
            errors("sidecar: error: \(error.description)")
            return error.exitCode
        } catch AlertStoreError.busy(let retryAfter) {
            errors("sidecar: error: this send is running in another process; if that process died, retry in \(retryAfter) s")
        } catch {
            errors("sidecar: error: \(error)")
        }
        return 1
    }
}

extension OperatorCommand {
    /// Commands about regions and their content read the regions directory,
    /// and so do the ones granting keys and accounts regions (which must be
    /// in it); the rest of keys and accounts, and test pushes, do not.
    var needsRegions: Bool {
        if name == "apikey create" || name == "user create" { return true }
        return !(name.hasPrefix("apikey") || name.hasPrefix("principal") || name.hasPrefix("user") || name.hasPrefix("push"))
    }
}
