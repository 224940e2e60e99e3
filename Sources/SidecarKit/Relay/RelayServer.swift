import Core
import Crypto
import Database
import FoundationEssentials
import HTTPServer
import Push

#if canImport(Glibc)
import Glibc
#endif

/// `sidecar relay`: the key holder's push relay, with its own listener and
/// database and the direct APNs and FCM credentials it delivers with.
enum RelayServer {
    /// Serves until SIGTERM or SIGINT; returns the exit status.
    static func run(_ configuration: SidecarConfiguration, clock: any WallClock = SystemClock()) async -> Int32 {
        let logger = configuration.makeLogger()
        let shutdownSignal = ShutdownSignal.listen()
        do {
            let relay = try await prepare(configuration, clock: clock, logger: logger)
            try relay.server.start()
            logger.info(
                "relay listening",
                [
                    ("version", CommandLineInterface.version), ("host", configuration.server.host),
                    ("port", String(relay.server.port)), ("database", configuration.databaseName),
                    ("apns", relay.apns == nil ? "off" : "on"), ("fcm", relay.fcm == nil ? "off" : "on"),
                    ("allowed_servers", relay.allowed.map { String($0.count) } ?? "any"),
                ])
            // Hourly sweep of expired nonces and counters, as tracked
            // background work: it is waited for before the database closes.
            let work = BackgroundWork()
            work.run {
                while !work.stop.isStopping {
                    _ = try? await relay.store.sweep(nowMillis: clock.nowMillis)
                    try? await Task.sleep(for: .seconds(3600))
                }
            }
            let received = await shutdownSignal.wait()
            logger.info("signal received", [("signal", received == SIGTERM ? "SIGTERM" : "SIGINT")])
            let grace = Duration.seconds(Int64(configuration.shutdownTimeoutSeconds))
            let clean = await relay.server.shutdown(grace: grace)
            let swept = await work.stopAndWait(until: .now + grace)
            await relay.database.close()
            return clean && swept ? 0 : 1
        } catch let error as StartupError {
            StandardErrorSink().write("sidecar: error: \(error.description)")
            return error.exitCode
        } catch {
            StandardErrorSink().write("sidecar: error: \(error)")
            return 1
        }
    }

    struct Prepared {
        let server: HTTPServer
        let store: RelayStore
        let database: any Database
        let apns: (any PushTransport)?
        let fcm: (any PushTransport)?
        let allowed: Set<String>?
    }

    static func prepare(_ configuration: SidecarConfiguration, clock: any WallClock, logger: Logger) async throws -> Prepared {
        let apns = try Sidecar.apnsTransport(configuration, boundAcrossCalls: true)
        let fcm = try Sidecar.fcmTransport(configuration)
        guard apns != nil || fcm != nil else {
            throw StartupError(
                description: "the relay delivers with --apns-key-file/--apns-key-id/--apns-team-id and/or --fcm-service-account", exitCode: 2)
        }
        let allowed = try configuration.relayAllowedServersFile.map(readAllowList)
        let database = try await configuration.openMigrated(for: .relay, readers: configuration.server.threads + 2) { logger.info($0) }.database
        let now: @Sendable () -> Double = { clock.now().timeIntervalSince1970 }
        let routes = RelayRoutes(
            store: RelayStore(
                database: database, maxBindingsPerServer: configuration.relayMaxBindingsPerServer,
                maxBindingsPerClient: configuration.relayMaxBindingsPerClient,
                // Alone on SQLite, the window lives in memory; relays sharing
                // PostgreSQL share it through the database.
                replayWindow: database.dialect == .sqlite ? ReplayWindow(startedAt: clock.nowMillis) : nil),
            apns: apns, fcm: fcm, allowedServers: allowed,
            clientLimiter: FixedWindowRateLimiter(
                limit: configuration.relayClientLimit, windowSeconds: 60, name: "relay_client", logger: logger, now: now),
            serverLimiter: FixedWindowRateLimiter(
                limit: configuration.relaySendLimit, windowSeconds: 60, name: "relay_server", logger: logger, now: now),
            clock: clock, logger: logger, database: database)
        var router = Router()
        routes.routes.forEach { router.add($0) }
        let server = HTTPServer(configuration: configuration.serverConfiguration, router: router, logger: logger)
        return Prepared(server: server, store: routes.store, database: database, apns: apns, fcm: fcm, allowed: allowed)
    }

    /// One serverId a line; blank lines and `#` comments ignored.
    static func readAllowList(_ path: String) throws(StartupError) -> Set<String> {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StartupError(description: "cannot read --relay-allowed-servers \(path)", exitCode: 2)
        }
        var ids = Set<String>()
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let text = String(line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "").trimmingWhitespace()
            guard !text.isEmpty else { continue }
            guard text.count == 43, Base64URL.decode(text)?.count == 32 else {
                throw StartupError(description: "--relay-allowed-servers \(path): '\(text)' is not a serverId (43 base64url characters)", exitCode: 2)
            }
            ids.insert(text)
        }
        return ids
    }

    /// `sidecar relay-key show`: this server's identity for the relay's operator.
    /// `relay-key show` (never creates the key) and `relay-key create`
    /// (never replaces one); returns the exit status.
    static func key(
        path: String, create: Bool, output: (String) -> Void = { print($0) },
        errors: (String) -> Void = { StandardErrorSink().write($0) }
    ) -> Int32 {
        do {
            let identity: RelayIdentity
            if create {
                guard !FileManager.default.fileExists(atPath: path) else {
                    errors(
                        "sidecar: error: \(path) exists; 'sidecar relay-key show' prints its identity (a new key would need re-registering at the relay)"
                    )
                    return 1
                }
                identity = try RelayIdentity.create(path: path)
                errors("created \(path) (mode 0600)")
            } else {
                guard let existing = try RelayIdentity.load(path: path) else {
                    errors(
                        "sidecar: error: no relay key at \(path); create one with 'sidecar relay-key create' "
                            + "(or set --relay-key-file / SIDECAR_RELAY_KEY_FILE to the key this server uses)")
                    return 1
                }
                identity = existing
            }
            output("serverId: \(identity.serverID)")
            output("public key (JWK): \(String(decoding: identity.jwk.json.encoded(), as: UTF8.self))")
            output("key file: \(path) (keep it private: whoever holds it pushes as this server)")
            return 0
        } catch {
            errors("sidecar: error: \(error.description)")
            return error.exitCode
        }
    }
}
