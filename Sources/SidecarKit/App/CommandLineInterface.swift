import Database
import FoundationEssentials
import GTFSRealtime
import HTTPServer

/// What the command line asked for.
public enum SidecarCommand: Sendable {
    case serve(SidecarConfiguration)
    case migrate(SidecarConfiguration)
    /// `copy-database`: every row from one database to another.
    case copyDatabase(from: String, to: String, replace: Bool, configuration: SidecarConfiguration)
    /// `backup`: a consistent copy of a live SQLite database.
    case backup(database: String, to: String, replace: Bool)
    /// `doctor`: checks a `serve` configuration and everything it reaches.
    case doctor(SidecarConfiguration, offline: Bool)
    /// `healthcheck`: asks a running server's `/healthz` (container health checks).
    case healthcheck(url: String)
    /// `relay`: the signed push relay (issue 17).
    case relay(SidecarConfiguration)
    /// `relay-key show` (never creates the key) or `relay-key create`.
    case relayKey(path: String, create: Bool)
    /// `probe`: an app's view of a sidecar, endpoint by endpoint.
    case probe(Probe.Options)
    /// An operator command (`region`, `alert`, `apikey`) against the database.
    case admin(AdminInvocation)
    case help(String)
    case version
}

/// An operator command: its name (`alert create`), positional arguments,
/// its own options (dashes turned into underscores) and the shared settings.
public struct AdminInvocation: Sendable {
    public var command: String
    public var positional: [String]
    public var options: [String: String]
    public var configuration: SidecarConfiguration
}

/// A command line (or environment variable) that cannot be obeyed: printed
/// with a hint, exit status 2.
public struct CommandLineError: Error, Equatable, CustomStringConvertible {
    public let description: String
    /// The help that explains the mistake: the command's own, once known.
    public private(set) var helpCommand = "sidecar --help"
    public init(_ description: String) { self.description = description }

    /// The same error, pointing at a command's own help.
    func pointing(at command: String) -> CommandLineError {
        var error = self
        error.helpCommand = "sidecar \(command) --help"
        return error
    }

    public static func == (left: CommandLineError, right: CommandLineError) -> Bool { left.description == right.description }
}

/// Parses `sidecar <command> [--flag value | --flag=value]...`. Every flag
/// can also come from `SIDECAR_<FLAG_IN_UPPER_SNAKE>`; the command line wins.
public enum CommandLineInterface {
    public static let version = "0.1.0"

    struct Flag: Sendable {
        let name: String
        let valueName: String
        let help: String
        let commands: Set<String>
        let apply: @Sendable (inout SidecarConfiguration, String) throws(CommandLineError) -> Void

        var environmentName: String { "SIDECAR_" + upperSnake }
        var upperSnake: String { String(name.uppercased().map { $0 == "-" ? "_" : $0 }) }

        /// The relay reads its settings under a prefix of its own, so that a
        /// sidecar's environment file (SIDECAR_DATABASE, SIDECAR_PORT) never
        /// points the relay at the sidecar's database or port.
        func environmentName(for command: String) -> String {
            guard command == "relay", !name.hasPrefix("relay-") else { return environmentName }
            return "SIDECAR_RELAY_" + upperSnake
        }
    }

    /// Every flag: the plain ones, and a `--NAME-file PATH` form of each
    /// secret (so it stays out of the process list, where every local user
    /// can read arguments; `SIDECAR_NAME_FILE` works too).
    static let flags: [Flag] = plainFlags.flatMap { flag in secretFlags.contains(flag.name) ? [flag, fileForm(flag)] : [flag] }

    /// Flags whose value is a secret.
    static let secretFlags: Set<String> = ["oba-api-key", "oba-region-api-keys", "stripe-secret-key", "stripe-test-secret-key",
                                           "pirate-weather-key", "gorush-webhook-secret"]

    /// `--NAME-file PATH`: reads the file (a trailing newline dropped) and
    /// sets `--NAME` from it. The error names the file, never its content.
    static func fileForm(_ flag: Flag) -> Flag {
        Flag(name: flag.name + "-file", valueName: "PATH", help: "Read --\(flag.name) from this file (preferred: keeps the secret out of the process list)",
             commands: flag.commands) { config, path throws(CommandLineError) in
            guard !path.isEmpty, let data = FileManager.default.contents(atPath: path) else {
                throw CommandLineError("--\(flag.name)-file: cannot read \(path)")
            }
            let secret = String(decoding: data, as: UTF8.self).trimmingWhitespace()
            guard !secret.isEmpty else { throw CommandLineError("--\(flag.name)-file: \(path) is empty") }
            do { try flag.apply(&config, secret) } catch {
                throw CommandLineError("--\(flag.name)-file: the content of \(path) is not a valid --\(flag.name)")
            }
        }
    }

    static let plainFlags: [Flag] = [
        Flag(name: "host", valueName: "ADDRESS", help: "Address to listen on (default 0.0.0.0)", commands: ["serve"]) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--host must not be empty") }
            config.host = value
        },
        Flag(name: "port", valueName: "PORT", help: "TCP port to listen on, 0 for any free port (default 8080)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.port = try integer(value, flag: "port", range: 0...65535)
        },
        Flag(name: "database", valueName: "PATH", help: "SQLite database file, created if missing (default sidecar.sqlite3), or a postgres:// URL (several instances share one PostgreSQL)", commands: ["serve", "migrate", "admin"]) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--database must not be empty") }
            config.database = value
        },
        Flag(name: "regions", valueName: "PATH|URL", help: "regions-v3.json file or http(s) URL (default: a bundled sample)", commands: ["serve", "admin"]) { config, value throws(CommandLineError) in
            config.regions = value
        },
        Flag(name: "regions-refresh", valueName: "SECONDS", help: "How often a regions URL is re-read (default 3600)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.regionsRefreshSeconds = try integer(value, flag: "regions-refresh", range: 10...604_800)
        },
        Flag(name: "public-url", valueName: "URL", help: "Base of URLs handed to apps, e.g. https://sidecar.example.org (default http://localhost:PORT)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.publicURL = try httpURL(value, flag: "public-url")
        },
        Flag(name: "log-level", valueName: "LEVEL", help: "debug, info, warning or error (default info)", commands: ["serve", "migrate", "admin"]) { config, value throws(CommandLineError) in
            guard let level = LogLevel(name: value) else { throw CommandLineError("--log-level must be debug, info, warning or error, got \(value)") }
            config.logLevel = level
        },
        Flag(name: "demo", valueName: "", help: "Add a demo region whose OneBusAway server this process simulates, with sample alerts and a survey; pushes go to the log unless a transport is set (see GET /demo)", commands: ["serve"]) { config, value throws(CommandLineError) in
            switch value.lowercased() {
            case "", "true", "1", "yes": config.demo = true
            case "false", "0", "no": config.demo = false
            default: throw CommandLineError("--demo takes no value (or true/false), got '\(value)'")
            }
        },
        Flag(name: "apple-app-ids", valueName: "TEAMID.BUNDLE,...", help: "iOS apps whose Universal Links this host serves (GET /.well-known/apple-app-site-association), e.g. ABCDE12345.org.onebusaway.iphone", commands: ["serve"]) { config, value throws(CommandLineError) in
            guard let ids = LinkRules.parseAppleAppIDs(value) else {
                throw CommandLineError("--apple-app-ids must be TEAMID.bundle.id[,...] with a 10-character team id, got '\(value)'")
            }
            config.links.appleAppIDs = ids
        },
        Flag(name: "android-app-links", valueName: "PACKAGE:SHA256,...", help: "Android apps verified for this host's links (GET /.well-known/assetlinks.json): package:AA:BB:... (the signing certificate's SHA-256)", commands: ["serve"]) { config, value throws(CommandLineError) in
            guard let apps = LinkRules.parseAndroidAppLinks(value) else {
                throw CommandLineError("--android-app-links must be package.name:SHA256_FINGERPRINT[,...] with 32 colon-separated hex pairs, got '\(value)'")
            }
            config.links.androidApps = apps
        },
        Flag(name: "universal-link-stops", valueName: "", help: "Claim stop pages (/regions/*/stops/*) for the iOS app, which opens them from its builds of 2026-08-21 on (after 26.3.0); --universal-link-stops false leaves them to the web page for riders on older builds (default true)", commands: ["serve"]) { config, value throws(CommandLineError) in
            switch value.lowercased() {
            case "", "true", "1", "yes": config.links.claimStopPages = true
            case "false", "0", "no": config.links.claimStopPages = false
            default: throw CommandLineError("--universal-link-stops takes no value (or true/false), got '\(value)'")
            }
        },
        Flag(name: "app-store-url", valueName: "URL", help: "The iOS app's App Store page, linked from share pages", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.links.appStoreURL = try httpURL(value, flag: "app-store-url")
        },
        Flag(name: "play-store-url", valueName: "URL", help: "The Android app's Google Play page, linked from share pages", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.links.playStoreURL = try httpURL(value, flag: "play-store-url")
        },
        Flag(name: "share-redirect-url", valueName: "TEMPLATE", help: "Send shared stop and trip links to your own trip planner instead of the share page, e.g. https://plan.example.org/stop?id={stop_id} (also {region_id}, {trip_id}, {service_date}, {stop_sequence})", commands: ["serve"]) { config, value throws(CommandLineError) in
            guard LinkRules.redirect(template: value, values: [:]) != nil else {
                throw CommandLineError("--share-redirect-url must be an http(s) URL template whose placeholders come after the host (a /, ? or # first), got '\(value)'")
            }
            config.links.redirectTemplate = value
        },
        Flag(name: "metrics-listen", valueName: "HOST:PORT", help: "Serve Prometheus metrics at http://HOST:PORT/metrics on a listener of their own, e.g. 127.0.0.1:9464 (default: off)", commands: ["serve"]) { config, value throws(CommandLineError) in
            guard let address = SidecarConfiguration.ListenAddress(value) else {
                throw CommandLineError("--metrics-listen must be HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464, got '\(value)'")
            }
            config.metricsListen = address
        },
        Flag(name: "log-format", valueName: "FORMAT", help: "text (default) or json: one JSON object a line with time, level, message and the fields", commands: ["serve", "migrate", "admin"]) { config, value throws(CommandLineError) in
            guard let format = LogFormat(rawValue: value.lowercased()) else { throw CommandLineError("--log-format must be text or json, got \(value)") }
            config.logFormat = format
        },
        Flag(name: "push-registration-limit", valueName: "N", help: "Push registration requests per minute per client address, 0 disables (default 30)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.pushRegistrationLimit = try integer(value, flag: "push-registration-limit", range: 0...1_000_000)
        },
        Flag(name: "alarm-limit", valueName: "N", help: "Alarm creations and deletions per minute per client address, 0 disables (default 30)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.alarmLimit = try integer(value, flag: "alarm-limit", range: 0...1_000_000)
        },
        Flag(name: "live-activity-limit", valueName: "N", help: "Live Activity registrations and deletions per minute per client address, 0 disables (default 30)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.liveActivityLimit = try integer(value, flag: "live-activity-limit", range: 0...1_000_000)
        },
        Flag(name: "upstream-lookup-limit", valueName: "N", help: "OneBusAway lookups one client's requests may cause per minute, 0 disables (default 60)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.upstreamLookupLimit = try integer(value, flag: "upstream-lookup-limit", range: 0...1_000_000)
        },
        Flag(name: "max-alarms-per-device", valueName: "N", help: "Alarms waiting to fire per device (user_push_id), 0 disables (default 20)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.maxAlarmsPerDevice = try integer(value, flag: "max-alarms-per-device", range: 0...1_000_000)
        },
        Flag(name: "max-live-activities-per-token", valueName: "N", help: "Live Activities per push token, 0 disables (default 10)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.maxLiveActivitiesPerPushToken = try integer(value, flag: "max-live-activities-per-token", range: 0...1_000_000)
        },
        Flag(name: "webhook-limit", valueName: "N", help: "gorush feedback posts per minute per client address, 0 disables (default 600)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.webhookLimit = try integer(value, flag: "webhook-limit", range: 0...1_000_000)
        },
        Flag(name: "send-lease-seconds", valueName: "SECONDS", help: "How long an alert send stays claimed by a server that stopped making progress before another resumes it (default 30)", commands: ["serve", "alert send"]) { config, value throws(CommandLineError) in
            config.sendLeaseSeconds = try integer(value, flag: "send-lease-seconds", range: 5...3600)
        },
        Flag(name: "database-connections", valueName: "N", help: "PostgreSQL connections this instance may open (default: 4 per --threads, at least 4)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.postgresConnections = try integer(value, flag: "database-connections", range: 1...512)
        },
        Flag(name: "database-timeout", valueName: "SECONDS", help: "How long a PostgreSQL statement may wait for the server before the request answers 503 and /healthz says so (default 5)", commands: ["serve", "migrate", "admin", "relay"]) { config, value throws(CommandLineError) in
            config.databaseTimeoutSeconds = try integer(value, flag: "database-timeout", range: 1...600)
        },
        Flag(name: "sqlite-synchronous", valueName: "MODE", help: "normal (default) or full (survives power loss, slower writes)", commands: ["serve", "migrate", "admin"]) { config, value throws(CommandLineError) in
            guard let mode = SQLiteDatabase.Synchronous(rawValue: value.lowercased()) else {
                throw CommandLineError("--sqlite-synchronous must be normal or full, got \(value)")
            }
            config.sqliteSynchronous = mode
        },
        Flag(name: "threads", valueName: "N", help: "HTTP worker threads (default: the number of cores)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.threads = try integer(value, flag: "threads", range: 1...256)
        },
        Flag(name: "max-body-size", valueName: "BYTES", help: "Largest request body accepted, 413 above (default 1048576)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.maxBodyBytes = try integer(value, flag: "max-body-size", range: 1024...(64 << 20))
        },
        Flag(name: "max-header-size", valueName: "BYTES", help: "Memory for one request's line and headers (default 16384)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.maxHeaderBytes = try integer(value, flag: "max-header-size", range: 4096...(1 << 20))
        },
        Flag(name: "connection-timeout", valueName: "SECONDS", help: "Idle seconds before a connection is closed (default 30)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.connectionTimeoutSeconds = try integer(value, flag: "connection-timeout", range: 1...3600)
        },
        Flag(name: "max-connections", valueName: "N", help: "Simultaneous client connections (default 1024)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.maxConnections = try integer(value, flag: "max-connections", range: 1...100_000)
        },
        Flag(name: "header-timeout", valueName: "SECONDS", help: "Seconds a client has from the first byte of a request to the end of its headers (default 10)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.headerTimeoutSeconds = try integer(value, flag: "header-timeout", range: 1...600)
        },
        Flag(name: "min-body-rate", valueName: "BYTES", help: "Slowest average upload, in bytes per second, accepted after --header-timeout seconds (default 1024)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.minimumBodyBytesPerSecond = try integer(value, flag: "min-body-rate", range: 1...1_000_000_000)
        },
        Flag(name: "max-connections-per-client", valueName: "N", help: "Open connections one client address (IPv6: one /64) may hold, 0 disables (default 64)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.maxConnectionsPerClient = try integer(value, flag: "max-connections-per-client", range: 0...100_000)
        },
        Flag(name: "trusted-proxies", valueName: "CIDR,...", help: "Proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client; others' headers are ignored (default: none)", commands: ["serve"]) { config, value throws(CommandLineError) in
            do throws(TrustedProxies.ParseError) { config.trustedProxies = value.trimmingWhitespace().isEmpty ? nil : try TrustedProxies(value) } catch {
                throw CommandLineError("--trusted-proxies: \(error.description)")
            }
        },
        Flag(name: "client-ip-header", valueName: "NAME", help: "Read the client address from this header of a trusted proxy instead of X-Forwarded-For, e.g. CF-Connecting-IP", commands: ["serve"]) { config, value throws(CommandLineError) in
            guard !value.isEmpty, value.utf8.allSatisfy({ HeaderToken.isTokenByte($0) }) else {
                throw CommandLineError("--client-ip-header must be a header name, got '\(value)'")
            }
            config.clientIPHeader = value
        },
        Flag(name: "shutdown-timeout", valueName: "SECONDS", help: "Seconds running requests get to finish on SIGTERM/SIGINT (default 10)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.shutdownTimeoutSeconds = try integer(value, flag: "shutdown-timeout", range: 0...600)
        },
        Flag(name: "locales", valueName: "LIST", help: "Comma-separated languages alert pushes are translated into (default: a list of 23)", commands: ["serve", "admin"]) { config, value throws(CommandLineError) in
            let languages = value.split(separator: ",").compactMap { String($0).presence }
            config.locales = LocaleCatalog(languages)
        },
        Flag(name: "oba-api-key", valueName: "KEY", help: "OneBusAway REST API key sent to every region's server (prefer --oba-api-key-file)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.obaAPIKey = value.presence
        },
        Flag(name: "oba-region-api-keys", valueName: "ID=KEY,...", help: "Per-region OneBusAway API keys, e.g. 1=KEY1,3=KEY3, overriding --oba-api-key (prefer --oba-region-api-keys-file)", commands: ["serve"]) { config, value throws(CommandLineError) in
            var keys: [Int: String] = [:]
            for pair in value.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingWhitespace() }
                guard parts.count == 2, let id = Int(parts[0]), id >= 0, !parts[1].isEmpty else {
                    throw CommandLineError("--oba-region-api-keys wants ID=KEY pairs separated by commas, got '\(pair)'")
                }
                keys[id] = parts[1]
            }
            config.obaRegionAPIKeys = keys
        },
        Flag(name: "alarm-check-interval", valueName: "SECONDS", help: "Seconds between alarm checks (default 60)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.alarmCheckIntervalSeconds = try integer(value, flag: "alarm-check-interval", range: 1...3600)
        },
        Flag(name: "live-activity-interval", valueName: "SECONDS", help: "Seconds between Live Activity updates (default 60)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.liveActivityIntervalSeconds = try integer(value, flag: "live-activity-interval", range: 1...3600)
        },
        Flag(name: "push-transport", valueName: "NAME", help: "auto (gorush with --gorush-url, else direct with an APNs key or FCM account, else none), gorush, direct, relay, log or none", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            guard let choice = SidecarConfiguration.PushTransportChoice(rawValue: value.lowercased()) else {
                throw CommandLineError("--push-transport must be auto, gorush, direct, relay, log or none, got \(value)")
            }
            config.pushTransport = choice
        },
        Flag(name: "relay-url", valueName: "URL", help: "The signed push relay --push-transport relay sends through, e.g. https://relay.example.org", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.relayURL = try httpURL(value, flag: "relay-url")
        },
        Flag(name: "relay-key-file", valueName: "PATH", help: "This server's P-256 key for the relay, created with mode 0600 when missing (default sidecar-relay-key.pem)", commands: ["serve", "alert send", "push test", "relay-key"]) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--relay-key-file needs a path") }
            config.relayKeyFile = value
        },
        Flag(name: "relay-allowed-servers", valueName: "FILE", help: "Serve only these serverIds (one a line, from 'sidecar relay-key show'); default: any server", commands: ["relay"]) { config, value throws(CommandLineError) in
            config.relayAllowedServersFile = value
        },
        Flag(name: "relay-send-limit", valueName: "N", help: "Sends per minute per server (default 6000; 0 disables)", commands: ["relay"]) { config, value throws(CommandLineError) in
            config.relaySendLimit = try integer(value, flag: "relay-send-limit", range: 0...10_000_000)
        },
        Flag(name: "relay-client-limit", valueName: "N", help: "Requests per minute per client address (default 12000; 0 disables)", commands: ["relay"]) { config, value throws(CommandLineError) in
            config.relayClientLimit = try integer(value, flag: "relay-client-limit", range: 0...10_000_000)
        },
        Flag(name: "relay-max-bindings-per-server", valueName: "N", help: "Token bindings kept for one server key; a new one past it is refused with binding_limit (default 2000000; 0 disables)", commands: ["relay"]) { config, value throws(CommandLineError) in
            config.relayMaxBindingsPerServer = try integer(value, flag: "relay-max-bindings-per-server", range: 0...1_000_000_000)
        },
        Flag(name: "relay-max-bindings-per-client", valueName: "N", help: "Token bindings kept for one client address, whatever keys it uses (default 2000000; 0 disables)", commands: ["relay"]) { config, value throws(CommandLineError) in
            config.relayMaxBindingsPerClient = try integer(value, flag: "relay-max-bindings-per-client", range: 0...1_000_000_000)
        },
        Flag(name: "gorush-url", valueName: "URL", help: "Base URL of a gorush push gateway, e.g. http://127.0.0.1:8088", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.gorushURL = try httpURL(value, flag: "gorush-url")
        },
        Flag(name: "survey-response-limit", valueName: "N", help: "Survey-response writes per minute per client address, 0 disables (default 60)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.surveyResponseLimit = try integer(value, flag: "survey-response-limit", range: 0...1_000_000)
        },
        Flag(name: "ghost-bus-ip-limit", valueName: "N", help: "Ghost-bus reports per hour per client address, 0 disables (default 10)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.ghostBusPeerLimit = try integer(value, flag: "ghost-bus-ip-limit", range: 0...1_000_000)
        },
        Flag(name: "ghost-bus-user-limit", valueName: "N", help: "Ghost-bus reports per day per user_identifier, 0 disables (default 20)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.ghostBusUserLimit = try integer(value, flag: "ghost-bus-user-limit", range: 0...1_000_000)
        },
        Flag(name: "donation-limit", valueName: "N", help: "Donation requests per minute per client address, 0 disables (default 10)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.donationLimit = try integer(value, flag: "donation-limit", range: 0...1_000_000)
        },
        Flag(name: "stripe-secret-key", valueName: "KEY", help: "Stripe secret key for donations; without one, donations answer 404 (prefer --stripe-secret-key-file)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.stripeSecretKey = value.presence
        },
        Flag(name: "stripe-test-secret-key", valueName: "KEY", help: "Stripe test-mode secret key, used when an app sends test_mode \"1\" (prefer --stripe-test-secret-key-file)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.stripeTestSecretKey = value.presence
        },
        Flag(name: "stripe-url", valueName: "URL", help: "Stripe API base URL (default https://api.stripe.com)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.stripeURL = try httpURL(value, flag: "stripe-url")
        },
        Flag(name: "stripe-product", valueName: "ID", help: "Stripe product for monthly donations (default: created on first use)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.stripeProduct = value.presence
        },
        Flag(name: "apns-key-file", valueName: "PATH", help: "APNs auth key (.p8) for direct delivery", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.apnsKeyFile = value.presence
        },
        Flag(name: "apns-key-id", valueName: "ID", help: "The .p8 key's id (10 characters)", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.apnsKeyID = value.presence
        },
        Flag(name: "apns-team-id", valueName: "ID", help: "The Apple developer team id", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.apnsTeamID = value.presence
        },
        Flag(name: "apns-url", valueName: "URL", help: "APNs production base URL (default https://api.push.apple.com)", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.apnsURL = try httpURL(value, flag: "apns-url")
        },
        Flag(name: "apns-sandbox-url", valueName: "URL", help: "APNs sandbox base URL (default https://api.sandbox.push.apple.com)", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.apnsSandboxURL = try httpURL(value, flag: "apns-sandbox-url")
        },
        Flag(name: "apns-ca-file", valueName: "PATH", help: "CA bundle to trust for APNs instead of the system's (testing)", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.apnsCAFile = value.presence
        },
        Flag(name: "fcm-service-account", valueName: "PATH", help: "Firebase service-account JSON for direct FCM delivery", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.fcmServiceAccount = value.presence
        },
        Flag(name: "fcm-url", valueName: "URL", help: "FCM base URL (default https://fcm.googleapis.com)", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            config.fcmURL = try httpURL(value, flag: "fcm-url")
        },
        Flag(name: "gorush-webhook-secret", valueName: "SECRET", help: "Bearer secret gorush's feedback hook sends to /webhooks/gorush; without it the route does not exist (prefer --gorush-webhook-secret-file)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.gorushWebhookSecret = value.presence
        },
        Flag(name: "pirate-weather-key", valueName: "KEY", help: "Pirate Weather API key; without it, weather answers 403 (prefer --pirate-weather-key-file)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.pirateWeatherKey = value.presence
        },
        Flag(name: "pirate-weather-url", valueName: "URL", help: "Pirate Weather base URL (default https://api.pirateweather.net)", commands: ["serve"]) { config, value throws(CommandLineError) in
            config.pirateWeatherURL = try httpURL(value, flag: "pirate-weather-url")
        },
        Flag(name: "apns-topic", valueName: "BUNDLE_ID", help: "The iOS app's bundle id, the APNs topic (default org.onebusaway.iphone)", commands: ["serve", "alert send", "push test"]) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--apns-topic must not be empty") }
            config.apnsTopic = value
        },
    ]

    /// Flags that are switches: `--demo` alone means true.
    static let booleanFlags: Set<String> = ["demo", "universal-link-stops"]

    /// Parses arguments (without the program name) and the environment.
    /// An error points at the help of the command it concerns.
    public static func parse(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        guard let first = arguments.first else { return .help(usage) }
        var command = first
        var rest = Array(arguments.dropFirst())
        switch first {
        case "--help", "-h", "help": return .help(usage)
        case "--version", "-V", "version": return .version
        case "copy-database", "backup", "healthcheck", "probe":
            do throws(CommandLineError) {
                switch first {
                case "copy-database": return try parseCopy(rest, environment: environment)
                case "backup": return try parseBackup(rest, environment: environment)
                case "healthcheck": return try parseHealthcheck(rest, environment: environment)
                default: return try parseProbe(rest)
                }
            } catch { throw error.pointing(at: first) }
        case "serve", "migrate", "doctor", "relay": break
        case "relay-key":
            guard let action = rest.first, ["show", "create"].contains(action) else {
                if let other = rest.first, !["--help", "-h"].contains(other) {
                    throw CommandLineError("unknown command 'relay-key \(other)'").pointing(at: "relay-key")
                }
                return .help(relayKeyUsage)
            }
            command = "relay-key"
            rest.removeFirst()
            return try parseRelayKey(action: action, rest, environment: environment)
        default:
            if OperatorCommands.named(first) != nil { break }
            guard OperatorCommands.groups.contains(first) else { throw CommandLineError("unknown command '\(first)'") }
            guard let sub = rest.first, !sub.hasPrefix("-") else { return .help(adminUsage(group: first)) }
            command = "\(first) \(sub)"
            rest.removeFirst()
            guard OperatorCommands.named(command) != nil else { throw CommandLineError("unknown command '\(command)'").pointing(at: first) }
        }
        do throws(CommandLineError) {
            return try parseCommand(command, rest, environment: environment)
        } catch {
            throw error.pointing(at: command)
        }
    }

    /// The flags of `serve`, `migrate`, `doctor`, `relay` and every operator command.
    static func parseCommand(_ command: String, _ rest: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        let admin = OperatorCommands.named(command)
        // doctor takes exactly serve's flags, so an operator can prefix the
        // command line they run.
        let flagCommand = command == "doctor" ? "serve" : command
        let available = admin.map(operatorFlags) ?? flags(for: flagCommand)
        var configuration = SidecarConfiguration()
        // The relay keeps its own database: never the sidecar's default file.
        if command == "relay" { configuration.database = relayDefaultDatabase }
        for flag in available {
            let name = flag.environmentName(for: command)
            if let value = environment[name] {
                do { try flag.apply(&configuration, value) } catch {
                    throw CommandLineError("\(name): \(error.description)")
                }
            }
        }
        var options: [String: String] = [:]
        var positional: [String] = []
        var offline = false
        var index = 0
        while index < rest.count {
            let argument = rest[index]
            index += 1
            if argument == "--help" || argument == "-h" {
                if command == "doctor" { return .help(doctorUsage) }
                if let admin { return .help(operatorUsage(admin)) }
                return .help(commandUsage(command))
            }
            if command == "doctor" && argument == "--offline" {
                offline = true
                continue
            }
            guard argument.hasPrefix("--") else {
                guard let admin, admin.id != nil, positional.isEmpty else { throw CommandLineError("unexpected argument '\(argument)'") }
                positional.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            let flag = available.first { $0.name == name }
            let option = admin?.option(name)
            guard flag != nil || option != nil else { throw CommandLineError("unknown flag --\(name) for '\(command)'") }
            if value == nil && (option.map { $0.value == nil } == true || flag.map { booleanFlags.contains($0.name) } == true) {
                // A switch alone means true; `--switch false` states its value.
                if index < rest.count, BooleanParameter.read(rest[index]) != nil, !rest[index].hasPrefix("-") {
                    value = rest[index]
                    index += 1
                } else {
                    value = "true"
                }
            } else if value == nil {
                guard index < rest.count else {
                    throw CommandLineError("--\(name) needs a value (\(option?.value ?? flag?.valueName ?? "VALUE"))")
                }
                value = rest[index]
                index += 1
            }
            if let flag { try flag.apply(&configuration, value ?? "") } else if let option {
                let key = String(name.map { $0 == "-" ? "_" : $0 })
                if let earlier = options[key] {
                    guard option.repeatable else { throw CommandLineError("--\(name) is given twice") }
                    options[key] = earlier + "," + (value ?? "")
                } else {
                    options[key] = value ?? ""
                }
            }
        }
        if let admin {
            if let id = admin.id, positional.isEmpty { throw CommandLineError("'\(command)' needs its \(id), e.g. sidecar \(command) 12") }
            let missing = admin.options.filter { $0.required && options[String($0.name.map { $0 == "-" ? "_" : $0 })]?.isEmpty != false }
            guard missing.isEmpty else {
                throw CommandLineError("'\(command)' needs " + missing.map { "--\($0.name) \($0.value ?? "")" }.joined(separator: " and "))
            }
            return .admin(AdminInvocation(command: command, positional: positional, options: options, configuration: configuration))
        }
        let serving = command == "serve" || command == "doctor"
        if serving, configuration.clientIPHeader != nil, configuration.trustedProxies == nil {
            throw CommandLineError("--client-ip-header needs --trusted-proxies (only a trusted proxy's header is believed)")
        }
        if serving, configuration.pushTransport == .gorush, configuration.gorushURL == nil {
            throw CommandLineError("--push-transport gorush needs --gorush-url")
        }
        if command == "doctor" { return .doctor(configuration, offline: offline) }
        if command == "relay" { return .relay(configuration) }
        if serving, configuration.pushTransport == .relay, configuration.relayURL == nil {
            throw CommandLineError("--push-transport relay needs --relay-url")
        }
        return command == "serve" ? .serve(configuration) : .migrate(configuration)
    }

    /// `relay-key show` and `relay-key create`, with `--relay-key-file`.
    static func parseRelayKey(action: String, _ rest: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        do throws(CommandLineError) {
            let parsed = try SimpleArguments.parse(rest, command: "relay-key \(action)", options: ["--relay-key-file"])
            if parsed.wantsHelp { return .help(relayKeyUsage) }
            let path = parsed.values["--relay-key-file"] ?? environment["SIDECAR_RELAY_KEY_FILE"]?.presence ?? SidecarConfiguration().relayKeyFile
            return .relayKey(path: path, create: action == "create")
        } catch {
            throw error.pointing(at: "relay-key")
        }
    }

    static let backupUsage = """
        Usage: sidecar backup --to FILE [--replace] [--database PATH]

        Makes a consistent copy of a SQLite database while the server keeps running
        (SQLite's online backup API: writers are not blocked), checks it with
        PRAGMA integrity_check, and only then moves it to FILE. An existing FILE is
        refused unless --replace. To restore: stop the server, move the copy over the
        database file (remove any -wal and -shm files beside the old one), start it.
        A PostgreSQL database is backed up with pg_dump instead.
        """

    static func parseBackup(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        let parsed = try SimpleArguments.parse(arguments, command: "backup", options: ["--to", "--database"], switches: ["--replace"])
        if parsed.wantsHelp { return .help(backupUsage) }
        let database = parsed.values["--database"] ?? environment["SIDECAR_DATABASE"].flatMap { $0.isEmpty ? nil : $0 } ?? SidecarConfiguration().database
        let target = parsed.values["--to"]
        let replace = parsed.switches.contains("--replace")
        guard let target else { throw CommandLineError("backup needs --to FILE") }
        if PostgresLocation.matches(database) {
            throw CommandLineError("backup copies SQLite files; back up PostgreSQL with pg_dump (see the README)")
        }
        guard target != database else { throw CommandLineError("--to names the database itself") }
        return .backup(database: database, to: target, replace: replace)
    }

    static let healthcheckUsage = """
        Usage: sidecar healthcheck [--url URL] [--port PORT] [--host ADDRESS]

        Asks a running server's /healthz and exits 0 when it answers 200, 1 otherwise
        (printing why): a container HEALTHCHECK that needs no curl in the image. The
        URL defaults to http://127.0.0.1:PORT/healthz with --port or SIDECAR_PORT (8080).
        """

    static func parseHealthcheck(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        var configuration = SidecarConfiguration()
        for name in ["port", "host"] {
            guard let flag = flags.first(where: { $0.name == name }), let value = environment[flag.environmentName] else { continue }
            do { try flag.apply(&configuration, value) } catch { throw CommandLineError("\(flag.environmentName): \(error.description)") }
        }
        let parsed = try SimpleArguments.parse(arguments, command: "healthcheck", options: ["--url", "--port", "--host"])
        if parsed.wantsHelp { return .help(healthcheckUsage) }
        if let port = parsed.values["--port"] { configuration.port = try integer(port, flag: "port", range: 1...65535) }
        if let host = parsed.values["--host"] { configuration.host = host }
        if let text = parsed.values["--url"] { return .healthcheck(url: try httpURL(text, flag: "url")) }
        let host = ["0.0.0.0", "", "*"].contains(configuration.host) ? "127.0.0.1" : configuration.host == "::" ? "::1" : configuration.host
        return .healthcheck(url: "http://\(host.contains(":") ? "[\(host)]" : host):\(configuration.port)/healthz")
    }

    static let probeUsage = """
        Usage: sidecar probe URL --region N [--stop-id S --trip-id T --service-date MS [--stop-sequence K] [--vehicle-id V]] [--timeout SECONDS]

        Behaves like an app against a sidecar (this one, another implementation, a
        production host) and prints a pass/fail line per endpoint: push registration,
        Live Activity, alarm (with a real departure given), the alerts feed, surveys,
        weather and vehicles. Everything it creates it deletes. Exit status 1 when a
        check failed. Run it after every deployment.

          URL               the sidecar's base URL, e.g. https://sidecar.example.org
          --region N        the region to probe (its id in the regions directory)
          --stop-id, --trip-id, --service-date (epoch ms), --stop-sequence, --vehicle-id
                            a real departure, so an alarm can be created and deleted
          --timeout SECONDS how long each request may take (default 15)
        """

    static func parseProbe(_ arguments: [String]) throws(CommandLineError) -> SidecarCommand {
        let parsed = try SimpleArguments.parse(arguments, command: "probe", options: ["--region", "--stop-id", "--trip-id", "--service-date",
                                                                                   "--stop-sequence", "--vehicle-id", "--timeout"], positionals: 1)
        if parsed.wantsHelp { return .help(probeUsage) }
        let values = parsed.values
        let example = "e.g. sidecar probe https://sidecar.example.org --region 1"
        guard let text = parsed.positional.first else { throw CommandLineError("probe needs the sidecar's URL, \(example)") }
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), let url = URL(string: text), url.host != nil else {
            throw CommandLineError("probe needs an http(s) URL, \(example); got \(text)")
        }
        guard let regionText = values["--region"] else { throw CommandLineError("probe needs --region N") }
        var options = Probe.Options(baseURL: url, regionID: try integer(regionText, flag: "region", range: 0...1_000_000_000))
        options.stopID = values["--stop-id"]
        options.tripID = values["--trip-id"]
        options.vehicleID = values["--vehicle-id"]
        if let date = values["--service-date"] { options.serviceDate = Int64(try integer(date, flag: "service-date", range: 0...Int.max)) }
        if let sequence = values["--stop-sequence"] { options.stopSequence = try integer(sequence, flag: "stop-sequence", range: 0...100_000) }
        if let timeout = values["--timeout"] { options.timeout = TimeInterval(try integer(timeout, flag: "timeout", range: 1...600)) }
        return .probe(options)
    }

    static let doctorUsage = """
        Usage: sidecar doctor [serve's flags] [--offline]

        Checks what 'sidecar serve' would run with the same flags and environment: the
        configuration, the database and its migrations, the regions directory, each
        region's OneBusAway server with its API key, APNs credentials (signs a provider
        token and opens a connection), FCM credentials (a token exchange), gorush, the
        Pirate Weather key and free disk space. One line per check, with a fix for each
        failure; exit status 1 when anything failed. --offline skips every check that
        needs the network.
        """

    static let copyUsage = """
        Usage: sidecar copy-database --from PATH|URL --to PATH|URL [--replace]

        Copies every row of a sidecar database to another: registrations, alarms, Live
        Activities, alerts with their translations and sends, surveys with questions and
        responses, ghost-bus reports and API keys, keeping their ids, then checks that each
        table holds as many rows on both sides. Each side is a SQLite file or a postgres://
        URL; both are migrated first. This is how an install moves from one machine to
        several instances on PostgreSQL:

          sidecar copy-database --from sidecar.sqlite3 --to postgres://sidecar:PASSWORD@db.example.org/sidecar

        Stop the server first (rows written meanwhile would not be copied). A target that
        already holds data is refused; --replace empties it first.
        """

    static func parseCopy(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        var from: String?
        var to: String?
        var replace = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--help", "-h": return .help(copyUsage)
            case "--replace": replace = true
            case "--from", "--to":
                guard index < arguments.count, !arguments[index].isEmpty else { throw CommandLineError("\(argument) needs a value (PATH|URL)") }
                if argument == "--from" { from = arguments[index] } else { to = arguments[index] }
                index += 1
            default: throw CommandLineError("unknown argument '\(argument)' for 'copy-database'")
            }
        }
        guard let from, let to else { throw CommandLineError("copy-database needs --from and --to") }
        guard from != to else { throw CommandLineError("--from and --to name the same database") }
        var configuration = SidecarConfiguration()
        configuration.logLevel = .warning
        _ = environment
        return .copyDatabase(from: from, to: to, replace: replace, configuration: configuration)
    }

    /// Help for a group of operator commands (`sidecar alert --help`): each
    /// command with its required options and what it does.
    public static func adminUsage(group: String) -> String {
        if let command = OperatorCommands.named(group) { return operatorUsage(command) }
        var text = "Usage: sidecar \(group) <command> [options]\n\nCommands:\n"
        for command in OperatorCommands.all where command.name.hasPrefix(group + " ") {
            let required = command.options.filter(\.required).map(\.synopsis)
            let more = command.options.contains { !$0.required } ? ["[options]"] : []
            let line = (["sidecar", command.name] + (command.id.map { [$0] } ?? []) + required + more).joined(separator: " ")
            text += "  \(line)\n      \(command.summary)\n"
        }
        return text + "\nA command's options and the flags it shares with serve (--database, ...): sidecar \(group) <command> --help\n"
    }

    /// Help for one operator command: every option, required ones marked,
    /// then the flags it shares with `serve` and their environment variables.
    static func operatorUsage(_ command: OperatorCommand) -> String {
        var text = "Usage: \(command.synopsis)\n\n\(command.summary).\n"
        if !command.options.isEmpty {
            text += "\nOptions:\n"
            for option in command.options {
                let marks = (option.required ? ["required"] : []) + (option.repeatable ? ["repeatable"] : [])
                text += "  --\(option.name)\(option.value.map { " " + $0 } ?? "")\(marks.isEmpty ? "" : "   (" + marks.joined(separator: ", ") + ")")\n"
                text += "      \(option.help)\n"
            }
        }
        if !command.notes.isEmpty { text += "\n\(command.notes)\n" }
        if command.access != .none {
            text += "\nIt says which database it used on standard error; "
                + (command.access == .reads ? "it never creates one.\n" : "a new SQLite file is announced.\n")
        }
        return text + "\nShared flags:\n" + flagList(operatorFlags(command), command: command.name)
    }

    /// The `serve` flags an operator command takes: storage and logging for
    /// all, push credentials for those that push.
    static func operatorFlags(_ command: OperatorCommand) -> [Flag] {
        // A command without a database has no use for its flags; a test
        // push needs neither regions nor translations.
        var unused: Set<String> = command.access == .none ? ["database", "database-timeout", "sqlite-synchronous", "locales"] : []
        if command.name == "push test" { unused.insert("regions") }
        return flags.filter { flag in
            if flag.commands.contains(command.name) { return true }
            return flag.commands.contains("admin") && !unused.contains(flag.name)
        }
    }

    /// An http(s) URL with a host, for the flags that name an upstream or
    /// the server's own public base.
    static func httpURL(_ text: String, flag: String) throws(CommandLineError) -> String {
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), URL(string: text)?.host != nil else {
            throw CommandLineError("--\(flag) must be an http(s) URL, got \(text)")
        }
        return text
    }

    static func integer(_ text: String, flag: String, range: ClosedRange<Int>) throws(CommandLineError) -> Int {
        guard let value = Int(text.trimmingWhitespace()), range.contains(value) else {
            throw CommandLineError("--\(flag) must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// Top-level help: every command.
    public static var usage: String {
        """
        sidecar \(version): the OneBusAway sidecar server (alarms, alerts, push registrations, ...)

        Usage:
          sidecar serve [flags]       Migrate the database and serve the rider API and console
          sidecar migrate [flags]     Apply database migrations and exit
          sidecar doctor [flags]      Check a configuration and everything it reaches (serve's flags)
          sidecar probe URL --region N
                                      Check a sidecar as an app would, endpoint by endpoint
          sidecar healthcheck         Exit 0 when a running server's /healthz answers 200
          sidecar region ...          List regions; set a region's agency id and time zone
          sidecar alert ...           Author, publish, translate and push service alerts
          sidecar push test --platform ios|android --token TOKEN
                                      Send one test notification and print the provider's answer
          sidecar apikey ...          Create, list and revoke admin API keys
          sidecar user ...            Create, list and delete console accounts; set passwords
          sidecar study ...           Create and list studies
          sidecar survey ...          Author surveys from JSON documents; export responses as CSV
          sidecar ghostbus export --region N
                                      Export ghost-bus reports as CSV
          sidecar links add-region    Print a region's onebusaway://add-region link and its QR code
          sidecar export --region N   Write a region as a sidecar-export/1 document (to or from OBACloud)
          sidecar import --file PATH  Read a sidecar-export/1 document (idempotent; --dry-run counts)
          sidecar backup --to FILE    Copy a live SQLite database consistently
          sidecar copy-database --from PATH|URL --to PATH|URL
                                      Copy every row to another database (SQLite to PostgreSQL)
          sidecar relay [flags]       Run the signed push relay (for the holder of the apps' push keys)
          sidecar relay-key show|create
                                      Print (or first create) this server's relay identity
          sidecar --help              This help; 'sidecar COMMAND --help' explains a command
          sidecar --version           Print the version

        Every flag can also be set as an environment variable SIDECAR_<FLAG_IN_UPPER_SNAKE>,
        e.g. --push-registration-limit as SIDECAR_PUSH_REGISTRATION_LIMIT (the relay's
        as SIDECAR_RELAY_<FLAG>). Flags win.
        """
    }

    /// Help for one command, listing its flags and their environment variables.
    /// `relay` takes serve's listener, storage, logging and push-credential
    /// flags, and its own.
    static let relaySharedFlags: Set<String> = [
        "host", "port", "database", "database-connections", "sqlite-synchronous", "log-level", "log-format", "threads", "max-body-size",
        "max-header-size", "connection-timeout", "max-connections", "max-connections-per-client", "header-timeout", "min-body-rate",
        "trusted-proxies", "client-ip-header", "shutdown-timeout", "apns-key-file", "apns-key-id", "apns-team-id", "apns-url",
        "apns-sandbox-url", "apns-ca-file", "apns-topic", "fcm-service-account", "fcm-url",
    ]

    /// The flags a command takes.
    static func flags(for command: String) -> [Flag] {
        flags.filter { $0.commands.contains(command) || (command == "relay" && relaySharedFlags.contains($0.name) && $0.commands.contains("serve")) }
    }

    static let relayKeyUsage = """
        Usage: sidecar relay-key show [--relay-key-file PATH]
               sidecar relay-key create [--relay-key-file PATH]

        show prints this server's serverId and public key (a JWK) for the operator of
        the push relay it sends through (their --relay-allowed-servers list); it never
        creates a key. create writes a new key (mode 0600) and refuses to replace one.
        'sidecar serve --push-transport relay' also creates it at its first start. The
        file is --relay-key-file or SIDECAR_RELAY_KEY_FILE (default sidecar-relay-key.pem);
        keep it private: whoever holds it pushes as this server.
        """

    /// The relay's database when none is given: never a sidecar's file.
    static let relayDefaultDatabase = "sidecar-relay.sqlite3"

    static let relayIntro = """

        Runs the signed push relay (docs/relay.md): the holder of the apps' APNs key and
        FCM project delivers for every sidecar that signs its requests, and only to the
        tokens each one bound. It needs --apns-key-file/--apns-key-id/--apns-team-id
        and/or --fcm-service-account. It keeps its own database (default
        \(relayDefaultDatabase)) and refuses a sidecar's. Its environment variables
        start with SIDECAR_RELAY_, so a sidecar's environment file never configures it.

        """

    /// The flags production sets, which `serve --help` lists first.
    static let productionFlags = [
        "database", "public-url", "regions", "oba-api-key-file", "push-transport", "apns-key-file", "apns-key-id", "apns-team-id",
        "fcm-service-account", "gorush-url", "relay-url", "apple-app-ids", "android-app-links", "trusted-proxies", "metrics-listen",
    ]

    /// Help for `serve`, `migrate` and `relay`: their flags and environment
    /// variables, production's first for `serve`.
    public static func commandUsage(_ command: String) -> String {
        let available = flags(for: command)
        guard command == "serve" else {
            return "Usage: sidecar \(command) [flags]\n" + (command == "relay" ? relayIntro : "") + "\nFlags:\n"
                + flagList(available, command: command)
        }
        let production = productionFlags.compactMap { name in available.first { $0.name == name } }
        let others = available.filter { !productionFlags.contains($0.name) }
        return """
            Usage: sidecar serve [flags]

            Serves the rider API, the alerts feed, the console (/admin) and the background
            work. Without flags it runs on sidecar.sqlite3 with the bundled sample regions;
            'sidecar serve --demo' adds a simulated region to try everything. 'sidecar doctor'
            with the same flags checks a configuration before you start it.

            What production sets (see the README's production checklist):

            """ + "\n" + flagList(production, command: command) + "\nEvery other flag:\n\n" + flagList(others, command: command)
            + "\nA switch (--demo) takes no value; --demo false turns it off.\n"
    }

    /// Flags as help lists them: name and value, what it does, its variable.
    static func flagList(_ flags: [Flag], command: String) -> String {
        flags.map { flag in
            var help = flag.help
            if command == "relay" && flag.name == "database" {
                help = "The relay's SQLite file, created if missing (default \(relayDefaultDatabase)), or a postgres:// URL; a sidecar's database is refused"
            } else if flag.name == "database", let operatorCommand = OperatorCommands.named(command) {
                help = "The server's database: a SQLite file (default sidecar.sqlite3 in the current directory) or a postgres:// URL"
                    + (operatorCommand.access == .reads ? "; never created by this command" : "")
            }
            return "  --\(flag.name)\(flag.valueName.isEmpty ? "" : " " + flag.valueName)\n      \(help)\n      env: \(flag.environmentName(for: command))\n"
        }.joined()
    }
}

/// The arguments of a command with a fixed set of options (`backup`,
/// `healthcheck`, `probe`): `--name value`, `--name=value`, switches, and
/// positional values, read in one place.
struct SimpleArguments {
    var values: [String: String] = [:]
    var switches: Set<String> = []
    var positional: [String] = []
    var wantsHelp = false

    static func parse(_ arguments: [String], command: String, options: Set<String>, switches: Set<String> = [],
                      positionals: Int = 0) throws(CommandLineError) -> SimpleArguments {
        var parsed = SimpleArguments()
        var index = 0
        while index < arguments.count {
            var argument = arguments[index]
            index += 1
            if argument == "--help" || argument == "-h" {
                parsed.wantsHelp = true
                return parsed
            }
            guard argument.hasPrefix("--") else {
                guard parsed.positional.count < positionals else { throw CommandLineError("unexpected argument '\(argument)'") }
                parsed.positional.append(argument)
                continue
            }
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                value = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            if switches.contains(argument) {
                parsed.switches.insert(argument)
                continue
            }
            guard options.contains(argument) else { throw CommandLineError("unknown argument '\(argument)' for '\(command)'") }
            if value == nil {
                guard index < arguments.count else { throw CommandLineError("\(argument) needs a value") }
                value = arguments[index]
                index += 1
            }
            guard let value, !value.isEmpty else { throw CommandLineError("\(argument) needs a value") }
            parsed.values[argument] = value
        }
        return parsed
    }
}
