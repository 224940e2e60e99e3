import Database
import FoundationEssentials
import HTTPClient
import HTTPServer

#if canImport(Glibc)
import Glibc
#endif

/// The whole program behind `sidecar`: parse the command line, then run one
/// command. Exit status 2 means the command line or configuration must be
/// fixed; 1 that the command failed.
public enum SidecarProgram {
    /// Runs the command `arguments` (without the program name) name and
    /// returns the process's exit status.
    public static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        // Before any thread of ours starts (listener, database workers).
        HTTPClient.initializeLibrary()
        let command: SidecarCommand
        let service: ServiceInvocation?
        do {
            service = try ServiceInvocation.prepare(arguments, environment: environment)
        } catch {
            return fail("\(error.description)\nRun 'sidecar \(arguments.first ?? "") --help' for usage.", status: 2)
        }
        defer { service?.finish() }
        do {
            command = try CommandLineInterface.parse(service?.arguments ?? arguments, environment: service?.environment ?? environment)
        } catch {
            return fail("\(error.description)\nRun '\(error.helpCommand)' for usage.", status: 2)
        }
        switch command {
        case .help(let text):
            print(text)
            return 0
        case .version:
            print("sidecar \(CommandLineInterface.version)")
            return 0
        case .admin(let invocation):
            return await AdminCommands.run(invocation)
        case .migrate(let configuration):
            return await migrate(configuration)
        case .copyDatabase(let from, let to, let replace, let base):
            return await copyDatabase(from: from, to: to, replace: replace, base: base)
        case .backup(let database, let target, let replace):
            return backup(database, to: target, replace: replace)
        case .doctor(let configuration, let offline):
            return await Doctor.run(configuration, offline: offline, service: service)
        case .healthcheck(let url):
            return await HealthCheck.run(url: url)
        case .relay(let configuration):
            return await RelayServer.run(configuration)
        case .relayKey(let path, let create):
            return RelayServer.key(path: path, create: create)
        case .probe(let options):
            return await Probe.run(options)
        case .serve(let configuration):
            return await serve(configuration)
        }
    }

    static func fail(_ message: String, status: Int32) -> Int32 {
        StandardErrorSink().write("sidecar: error: \(message)")
        return status
    }

    /// Serves until SIGTERM or SIGINT. 1 when the shutdown deadline cut work
    /// off: the caller exits at once, since libmicrohttpd must not be
    /// stopped under running handlers.
    static func serve(_ configuration: SidecarConfiguration) async -> Int32 {
        let logger = configuration.makeLogger()
        let shutdownSignal = ShutdownSignal.listen()
        do {
            let sidecar = try await Sidecar.prepare(configuration: configuration, logger: logger)
            try await sidecar.start()
            let received = await shutdownSignal.wait()
            logger.info("signal received", [("signal", received == SIGTERM ? "SIGTERM" : "SIGINT")])
            return await sidecar.shutdown() ? 0 : 1
        } catch {
            return fail(error.description, status: error.exitCode)
        }
    }

    static func migrate(_ configuration: SidecarConfiguration) async -> Int32 {
        let logger = configuration.makeLogger()
        do {
            let (database, applied) = try await configuration.openMigrated(readers: 1) { StandardErrorSink().write("sidecar: \($0)") }
            await database.close()
            print(applied.isEmpty ? "database is up to date" : "applied migrations: \(applied.map(String.init).joined(separator: ", "))")
            logger.debug("migrate finished")
            return 0
        } catch {
            return fail(error.description, status: error.exitCode)
        }
    }

    static func copyDatabase(from: String, to: String, replace: Bool, base: SidecarConfiguration) async -> Int32 {
        var sourceConfiguration = base
        sourceConfiguration.database = from
        var targetConfiguration = base
        targetConfiguration.database = to
        do {
            let source = try await sourceConfiguration.openMigrated(readsOnly: true) { StandardErrorSink().write("sidecar: source: \($0)") }.database
            let target = try await targetConfiguration.openMigrated { StandardErrorSink().write("sidecar: target: \($0)") }.database
            // SIGTERM or SIGINT stops the copy between pages, so both
            // databases are closed cleanly and the output says what was copied.
            let signal = ShutdownSignal.listen()
            let stop = StopSignal()
            let watcher = Task {
                _ = await signal.wait()
                stop.stop()
            }
            defer { watcher.cancel() }
            let counts: [(table: String, rows: Int)]
            do { counts = try await DatabaseCopy.run(from: source, to: target, replace: replace, stop: stop) { print($0) } } catch {
                await source.close()
                await target.close()
                throw error
            }
            await source.close()
            await target.close()
            print("copied \(counts.reduce(0) { $0 + $1.rows }) rows in \(counts.count) tables; every count matches")
            return 0
        } catch let error as StartupError {
            return fail(error.description, status: error.exitCode)
        } catch {
            return fail("\(error)", status: 1)
        }
    }

    static func backup(_ database: String, to target: String, replace: Bool) -> Int32 {
        let started = ContinuousClock.now
        do {
            let summary = try SQLiteBackup.copy(from: database, to: target, replace: replace)
            let mebibytes = (Double(summary.bytes) / 1_048_576 * 10).rounded() / 10
            print(
                "backed up \(database) to \(target): \(summary.pages) pages (\(mebibytes) MiB) in "
                    + "\((ContinuousClock.now - started).wholeMilliseconds) ms; integrity_check ok")
            return 0
        } catch {
            return fail("backup: \(error)", status: 1)
        }
    }
}
