import Database
import FoundationEssentials
import HTTPServer

/// The flags of where and how the server listens, stores and logs, and
/// which regions, languages and app links it serves.
enum ServerFlags {
    /// Listening, connections and shutdown.
    static let listenerFlags: [Flag] = [
        Flag(name: "host", valueName: "ADDRESS", help: "Address to listen on", shown: { $0.server.host }, commands: ["serve"]) {
            config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--host must not be empty") }
            config.server.host = value
        },
        Flag(name: "port", valueName: "PORT", help: "TCP port to listen on, 0 for any free port", shown: { "\($0.server.port)" }, commands: ["serve"])
        {
            config, value throws(CommandLineError) in
            config.server.port = try Flag.integer(value, flag: "port", range: 0...65535)
        },
        Flag(
            name: "public-url", valueName: "URL", help: "Base of URLs handed to apps, e.g. https://sidecar.example.org",
            shown: { $0.effectivePublicURL() }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.publicURL = try Flag.httpURL(value, flag: "public-url")
        },
        Flag(
            name: "threads", valueName: "N", help: "HTTP worker threads", shown: { "the number of cores: \($0.server.threads) here" },
            commands: ["serve"]
        ) {
            config, value throws(CommandLineError) in
            config.server.threads = try Flag.integer(value, flag: "threads", range: 1...256)
        },
        Flag(
            name: "max-body-size", valueName: "BYTES", help: "Largest request body accepted, 413 above", shown: { "\($0.server.defaultBodyLimit)" },
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.defaultBodyLimit = try Flag.integer(value, flag: "max-body-size", range: 1024...(64 << 20))
        },
        Flag(
            name: "max-header-size", valueName: "BYTES", help: "Memory for one request's line and headers",
            shown: { "\($0.server.headerLimitBytes)" },
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.headerLimitBytes = try Flag.integer(value, flag: "max-header-size", range: 4096...(1 << 20))
        },
        Flag(
            name: "connection-timeout", valueName: "SECONDS", help: "Idle seconds before a connection is closed",
            shown: { "\($0.server.connectionTimeoutSeconds)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.connectionTimeoutSeconds = try Flag.integer(value, flag: "connection-timeout", range: 1...3600)
        },
        Flag(
            name: "max-connections", valueName: "N", help: "Simultaneous client connections", shown: { "\($0.server.connectionLimit)" },
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.connectionLimit = try Flag.integer(value, flag: "max-connections", range: 1...100_000)
        },
        Flag(
            name: "header-timeout", valueName: "SECONDS", help: "Seconds a client has from the first byte of a request to the end of its headers",
            shown: { "\($0.server.headerTimeoutSeconds)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.headerTimeoutSeconds = try Flag.integer(value, flag: "header-timeout", range: 1...600)
        },
        Flag(
            name: "min-body-rate", valueName: "BYTES", help: "Slowest average upload, in bytes per second, accepted after --header-timeout seconds",
            shown: { "\($0.server.minimumBodyBytesPerSecond)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.minimumBodyBytesPerSecond = try Flag.integer(value, flag: "min-body-rate", range: 1...1_000_000_000)
        },
        Flag(
            name: "max-connections-per-client", valueName: "N", help: "Open connections one client address (IPv6: one /64) may hold, 0 disables",
            shown: { "\($0.server.connectionsPerClient)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.server.connectionsPerClient = try Flag.integer(value, flag: "max-connections-per-client", range: 0...100_000)
        },
        Flag(
            name: "trusted-proxies", valueName: "CIDR,...",
            help: "Proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client; others' headers are ignored",
            shown: { $0.trustedProxies == nil ? "none" : nil }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            do throws(TrustedProxies.ParseError) {
                config.trustedProxies = value.trimmingWhitespace().isEmpty ? nil : try TrustedProxies(value)
            } catch {
                throw CommandLineError("--trusted-proxies: \(error.description)")
            }
        },
        Flag(
            name: "client-ip-header", valueName: "NAME",
            help: "Read the client address from this header of a trusted proxy instead of X-Forwarded-For, e.g. CF-Connecting-IP", commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            guard !value.isEmpty, value.utf8.allSatisfy({ HeaderToken.isTokenByte($0) }) else {
                throw CommandLineError("--client-ip-header must be a header name, got '\(value)'")
            }
            config.clientIPHeader = value
        },
        Flag(
            name: "shutdown-timeout", valueName: "SECONDS", help: "Seconds running requests get to finish on SIGTERM/SIGINT",
            shown: { "\($0.shutdownTimeoutSeconds)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.shutdownTimeoutSeconds = try Flag.integer(value, flag: "shutdown-timeout", range: 0...600)
        },
        Flag(
            name: "metrics-listen", valueName: "HOST:PORT",
            help: "Serve Prometheus metrics at http://HOST:PORT/metrics on a listener of their own, e.g. 127.0.0.1:9464",
            shown: { $0.metricsListen.map { "\($0)" } ?? "off" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            guard let address = SidecarConfiguration.ListenAddress(value) else {
                throw CommandLineError("--metrics-listen must be HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464, got '\(value)'")
            }
            config.metricsListen = address
        },
    ]

    /// Storage and logging.
    static let storageFlags: [Flag] = [
        Flag(
            name: "database", valueName: "PATH",
            help: "SQLite database file, created if missing, or a postgres:// URL (several instances share one PostgreSQL)",
            shown: { DatabaseLocation.forHumans($0.database) },
            commands: ["serve", "migrate", "admin"]
        ) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--database must not be empty") }
            // A libpq connection string (host=... password=...) would be taken for a file name.
            let keywords = ["host=", "hostaddr=", "dbname=", "user=", "password=", "port="]
            if !PostgresLocation.matches(value), keywords.contains(where: { value.lowercased().contains($0) }) {
                throw CommandLineError(
                    "--database takes a SQLite file's path or a postgres:// URL, and '\(DatabaseLocation.forHumans(value))' looks like a libpq connection string: write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE"
                )
            }
            config.database = value
        },
        Flag(
            name: "database-connections", valueName: "N", help: "PostgreSQL connections this instance may open",
            shown: {
                $0.postgresConnections.map { "\($0)" }
                    ?? "2 per --threads, at least 4: \(SidecarConfiguration.defaultPostgresConnections(threads: $0.server.threads)) here"
            }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.postgresConnections = try Flag.integer(value, flag: "database-connections", range: 1...512)
        },
        Flag(
            name: "database-timeout", valueName: "SECONDS",
            help: "How long a PostgreSQL statement may wait for the server before the request answers 503 and /healthz says so",
            shown: { "\($0.databaseTimeoutSeconds)" }, commands: ["serve", "migrate", "admin", "relay"]
        ) { config, value throws(CommandLineError) in
            config.databaseTimeoutSeconds = try Flag.integer(value, flag: "database-timeout", range: 1...600)
        },
        Flag(
            name: "sqlite-synchronous", valueName: "MODE", help: "normal or full (survives power loss, slower writes)",
            shown: { $0.sqliteSynchronous.rawValue }, commands: ["serve", "migrate", "admin"]
        ) { config, value throws(CommandLineError) in
            guard let mode = SQLiteDatabase.Synchronous(rawValue: value.lowercased()) else {
                throw CommandLineError("--sqlite-synchronous must be normal or full, got \(value)")
            }
            config.sqliteSynchronous = mode
        },
        Flag(
            name: "log-level", valueName: "LEVEL", help: "debug, info, warning or error", shown: { "\($0.logLevel)" },
            commands: ["serve", "migrate", "admin"]
        ) { config, value throws(CommandLineError) in
            guard let level = LogLevel(name: value) else { throw CommandLineError("--log-level must be debug, info, warning or error, got \(value)") }
            config.logLevel = level
        },
        Flag(
            name: "log-format", valueName: "FORMAT", help: "text or json: one JSON object a line with time, level, message and the fields",
            shown: { $0.logFormat.rawValue }, commands: ["serve", "migrate", "admin"]
        ) { config, value throws(CommandLineError) in
            guard let format = LogFormat(rawValue: value.lowercased()) else {
                throw CommandLineError("--log-format must be text or json, got \(value)")
            }
            config.logFormat = format
        },
    ]

    /// Regions, languages, app links and the demo.
    static let contentFlags: [Flag] = [
        Flag(
            name: "regions", valueName: "PATH|URL", help: "regions-v3.json file or http(s) URL", shown: { $0.regions ?? "the bundled sample" },
            commands: ["serve", "admin"]
        ) { config, value throws(CommandLineError) in
            config.regions = value
        },
        Flag(
            name: "regions-refresh", valueName: "SECONDS", help: "How often a regions URL is re-read", shown: { "\($0.regionsRefreshSeconds)" },
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.regionsRefreshSeconds = try Flag.integer(value, flag: "regions-refresh", range: 10...604_800)
        },
        Flag(
            name: "locales", valueName: "LIST", help: "Comma-separated languages alert pushes are translated into",
            shown: { "\($0.locales.languages.count) languages: " + $0.locales.languages.joined(separator: ",") }, commands: ["serve", "admin"]
        ) { config, value throws(CommandLineError) in
            let languages = value.split(separator: ",").compactMap { String($0).presence }
            config.locales = LocaleCatalog(languages)
        },
        Flag(
            name: "source-proxy", valueName: "URL",
            help:
                "An HTTP proxy alert-source polls go through (each target name's addresses are checked before sending); without it polls use no proxy, whatever http_proxy and https_proxy say",
            shown: { $0.sourceProxy ?? "none" }, commands: ["serve", "admin"]
        ) { config, value throws(CommandLineError) in
            guard AlertInputRules.isWebLink(value) || value.lowercased().hasPrefix("socks5h://") else {
                throw CommandLineError("--source-proxy must be an http://, https:// or socks5h:// URL, got '\(value)'")
            }
            config.sourceProxy = value
        },
        Flag(
            name: "demo", valueName: "",
            help:
                "Add a demo region whose OneBusAway server this process simulates, with sample alerts and a survey; pushes go to the log unless a transport is set (see GET /demo)",
            shown: { $0.demo ? "on" : "off" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.demo = try Flag.switchValue("demo", value)
        },
        Flag(
            name: "apple-app-ids", valueName: "TEAMID.BUNDLE,...",
            help:
                "iOS apps whose Universal Links this host serves (GET /.well-known/apple-app-site-association), e.g. ABCDE12345.org.onebusaway.iphone",
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            guard let ids = LinkRules.parseAppleAppIDs(value) else {
                throw CommandLineError("--apple-app-ids must be TEAMID.bundle.id[,...] with a 10-character team id, got '\(value)'")
            }
            config.links.appleAppIDs = ids
        },
        Flag(
            name: "android-app-links", valueName: "PACKAGE:SHA256,...",
            help:
                "Android apps verified for this host's links (GET /.well-known/assetlinks.json): package:AA:BB:... (the signing certificate's SHA-256)",
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            guard let apps = LinkRules.parseAndroidAppLinks(value) else {
                throw CommandLineError(
                    "--android-app-links must be package.name:SHA256_FINGERPRINT[,...] with 32 colon-separated hex pairs, got '\(value)'")
            }
            config.links.androidApps = apps
        },
        Flag(
            name: "universal-link-stops", valueName: "",
            help:
                "Claim stop pages (/regions/*/stops/*) for the iOS app, which opens them from its builds of 2026-08-21 on (after 26.3.0); --universal-link-stops false leaves them to the web page for riders on older builds",
            shown: { $0.links.claimStopPages ? "true" : "false" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.links.claimStopPages = try Flag.switchValue("universal-link-stops", value)
        },
        Flag(
            name: "allow-http-links", valueName: "",
            help:
                "Let /regions/{id}/add hand out a link to an http:// public URL beyond loopback and 10.0.2.2 (a test rig: the apps refuse cleartext)",
            shown: { $0.links.allowHTTPLinks ? "true" : "false" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.links.allowHTTPLinks = try Flag.switchValue("allow-http-links", value)
        },
        Flag(name: "app-store-url", valueName: "URL", help: "The iOS app's App Store page, linked from share pages", commands: ["serve"]) {
            config, value throws(CommandLineError) in
            config.links.appStoreURL = try Flag.httpURL(value, flag: "app-store-url")
        },
        Flag(name: "play-store-url", valueName: "URL", help: "The Android app's Google Play page, linked from share pages", commands: ["serve"]) {
            config, value throws(CommandLineError) in
            config.links.playStoreURL = try Flag.httpURL(value, flag: "play-store-url")
        },
        Flag(
            name: "share-redirect-url", valueName: "TEMPLATE",
            help:
                "Send shared stop and trip links to your own trip planner instead of the share page, e.g. https://plan.example.org/stop?id={stop_id} (also {region_id}, {trip_id}, {service_date}, {stop_sequence})",
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            guard LinkRules.redirect(template: value, values: [:]) != nil else {
                throw CommandLineError(
                    "--share-redirect-url must be an http(s) URL template whose placeholders come after the host (a /, ? or # first), got '\(value)'")
            }
            config.links.redirectTemplate = value
        },
    ]
}
