import Core
import Database
import FoundationEssentials
import HTTPClient
import OBA

#if canImport(Glibc)
import Glibc
#endif

/// What an operator command runs with: its invocation, the database (none
/// for a command that opens none), the regions, where its output goes, and
/// the stores and authoring operations over the database.
struct CommandRun: Sendable {
    let invocation: AdminInvocation
    let opened: (any Database)?
    let regions: RegionDirectory
    let clock: any WallClock
    let logger: Logger
    let http: HTTPClient
    /// The command's result (a created key, a CSV): standard output.
    let output: @Sendable (String) -> Void
    /// Everything else (progress, which database, errors): standard error.
    let errors: @Sendable (String) -> Void

    var configuration: SidecarConfiguration { invocation.configuration }
    var options: [String: String] { invocation.options }
    var now: EpochSeconds { clock.nowSeconds }

    /// The database; only commands declared with access `.reads` or `.writes` open one.
    var database: any Database {
        guard let opened else { preconditionFailure("\(invocation.command) opened no database") }
        return opened
    }

    var alerts: AlertStore { AlertStore(database: database, sendLeaseSeconds: Int64(configuration.sendLeaseSeconds)) }
    var surveys: SurveyStore { SurveyStore(database: database) }
    var keys: ApiKeyStore { ApiKeyStore(database: database) }
    var users: ConsoleStore { ConsoleStore(database: database) }
    var audit: AuditLog { AuditLog(database: database, logger: logger) }
    /// Study and survey authoring as this operator.
    var surveyAdministration: SurveyAdministration {
        SurveyAdministration(store: surveys, regions: regions, audit: audit, clock: clock, actor: actor)
    }
    /// Who ran the command, as the audit log names them.
    var actor: String { "cli:" + Self.operatorLogin() }

    /// The authoring operations as this operator, validated like the admin API's.
    var administration: AlertAdministration {
        AlertAdministration(
            store: alerts, regions: regions, clock: clock, cache: nil, catalog: configuration.locales, audit: audit, actor: actor,
            scopeChecker: OBAScopeChecker(
                oba: OBAGateway(client: OBAClient(http: http), defaultKey: configuration.obaAPIKey, regionKeys: configuration.obaRegionAPIKeys),
                lookups: nil))
    }

    var sourceStore: AlertSourceStore { AlertSourceStore(database: database) }

    /// Polls from the CLI: sends it starts are run by a server (none here).
    var sourcePoller: AlertSourcePoller {
        let configuration = configuration
        return AlertSourcePoller(
            sources: sourceStore, alerts: alerts, administration: administration, launch: nil, http: http,
            coordination: CoordinationStore(database: database), clock: clock, logger: logger, metrics: nil,
            listening: { (configuration.server.host, configuration.server.port) }, environment: ProcessInfo.processInfo.environment,
            catalog: configuration.locales, proxy: configuration.sourceProxy)
    }

    var sourceAdministration: AlertSourceAdministration {
        let configuration = configuration
        return AlertSourceAdministration(
            store: sourceStore, alerts: alerts, regions: regions, clock: clock, poller: sourcePoller, audit: audit, actor: actor,
            listening: { (configuration.server.host, configuration.server.port) })
    }

    /// The command's id argument (`alert show 12`).
    /// Checks an agency id against the region's OneBusAway server
    /// (`agencies-with-coverage`): one it does not list is refused when
    /// `refuse` (the iOS app would drop its alerts), else warned about; a
    /// server that cannot be asked is a warning. `--agency-check false` skips it.
    func checkAgency(_ agencyID: String?, regionID: Int, refuse: Bool = true) async throws {
        guard let agencyID = agencyID?.trimmingWhitespace(), !agencyID.isEmpty,
            options["agency_check"].flatMap(BooleanParameter.read) != false, let region = regions.region(id: regionID)
        else { return }
        var settings = HTTPClient.Configuration()
        settings.timeoutSeconds = 5
        settings.connectTimeoutSeconds = 3
        let client = HTTPClient(configuration: settings)
        defer { client.shutdown() }
        let clock = clock
        let lookup = AgencyCoverageLookup(
            oba: OBAGateway(client: OBAClient(http: client), defaultKey: configuration.obaAPIKey, regionKeys: configuration.obaRegionAPIKeys),
            now: { clock.now().timeIntervalSince1970 })
        let verdict = await lookup.verdict(agencyID, region: region)
        guard let message = AgencyCoverageRules.message(verdict, region: region) else { return }
        if case .unknown = verdict, refuse { throw AdministrationError.invalid([message + " (--agency-check false sets it anyway)"]) }
        errors("warning: " + message)
    }

    func id() throws -> Int64 {
        guard let id = Int64(invocation.positional.first ?? "") else { throw AdministrationError.invalid(["the id must be a number"]) }
        return id
    }

    /// `--region N`, a region of the directory.
    func region() throws -> Int {
        guard let text = options["region"], let id = Int(text) else { throw AdministrationError.invalid(["--region N is required"]) }
        _ = try administration.region(id)
        return id
    }

    /// A region's time zone (UTC when none is set), for times printed.
    func zone(regionID: Int) async -> ZoneInfo {
        let name = (try? await RegionSettingsStore(database: alerts.database).all()[regionID]?.timezone) ?? nil
        return name.flatMap { ZoneInfo.named($0) } ?? .utc
    }

    /// A JSON document from a file or standard input (`-`).
    func document(_ path: String?) throws -> JSONValue {
        guard let path = path?.presence else { throw AdministrationError.invalid(["--file PATH is required (or - for standard input)"]) }
        var bytes: [UInt8] = []
        if path == "-" {
            while let line = readLine(strippingNewline: false) { bytes += Array(line.utf8) }
        } else {
            guard let data = FileManager.default.contents(atPath: path) else { throw AdministrationError.invalid(["cannot read \(path)"]) }
            bytes = [UInt8](data)
        }
        guard let document = try? JSONValue(parsing: bytes) else {
            throw AdministrationError.invalid(["\(path) is not valid JSON"])
        }
        return document
    }

    /// Who ran the command, for the audit log: the user `sudo` was run by,
    /// else the process's own user as the system names it (the password
    /// database), else its numeric id. Environment variables such as
    /// `LOGNAME` are unset under systemd, cron and `docker exec`.
    static func operatorLogin() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let sudo = environment["SUDO_USER"]?.presence { return sudo }
        let uid = getuid()
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name, let text = String(validatingCString: name), !text.isEmpty {
            return text
        }
        return "uid \(uid)"
    }
}
