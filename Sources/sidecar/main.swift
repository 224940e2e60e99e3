import Database
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import SidecarKit

// Entry point: parse the command line, then serve or migrate. Exit status 2
// means the command line or configuration must be fixed.

func fail(_ message: String, status: Int32) -> Never {
    StandardErrorSink().write("sidecar: error: \(message)")
    exit(status)
}

let command: SidecarCommand
do {
    command = try CommandLineInterface.parse(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
} catch {
    fail("\(error.description)\nRun '\(error.helpCommand)' for usage.", status: 2)
}

switch command {
case .help(let text):
    print(text)
case .version:
    print("sidecar \(CommandLineInterface.version)")
case .admin(let invocation):
    exit(await AdminCommands.run(invocation))
case .migrate(let configuration):
    let logger = configuration.makeLogger()
    do {
        let (database, applied) = try await configuration.openMigrated(readers: 1) { StandardErrorSink().write("sidecar: \($0)") }
        await database.close()
        print(applied.isEmpty ? "database is up to date" : "applied migrations: \(applied.map(String.init).joined(separator: ", "))")
        logger.debug("migrate finished")
    } catch {
        fail(error.description, status: error.exitCode)
    }
case .copyDatabase(let from, let to, let replace, let base):
    var sourceConfiguration = base
    sourceConfiguration.database = from
    var targetConfiguration = base
    targetConfiguration.database = to
    do {
        let source = try await sourceConfiguration.openMigrated(readsOnly: true) { StandardErrorSink().write("sidecar: source: \($0)") }.database
        let target = try await targetConfiguration.openMigrated { StandardErrorSink().write("sidecar: target: \($0)") }.database
        let counts = try await DatabaseCopy.run(from: source, to: target, replace: replace) { print($0) }
        await source.close()
        await target.close()
        print("copied \(counts.reduce(0) { $0 + $1.rows }) rows in \(counts.count) tables; every count matches")
    } catch let error as StartupError {
        fail(error.description, status: error.exitCode)
    } catch {
        fail("\(error)", status: 1)
    }
case .backup(let database, let target, let replace):
    let started = ContinuousClock.now
    do {
        let summary = try SQLiteBackup.copy(from: database, to: target, replace: replace)
        let mebibytes = (Double(summary.bytes) / 1_048_576 * 10).rounded() / 10
        print("backed up \(database) to \(target): \(summary.pages) pages (\(mebibytes) MiB) in \((ContinuousClock.now - started).wholeMilliseconds) ms; integrity_check ok")
    } catch {
        fail("backup: \(error)", status: 1)
    }
case .doctor(let configuration, let offline):
    exit(await Doctor.run(configuration, offline: offline))
case .healthcheck(let url):
    exit(await HealthCheck.run(url: url))
case .relay(let configuration):
    exit(await RelayServer.run(configuration))
case .relayKey(let path, let create):
    exit(RelayServer.key(path: path, create: create))
case .probe(let options):
    exit(await Probe.run(options))
case .serve(let configuration):
    let logger = configuration.makeLogger()
    do {
        let sidecar = try await Sidecar.prepare(configuration: configuration, logger: logger)
        try await sidecar.start()
        let received = await ShutdownSignal.wait()
        logger.info("signal received", [("signal", received == SIGTERM ? "SIGTERM" : "SIGINT")])
        // Exit at once, without further teardown, when the deadline cut work
        // off: libmicrohttpd must not be stopped under running handlers.
        if !(await sidecar.shutdown()) { exit(1) }
    } catch {
        fail(error.description, status: error.exitCode)
    }
}
