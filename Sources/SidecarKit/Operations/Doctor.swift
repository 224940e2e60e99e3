import Core
import Database
import FoundationEssentials
import HTTPClient
import OBA
import Push

#if canImport(Glibc)
import Glibc
#endif

/// `sidecar doctor`: checks what `serve` would run with the same flags,
/// and everything it reaches, before riders find out. One line per check;
/// each failure says how to fix it.
enum Doctor {
    /// One finding.
    struct Check: Sendable, Equatable {
        enum Status: String, Sendable { case ok = "ok", warning = "warn", failed = "FAIL", skipped = "skip" }
        var status: Status
        var name: String
        var detail: String
        var fix: String?

        static func ok(_ name: String, _ detail: String) -> Check { Check(status: .ok, name: name, detail: detail) }
        static func warning(_ name: String, _ detail: String, fix: String? = nil) -> Check {
            Check(status: .warning, name: name, detail: detail, fix: fix)
        }
        static func failed(_ name: String, _ detail: String, fix: String) -> Check { Check(status: .failed, name: name, detail: detail, fix: fix) }
        static func skipped(_ name: String, _ detail: String) -> Check { Check(status: .skipped, name: name, detail: detail) }

        /// `  ok    database       sidecar.sqlite3: ...` and, for a problem, its fix below.
        var lines: [String] {
            let label = status.rawValue.padding(to: 5)
            var lines = ["  \(label) \(name.padding(to: 16)) \(detail)"]
            if let fix { lines.append("        fix: \(fix)") }
            return lines
        }
    }

    /// Seconds each network check may take.
    static let timeoutSeconds = 8

    /// Runs every check, printing each line as it is known; returns the exit
    /// status (1 when a check failed).
    static func run(
        _ configuration: SidecarConfiguration, offline: Bool, service: ServiceInvocation? = nil, output: @Sendable (String) -> Void = { print($0) }
    ) async -> Int32 {
        var client = HTTPClient.Configuration()
        client.timeoutSeconds = timeoutSeconds
        client.connectTimeoutSeconds = 4
        let http = HTTPClient(configuration: client)
        defer { http.shutdown() }
        output("sidecar doctor \(CommandLineInterface.version)\(offline ? " (offline: network checks skipped)" : "")")
        var checks: [Check] = []
        func report(_ found: [Check]) {
            for check in found { check.lines.forEach(output) }
            checks += found
        }
        report(configurationChecks(configuration))
        if let service, let unit = service.unit { report(serviceChecks(configuration, service: service, unit: unit)) }
        report(await databaseChecks(configuration, stateDirectories: service?.unit?.statePaths ?? []))
        let (regionCheck, regions) = await regionsCheck(configuration, offline: offline, http: http)
        report([regionCheck])
        report(await obaChecks(configuration, regions: regions, offline: offline, http: http))
        report(await agencyChecks(configuration, regions: regions, offline: offline, http: http))
        report(await pushChecks(configuration, offline: offline, http: http))
        report([await weatherCheck(configuration, offline: offline, http: http)])
        report([diskCheck(configuration)])
        let failed = checks.filter { $0.status == .failed }.count
        let warned = checks.filter { $0.status == .warning }.count
        output(
            failed == 0
                ? "all checks passed\(warned > 0 ? " (\(warned) warning\(warned == 1 ? "" : "s"))" : "")"
                : "\(failed) check\(failed == 1 ? "" : "s") failed")
        return failed == 0 ? 0 : 1
    }

    // MARK: Configuration

    static func configurationChecks(_ configuration: SidecarConfiguration) -> [Check] {
        var checks: [Check] = []
        let publicURL = configuration.effectivePublicURL()
        checks.append(
            .ok(
                "configuration",
                "serve listens on \(SidecarConfiguration.ListenAddress(host: configuration.server.host, port: configuration.server.port)), "
                    + "hands out URLs under \(publicURL)"))
        if configuration.publicURL == nil {
            checks.append(
                .warning(
                    "public url", "not set: alarm and Live Activity URLs name \(publicURL), which phones cannot reach",
                    fix: "--public-url https://sidecar.example.org (the address riders' phones use)"))
        } else if !publicURL.hasPrefix("https://") {
            checks.append(.warning("public url", "\(publicURL) is not HTTPS", fix: "put a TLS proxy in front (see deploy/nginx-sidecar.conf)"))
        }
        if let metrics = configuration.metricsListen, !["127.0.0.1", "::1", "localhost"].contains(metrics.host) {
            checks.append(
                .warning("metrics", "/metrics listens on \(metrics), beyond this machine", fix: "bind it to 127.0.0.1 or firewall the port"))
        }
        if configuration.trustedProxies == nil && configuration.publicURL?.hasPrefix("https://") == true {
            checks.append(
                .warning(
                    "client address", "no --trusted-proxies: behind a TLS proxy every rider shares the proxy's throttle budget",
                    fix: "--trusted-proxies 127.0.0.1 (the proxy's address)"))
        }
        return checks
    }

    // MARK: Database

    static func databaseChecks(_ configuration: SidecarConfiguration, stateDirectories: [String] = []) async -> [Check] {
        let name = "database"
        if !configuration.usesPostgreSQL && access(configuration.database, F_OK) != 0 {
            let directory = directoryOf(configuration.database)
            if access(directory, F_OK) != 0 {
                // A state directory systemd makes at the first start, or one
                // serve makes itself: a note, not a failure.
                if ServiceAccess.under(directory, stateDirectories) {
                    return [
                        .ok(
                            name,
                            "\(configuration.databaseName) does not exist yet; systemd creates \(directory) at the first start, serve the database in it"
                        )
                    ]
                }
                if let existing = nearestExisting(directory), ServiceAccess.facts(of: existing)?.isDirectory == true, access(existing, W_OK) == 0 {
                    return [.ok(name, "\(configuration.databaseName) does not exist yet; serve creates \(directory) and the database in it")]
                }
                return [
                    .failed(
                        name, "\(configuration.databaseName) does not exist and \(directory) cannot be created here",
                        fix: "create the directory or choose --database in a writable place")
                ]
            }
            guard access(directory, W_OK) == 0 else {
                return [
                    .failed(
                        name, "\(configuration.databaseName) does not exist and its directory \(directory) is not writable",
                        fix: "create the directory or choose --database in a writable place")
                ]
            }
            return [.ok(name, "\(configuration.databaseName) does not exist yet; serve creates it")]
        }
        let database: any Database
        do { database = try configuration.openDatabase(readers: 1) } catch {
            return [
                .failed(
                    name, error.description,
                    fix: configuration.usesPostgreSQL
                        ? "check the URL's host, port, user, password and database, and that PostgreSQL accepts this host (pg_hba.conf)"
                        : "check the file's permissions and that it is a sidecar database")
            ]
        }
        let checks = await schemaChecks(configuration, database: database, name: name)
        await database.close()
        return checks
    }

    /// The schema's version against this binary's, and the database's health.
    static func schemaChecks(_ configuration: SidecarConfiguration, database: any Database, name: String) async -> [Check] {
        let known = Migrations.all.map(\.version).max() ?? 0
        let place =
            configuration.databaseName
        do {
            let applied =
                try await database.read { connection in
                    try connection.queryOne("SELECT MAX(version) AS version FROM schema_migrations")?.optionalInt("version")
                } ?? 0
            var checks: [Check] = []
            if applied > known {
                checks.append(
                    .failed(
                        name, "\(place): schema \(applied) is newer than this sidecar knows (\(known))",
                        fix: "run the newer sidecar release that wrote it"))
            } else if applied < known {
                checks.append(
                    .warning(
                        name, "\(place): schema \(applied) of \(known); \(Int64(known) - applied) migration(s) pending",
                        fix: "sidecar migrate (serve also applies them at start)"))
            } else {
                checks.append(.ok(name, "\(place): schema \(applied), current"))
            }
            let problems = await database.healthProblems()
            if !problems.isEmpty {
                checks.append(.failed("database health", problems.map(\.detail).joined(separator: "; "), fix: "see Health in docs/operator-guide.md"))
            }
            return checks
        } catch {
            // No schema_migrations table: a database serve has not migrated yet.
            return [.warning(name, "\(place): no sidecar schema yet (\(error))", fix: "sidecar migrate (serve also applies it at start)")]
        }
    }

    // MARK: Regions and OneBusAway

    static func regionsCheck(_ configuration: SidecarConfiguration, offline: Bool, http: HTTPClient) async -> (Check, [Region]) {
        let source = RegionSource(argument: configuration.regions)
        if offline, let url = configuration.regions, url.hasPrefix("http") {
            return (.skipped("regions", "\(source.label) is fetched over the network"), [])
        }
        do {
            let regions = try await source.load(client: http)
            if source == .bundledSample {
                return (
                    .warning(
                        "regions",
                        "the bundled sample regions are in use (\(regions.prefix(3).map(\.name).joined(separator: ", "))\(regions.count > 3 ? ", ..." : "")), "
                            + "not your agency's", fix: "--regions PATH|URL of your regions-v3.json (SIDECAR_REGIONS)"), regions
                )
            }
            return (
                .ok(
                    "regions",
                    "\(source.label): \(regions.count) region\(regions.count == 1 ? "" : "s") (\(regions.prefix(4).map { "\($0.id) \($0.name)" }.joined(separator: ", "))\(regions.count > 4 ? ", ..." : ""))"
                ), regions
            )
        } catch {
            return (.failed("regions", "\(source.label): \(error.description)", fix: "--regions PATH|URL of a regions-v3.json"), [])
        }
    }

    /// One cheap call per region (`current-time`) with the key serve would use.
    static func obaChecks(_ configuration: SidecarConfiguration, regions: [Region], offline: Bool, http: HTTPClient) async -> [Check] {
        let withServers = regions.compactMap { region in region.obaBaseURL.flatMap { $0.isEmpty ? nil : (region, $0) } }
        guard !withServers.isEmpty else { return [] }
        if offline { return [.skipped("onebusaway", "\(withServers.count) server(s) not contacted")] }
        return await boundedMap(withServers, limit: 8) { (region: Region, base: String) -> Check in
            let name = "oba region \(region.id)"
            guard let key = configuration.obaRegionAPIKeys[region.id] ?? configuration.obaAPIKey else {
                return .failed(name, "\(region.name): no OneBusAway API key", fix: "--oba-api-key-file PATH (or --oba-region-api-keys-file)")
            }
            let url = OBAClient.url(baseURL: base, method: "current-time", id: "", apiKey: key, query: [])
            let shown = base
            do {
                let response = try await http.send(HTTPClientRequest(url: url, upstream: "oba"))
                if response.status == 401 || response.status == 403 || Self.bodyCode(response.body) == 401 {
                    return .failed(
                        name, "\(shown) refused the API key (HTTP \(response.status))", fix: "ask the agency for a key this server accepts")
                }
                guard response.status == 200, Self.bodyCode(response.body) ?? 200 == 200 else {
                    return .failed(name, "\(shown) answered HTTP \(response.status)", fix: "check the region's obaBaseUrl and that the server is up")
                }
                return .ok(name, "\(region.name): \(shown) answered with the API key")
            } catch {
                return .failed(name, "\(shown): \(error)", fix: "check the region's obaBaseUrl, DNS and the firewall")
            }
        }
    }

    /// Each region's stored agency id against its server's
    /// `agencies-with-coverage`: the iOS app drops alerts of an agency its
    /// server does not list.
    static func agencyChecks(_ configuration: SidecarConfiguration, regions: [Region], offline: Bool, http: HTTPClient) async -> [Check] {
        guard !offline, let stored = await storedAgencies(configuration), !stored.isEmpty else { return [] }
        let lookup = AgencyCoverageLookup(
            oba: OBAGateway(client: OBAClient(http: http), defaultKey: configuration.obaAPIKey, regionKeys: configuration.obaRegionAPIKeys),
            now: { 0 })
        var checks: [Check] = []
        for region in regions where region.obaBaseURL?.presence != nil {
            guard let agency = stored[region.id]?.presence else { continue }
            let name = "agency region \(region.id)"
            let verdict = await lookup.verdict(agency, region: region)
            let message = AgencyCoverageRules.message(verdict, region: region) ?? ""
            switch verdict {
            case .covered, .regionWide: checks.append(.ok(name, "agency id \(agency) is one its OneBusAway server covers"))
            case .unknown:
                checks.append(.failed(name, message, fix: "sidecar region set --id \(region.id) --agency-id ID, with one of the ids it lists"))
            case .unverified: checks.append(.warning(name, message))
            }
        }
        return checks
    }

    /// The agency ids stored for each region, or nil without a readable database.
    static func storedAgencies(_ configuration: SidecarConfiguration) async -> [Int: String]? {
        if !configuration.usesPostgreSQL && access(configuration.database, F_OK) != 0 { return nil }
        guard let database = try? configuration.openDatabase(readers: 1) else { return nil }
        let settings = try? await RegionSettingsStore(database: database).all()
        await database.close()
        return settings?.compactMapValues(\.agencyID)
    }

    /// The `code` member OneBusAway puts in every envelope.
    static func bodyCode(_ body: [UInt8]) -> Int? {
        guard case .object(let members)? = try? JSONValue(parsing: body),
            case .integer(let code)? = members["code"]
        else { return nil }
        return Int(code)
    }

    // MARK: Weather and disk

    static func weatherCheck(_ configuration: SidecarConfiguration, offline: Bool, http: HTTPClient) async -> Check {
        guard let key = configuration.pirateWeatherKey else {
            return .skipped("pirate weather", "no key: the weather route answers 403, as the apps expect without one")
        }
        if offline { return .skipped("pirate weather", "key set; not checked (--offline)") }
        let base = configuration.pirateWeatherURL.hasSuffix("/") ? String(configuration.pirateWeatherURL.dropLast()) : configuration.pirateWeatherURL
        // The key goes into the path as serve sends it.
        let escaped = key
        do {
            let response = try await http.send(
                HTTPClientRequest(
                    url: "\(base)/forecast/\(escaped)/47.6062,-122.3321?exclude=minutely,hourly,daily,alerts",
                    upstream: "pirate_weather"))
            switch response.status {
            case 200: return .ok("pirate weather", "\(base) accepted the key")
            case 401, 403:
                return .failed("pirate weather", "\(base) refused the key (HTTP \(response.status))", fix: "check --pirate-weather-key-file")
            default:
                return .failed(
                    "pirate weather", "\(base) answered HTTP \(response.status)", fix: "check --pirate-weather-url and the service's status")
            }
        } catch {
            return .failed("pirate weather", "\(base): \(error)", fix: "check that this host can reach \(base)")
        }
    }

    static func diskCheck(_ configuration: SidecarConfiguration) -> Check {
        guard !configuration.usesPostgreSQL else { return .skipped("disk", "PostgreSQL keeps the data; watch its server's disk") }
        let directory = nearestExisting(directoryOf(configuration.database)) ?? directoryOf(configuration.database)
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else {
            return .failed("disk", "cannot read free space of \(directory)", fix: "check that the directory exists")
        }
        let free = Double(stats.f_bavail) * Double(stats.f_frsize)
        let total = Double(stats.f_blocks) * Double(stats.f_frsize)
        let shown = "\(formatBytes(free)) free of \(formatBytes(total)) in \(directory)"
        if free < 256 * 1024 * 1024 {
            return .failed("disk", shown, fix: "free space or move --database: SQLite needs room for its WAL and every write fails when full")
        }
        if total > 0 && free / total < 0.05 { return .warning("disk", shown, fix: "less than 5% left; free space before it runs out") }
        return .ok("disk", shown)
    }

    /// The closest ancestor of `path` that exists.
    static func nearestExisting(_ path: String) -> String? {
        var current = path
        while access(current, F_OK) != 0 {
            guard current != "/" && current != "." else { return nil }
            current = directoryOf(current)
        }
        return current
    }

    static func directoryOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func formatBytes(_ bytes: Double) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = bytes
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : "\((value * 10).rounded() / 10) \(units[unit])"
    }
}

extension String {
    /// Pads with spaces to at least `width` characters.
    func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
