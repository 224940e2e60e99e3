import Core
import Crypto
import Database
import FoundationEssentials
import HTTPClient
import Push
import QRCode
#if canImport(Glibc)
import Glibc
#endif

/// Runs the operator commands (`sidecar region|alert|apikey ...`) against
/// the database, with the same validation as the admin API.
public enum AdminCommands {
    /// Runs one command; returns the process exit status (0 ok, 1 failed,
    /// 2 usage). Normal output goes to `output`, errors and progress to `errors`.
    public static func run(_ invocation: AdminInvocation, clock: any WallClock = SystemClock(),
                           output: @Sendable (String) -> Void = { print($0) },
                           errors: @Sendable (String) -> Void = { StandardErrorSink().write($0) }) async -> Int32 {
        let configuration = invocation.configuration
        let logger = configuration.makeLogger()
        if invocation.command.hasPrefix("links") {
            let http = HTTPClient()
            defer { http.shutdown() }
            do {
                let directory = RegionDirectory(try await RegionSource(argument: configuration.regions).load(client: http))
                return try addRegionLink(invocation, directory: directory, output: output, errors: errors)
            } catch let error as AdministrationError {
                error.messages.forEach { errors("sidecar: error: \($0)") }
                return 1
            } catch {
                errors("sidecar: error: regions directory: \(error)")
                return 2
            }
        }
        if invocation.command == "push test" {
            return await pushTest(invocation, logger: logger, output: output, errors: errors)
        }
        let database: any Database
        do {
            database = try await configuration.openMigrated(readsOnly: OperatorCommands.named(invocation.command)?.access == .reads,
                                                            announce: { errors("sidecar: \($0)") }).database
        } catch {
            errors("sidecar: error: \(error.description)")
            return error.exitCode
        }
        let status = await execute(invocation, database: database, logger: logger, clock: clock, output: output, errors: errors)
        // Closed before the process exits: SQLite folds its log into the
        // main file, which then holds every row on its own.
        await database.close()
        return status
    }

    /// `push test`: one notification through the configured transport; no database.
    static func pushTest(_ invocation: AdminInvocation, logger: Logger, output: @Sendable (String) -> Void,
                         errors: @Sendable (String) -> Void) async -> Int32 {
        let http = HTTPClient()
        defer { http.shutdown() }
        let options = invocation.options
        do {
            guard let transport = try Sidecar.pushTransport(invocation.configuration, http: http, logger: logger) else {
                throw AdministrationError.invalid(["no push transport: pass --gorush-url, --apns-key-file/--apns-key-id/--apns-team-id, "
                                                   + "--fcm-service-account or --relay-url (see sidecar push test --help)"])
            }
            guard let platform = PushPlatform(rawValue: options["platform"] ?? ""), let token = options["token"]?.presence else {
                throw AdministrationError.invalid(["--platform ios|android and --token are required"])
            }
            let sandbox = ApnsSandbox.read(options["sandbox"]) == .sandbox
            let message = PushMessage(token: token, platform: platform, apnsSandbox: sandbox, title: "OneBusAway",
                                      body: "Test notification from your sidecar")
            let outcome = await transport.send([message]).first ?? .transient(reason: "no answer")
            let environment = platform == .ios ? (sandbox ? " (APNs sandbox)" : " (APNs production)") : ""
            switch outcome {
            case .delivered:
                output("delivered through \(transport.name)\(environment)")
                return 0
            case .terminal(let reason), .transient(let reason), .rejected(let reason):
                output("not delivered through \(transport.name)\(environment): \(reason) (\(Self.kind(outcome)))")
                return 1
            }
        } catch let error as AdministrationError {
            error.messages.forEach { errors("sidecar: error: \($0)") }
            return 1
        } catch let error as StartupError {
            errors("sidecar: error: \(error.description)")
            return error.exitCode
        } catch {
            errors("sidecar: error: \(error)")
            return 1
        }
    }

    /// A command against an open, migrated database; returns the exit status.
    static func execute(_ invocation: AdminInvocation, database: any Database, logger: Logger, clock: any WallClock,
                        output: @Sendable (String) -> Void, errors: @Sendable (String) -> Void) async -> Int32 {
        let configuration = invocation.configuration
        let http = HTTPClient()
        defer { http.shutdown() }
        var directory = RegionDirectory([])
        if !invocation.command.hasPrefix("apikey") && !invocation.command.hasPrefix("push") && !invocation.command.hasPrefix("user") {
            do { directory = RegionDirectory(try await RegionSource(argument: configuration.regions).load(client: http)) } catch {
                errors("sidecar: error: regions directory: \(error.description)")
                return 2
            }
        }
        let store = AlertStore(database: database, sendLeaseSeconds: Int64(configuration.sendLeaseSeconds))
        let audit = AuditLog(database: database, logger: logger)
        let actor = "cli:" + operatorLogin()
        let administration = AlertAdministration(store: store, regions: directory, clock: clock, cache: nil, catalog: configuration.locales,
                                                 audit: audit, actor: actor)
        let options = invocation.options
        let now = clock.now().epochMillis / 1000
        func alertID() throws -> Int64 {
            guard let id = Int64(invocation.positional.first ?? "") else { throw AdministrationError.invalid(["the alert id must be a number"]) }
            return id
        }
        func regionOption() throws -> Int {
            guard let text = options["region"], let id = Int(text) else { throw AdministrationError.invalid(["--region N is required"]) }
            return id
        }
        do {
            switch invocation.command {
            case "region list":
                for (region, settings) in try await administration.regionList() {
                    output("\(region.id)\t\(region.name)\tagency=\(settings?.agencyID ?? "-")\ttimezone=\(settings?.timezone ?? "-")")
                }
            case "region set":
                guard let id = options["id"].flatMap({ Int($0) }) else { throw AdministrationError.invalid(["--id N is required"]) }
                let settings = try await administration.setRegion(id: id, agencyID: options["agency_id"], timezone: options["timezone"])
                output("region \(id): agency=\(settings.agencyID ?? "-") timezone=\(settings.timezone ?? "-")")
            case "alert create":
                let alert = try await administration.create(regionID: try regionOption(), fields: options)
                output("created alert \(alert.id) (draft; publish with: sidecar alert publish \(alert.id))")
            case "alert list":
                let regionID = try regionOption()
                _ = try administration.region(regionID)
                let zone = await regionZone(store, regionID)
                for alert in try await store.alerts(regionID: regionID) {
                    let state = AlertVisibility.of(alert, now: now).rawValue
                    output("\(alert.id)\t\(state)\(alert.test ? " test" : "")\t\(RegionTime.iso8601(alert.startsAt, zone))"
                           + "\tuntil \(RegionTime.iso8601(AlertFeedRules.effectiveEnd(alert), zone))\t\(alert.header)")
                }
            case "alert show":
                let id = try alertID()
                let alert = try await administration.alert(id: id)
                output(describe(alert, translations: try await store.translations(alertID: id), sends: try await store.sends(alertID: id),
                                zone: await regionZone(store, alert.regionID), now: now))
            case "alert edit":
                let alert = try await administration.edit(id: try alertID(), fields: options)
                output("updated alert \(alert.id)")
            case "alert publish", "alert unpublish":
                let alert = try await administration.setPublished(id: try alertID(), invocation.command == "alert publish")
                output("alert \(alert.id) is \(alert.published ? "published" : "unpublished")")
            case "alert delete":
                let id = try alertID()
                try await administration.delete(id: id)
                output("deleted alert \(id)")
            case "alert translate":
                let translation = try await administration.translate(id: try alertID(), language: options["language"] ?? "",
                                                                     header: options["header"], description: options["description"])
                output("saved the \(translation.language) translation of alert \(try alertID())")
            case "alert send":
                guard let transport = try Sidecar.pushTransport(configuration, http: http, logger: logger) else {
                    throw AdministrationError.invalid(["no push transport: pass --gorush-url URL (or --push-transport log)"])
                }
                guard let audience = AlertSend.Audience(rawValue: options["audience"] ?? "all") else {
                    throw AdministrationError.invalid(["--audience must be all or test"])
                }
                let (send, alert) = try await administration.startSend(id: try alertID(), audience: audience)
                let total = try await store.audienceCount(regionID: alert.regionID, audience: audience)
                if send.cursor > 0 { output("resuming send \(send.id) after \(send.targeted) registrations") }
                let sender = AlertSender(store: store, transport: transport, clock: clock, logger: Logger(level: .error), retry: configuration.sendRetry)
                let finished = try await sender.run(send, alert: alert, translations: try await store.translations(alertID: alert.id)) { progress in
                    errors(progressBar(progress, total: total))
                }
                output("send \(finished.id) \(finished.status): \(counts(finished))")
                if finished.status == "failed" {
                    let untried = try await store.audienceCount(regionID: alert.regionID, audience: audience, after: finished.cursor)
                    errors("sidecar: error: \(finished.pending + untried) pushes were not delivered (\(finished.lastError ?? "the provider kept failing")); "
                           + "run 'sidecar alert send \(alert.id)\(audience == .test ? " --audience test" : "")' again to retry only those")
                    return 1
                }
            case "ghostbus export":
                let regionID = try regionOption()
                _ = try administration.region(regionID)
                let csv = try await GhostBusStore(database: database).exportCSV(regionID: regionID, zone: await regionZone(store, regionID))
                output(String(csv.dropLast()))
            case "export":
                let regionID = try regionOption()
                _ = try administration.region(regionID)
                let document = try await RegionExchange.export(regionID: regionID, database: database, nowMillis: clock.now().epochMillis)
                let text = String(decoding: document.prettyEncoded(), as: UTF8.self) + "\n"
                if let path = options["to"], path != "-" {
                    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
                        throw AdministrationError.invalid(["cannot write \(path)"])
                    }
                    errors("wrote region \(regionID) to \(path)")
                } else {
                    output(String(text.dropLast()))
                }
            case "import":
                let document: RegionExchange.Document
                do { document = try RegionExchange.parse(try readDocument(options["file"]), regions: directory) } catch let failure as RegionExchange.Failure {
                    throw AdministrationError.invalid(["import: \(failure.description)"])
                }
                let dryRun = options["dry_run"].map { $0 != "false" } ?? false
                let summary: RegionExchange.Summary
                do {
                    summary = try await RegionExchange.importDocument(document, database: database, dryRun: dryRun, nowSeconds: now)
                } catch let failure as RegionExchange.Failure {
                    throw AdministrationError.invalid(["import: \(failure.description); nothing was imported"])
                }
                if !dryRun {
                    await audit.record(actor: actor, action: "region.import", regionID: document.regionID, target: "region \(document.regionID)",
                                       detail: summary.lines.map { $0.trimmingWhitespace() }.joined(separator: "; "), now: now)
                }
                output(dryRun ? "dry run: importing into region \(document.regionID) would do this (nothing was changed):"
                              : "imported into region \(document.regionID):")
                summary.lines.forEach(output)
            case "study create":
                let regionID = try regionOption()
                _ = try administration.region(regionID)
                guard let name = options["name"]?.presence else { throw AdministrationError.invalid(["--name is required"]) }
                let tooLong = FieldLimits.check([("--name", name, FieldLimits.name), ("--description", options["description"], FieldLimits.alertDescription)])
                guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
                let study = try await SurveyStore(database: database).createStudy(regionID: regionID, name: name,
                                                                                  description: options["description"]?.presence, now: now)
                await audit.record(actor: actor, action: "study.create", regionID: regionID, target: "study \(study.id)", detail: name, now: now)
                output("created study \(study.id)")
            case "study list":
                for study in try await SurveyStore(database: database).studies(regionID: options["region"].flatMap { Int($0) }) {
                    output("\(study.id)\tregion \(study.regionID)\t\(study.name)")
                }
            case "survey create", "survey edit":
                let surveys = SurveyStore(database: database)
                var survey: Survey
                if invocation.command == "survey edit" {
                    guard let existing = try await surveys.survey(id: try alertID()) else { throw AdministrationError.notFound("No survey \(try alertID())") }
                    survey = existing
                } else {
                    survey = Survey(id: 0, regionID: 0, studyID: 0, name: "", available: true, startDate: nil, endDate: nil, showOnMap: false,
                                    showOnStops: false, alwaysVisible: false, allowsMultipleResponses: false, visibleStopList: nil,
                                    visibleRouteList: nil, requireStopIDInResponse: false, questions: [], createdAt: now, updatedAt: now)
                }
                let document = try readDocument(options["file"])
                var messages = SurveyRules.parse(document: document, into: &survey)
                if directory.region(id: survey.regionID) == nil { messages.append("region_id \(survey.regionID) is not in the regions directory") }
                guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
                do {
                    let saved = try await surveys.save(survey, now: now)
                    await audit.record(actor: actor, action: invocation.command == "survey edit" ? "survey.edit" : "survey.create",
                                       regionID: saved.regionID, target: "survey \(saved.id)", detail: "\(saved.name); \(saved.questions.count) questions",
                                       now: now)
                    output("\(invocation.command == "survey edit" ? "updated" : "created") survey \(saved.id)")
                } catch let error as SurveyStoreError {
                    throw AdministrationError.invalid([error.message])
                }
            case "survey list":
                for survey in try await SurveyStore(database: database).surveys(regionID: options["region"].flatMap { Int($0) }) {
                    let active = SurveyRules.isActive(survey, now: now) ? "active" : "inactive"
                    output("\(survey.id)\tregion \(survey.regionID)\t\(active)\t\(survey.questions.count) questions\t\(survey.name)")
                }
            case "survey show":
                guard let survey = try await SurveyStore(database: database).survey(id: try alertID()) else {
                    throw AdministrationError.notFound("No survey \(try alertID())")
                }
                output(String(decoding: SurveyRules.document(survey).prettyEncoded(), as: UTF8.self))
            case "survey delete":
                let doomed = try await SurveyStore(database: database).survey(id: try alertID())
                do { try await SurveyStore(database: database).delete(id: try alertID()) } catch let error as SurveyStoreError {
                    throw error == .notFound ? AdministrationError.notFound(error.message) : AdministrationError.invalid([error.message])
                }
                await audit.record(actor: actor, action: "survey.delete", regionID: doomed?.regionID, target: "survey \(try alertID())",
                                   detail: doomed?.name, now: now)
                output("deleted survey \(try alertID())")
            case "survey responses":
                let surveys = SurveyStore(database: database)
                guard let survey = try await surveys.survey(id: try alertID()) else { throw AdministrationError.notFound("No survey \(try alertID())") }
                output(String(try await surveys.responsesCSV(survey: survey, zone: await regionZone(store, survey.regionID)).dropLast()))
            case "apikey create":
                guard let name = options["name"]?.presence else { throw AdministrationError.invalid(["--name is required"]) }
                let tooLong = FieldLimits.check([("--name", name, FieldLimits.name)])
                guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
                let regions = try regionList(options["region"])
                let (key, record) = try await ApiKeyStore(database: database).create(name: name, regions: regions, canPush: options["push"] == "true",
                                                                                      now: now)
                await audit.record(actor: actor, action: "apikey.create", regionID: Optional<Int>.none, target: "API key \(record.id)",
                                   detail: "\(name); \(record.scopeDescription)", now: now)
                // The key alone on standard output: KEY=$(sidecar apikey create ...) reads it.
                errors("created API key \(record.id) (\(name), \(record.scopeDescription)). It is shown only now; store it safely:")
                output(key)
            case "apikey list":
                for record in try await ApiKeyStore(database: database).list() {
                    let state = record.revokedAt == nil ? "active" : "revoked"
                    output("\(record.id)\t\(record.name)\t\(record.prefix)…\t\(state)\t\(record.scopeDescription)\tlast used \(record.lastUsedAt.map(format) ?? "never")")
                }
            case "apikey revoke":
                guard let id = Int64(invocation.positional.first ?? ""), try await ApiKeyStore(database: database).revoke(id: id, now: now) else {
                    throw AdministrationError.notFound("No active API key \(invocation.positional.first ?? "")")
                }
                await audit.record(actor: actor, action: "apikey.revoke", regionID: Optional<Int>.none, target: "API key \(id)", now: now)
                output("revoked API key \(id)")
            case "user create":
                let users = ConsoleStore(database: database)
                guard let email = ConsoleRules.normalizedEmail(options["email"] ?? "") else {
                    throw AdministrationError.invalid(["--email must be an email address"])
                }
                guard let role = ConsoleRole(rawValue: options["role"] ?? "") else { throw AdministrationError.invalid(["--role must be admin, editor or viewer"]) }
                let regions = try regionList(options["region"])
                let password = try readPassword(email: email, errors: errors)
                let user = try await users.createUser(email: email, passwordHash: try PasswordHash.hash(password), role: role, regions: regions, now: now)
                await audit.record(actor: actor, action: "user.create", regionID: Optional<Int>.none, target: "user \(email)",
                                   detail: "role=\(role.rawValue); regions=\(regions.map { $0.sorted().map(String.init).joined(separator: ",") } ?? "all")", now: now)
                output("created \(user.role.rawValue) \(user.email) (\(regions.map { "regions " + $0.sorted().map(String.init).joined(separator: ",") } ?? "all regions"))")
            case "user list":
                for user in try await ConsoleStore(database: database).users() {
                    output("\(user.email)\t\(user.role.rawValue)\t\(user.regions.map { "regions " + $0.sorted().map(String.init).joined(separator: ",") } ?? "all regions")")
                }
            case "user passwd":
                guard let email = ConsoleRules.normalizedEmail(options["email"] ?? "") else { throw AdministrationError.invalid(["--email is required"]) }
                let users = ConsoleStore(database: database)
                guard try await users.credentials(email: email) != nil else { throw AdministrationError.notFound("No account \(email)") }
                let password = try readPassword(email: email, errors: errors)
                try await users.setPassword(email: email, passwordHash: try PasswordHash.hash(password), now: now)
                await audit.record(actor: actor, action: "user.passwd", regionID: Optional<Int>.none, target: "user \(email)", now: now)
                output("set the password of \(email); its sessions have ended")
            case "user delete":
                guard let email = ConsoleRules.normalizedEmail(options["email"] ?? "") else { throw AdministrationError.invalid(["--email is required"]) }
                do { try await ConsoleStore(database: database).deleteUser(email: email) } catch ConsoleStore.Failure.notFound {
                    throw AdministrationError.notFound("No account \(email)")
                }
                await audit.record(actor: actor, action: "user.delete", regionID: Optional<Int>.none, target: "user \(email)", now: now)
                output("deleted \(email)")
            default:
                errors("sidecar: error: unknown command '\(invocation.command)'")
                return 2
            }
            return 0
        } catch ConsoleStore.Failure.duplicateEmail {
            errors("sidecar: error: an account with this email exists (sidecar user passwd to change its password)")
            return 1
        } catch let error as AdministrationError {
            error.messages.forEach { errors("sidecar: error: \($0)") }
            return 1
        } catch let error as StartupError {
            errors("sidecar: error: \(error.description)")
            return error.exitCode
        } catch AlertStoreError.busy(let retryAfter) {
            errors("sidecar: error: this send is running in another process; if that process died, retry in \(retryAfter) s")
            return 1
        } catch {
            errors("sidecar: error: \(error)")
            return 1
        }
    }

    /// A JSON document from a file or standard input (`-`).
    static func readDocument(_ path: String?) throws -> JSONValue {
        guard let path = path?.presence else { throw AdministrationError.invalid(["--file PATH is required (or - for standard input)"]) }
        var bytes: [UInt8] = []
        if path == "-" {
            while let line = readLine(strippingNewline: false) { bytes += Array(line.utf8) }
        } else {
            guard let data = FileManager.default.contents(atPath: path) else { throw AdministrationError.invalid(["cannot read \(path)"]) }
            bytes = [UInt8](data)
        }
        guard let document = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw AdministrationError.invalid(["\(path) is not valid JSON"])
        }
        return document
    }

    static func kind(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered: return "delivered"
        case .terminal: return "the token is dead"
        case .transient: return "temporary; try again"
        case .rejected: return "the message was refused"
        }
    }

    static func format(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(seconds)).formatted(.iso8601)
    }

    /// An alert as `alert show` prints it, times in the region's zone.
    static func describe(_ alert: ServiceAlert, translations: [AlertTranslation], sends: [AlertSend], zone: ZoneInfo, now: Int64) -> String {
        func time(_ seconds: Int64) -> String { RegionTime.iso8601(seconds, zone) }
        var lines = [
            "alert \(alert.id) (region \(alert.regionID), agency \(alert.agencyID)); times in \(zone.identifier)",
            "  state:       \(AlertVisibility.of(alert, now: now).rawValue)\(alert.test ? ", test" : "")",
            "  header:      \(alert.header)",
            "  description: \(alert.description)",
            "  url:         \(alert.url ?? "-")",
            "  cause:       \(alert.cause.name)   effect: \(alert.effect.name)   severity: \(alert.severity.name)",
            "  start:       \(time(alert.startsAt))",
            "  end:         \(alert.endsAt.map(time) ?? "none set: riders see it until \(time(AlertFeedRules.effectiveEnd(alert))) (start + 8 h)")",
            "  affected:    \(alert.impactStartsAt.map { "\(time($0)) to \(alert.impactEndsAt.map(time) ?? "-")" } ?? "the whole shown period")",
        ]
        for translation in translations {
            let stale = translation.sourceVersion != alert.sourceVersion ? " [stale: made from an earlier English text, withheld]" : ""
            lines.append("  translation \(translation.language)\(stale): \(translation.header)")
        }
        for send in sends {
            lines.append("  send \(send.id) to \(send.audience.rawValue): \(send.status), \(counts(send))"
                         + (send.status == "failed" ? " (\(send.lastError ?? "provider failing"))" : ""))
        }
        return lines.joined(separator: "\n")
    }

    static func counts(_ send: AlertSend) -> String {
        "targeted \(send.targeted), delivered \(send.delivered), failed \(send.failed), pruned \(send.pruned), pending \(send.pending)"
    }

    static func progressBar(_ send: AlertSend, total: Int) -> String {
        let width = 30
        let fraction = total > 0 ? min(Double(send.targeted) / Double(total), 1) : 1
        let filled = Int(fraction * Double(width))
        return "[\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(Int(fraction * 100))% \(send.targeted)/\(total) delivered \(send.delivered) failed \(send.failed)"
    }
}

extension AdminCommands {
    /// `--region 1 --region 3` (joined as `1,3`) as a set; nil when absent
    /// or `all` (every region).
    static func regionList(_ text: String?) throws(AdministrationError) -> Set<Int>? {
        guard let text, !text.isEmpty, text != "all" else { return nil }
        var regions = Set<Int>()
        for part in text.split(separator: ",") {
            guard let id = Int(String(part).trimmingWhitespace()), id >= 0 else {
                throw .invalid(["--region must be a region id (a number), repeated for more, or all alone"])
            }
            regions.insert(id)
        }
        return regions
    }

    /// Who runs the command, for the audit log (the login behind sudo).
    /// A region's time zone (UTC when none is set), for times in exports.
    static func regionZone(_ store: AlertStore, _ regionID: Int) async -> ZoneInfo {
        let name = (try? await store.regionSettings()[regionID]?.timezone) ?? nil
        return name.flatMap { ZoneInfo.named($0) } ?? .utc
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

    /// Reads a new password from standard input, never from the arguments
    /// (every local user can read those). On a terminal it asks twice
    /// without echo; otherwise it reads one line.
    static func readPassword(email: String, errors: @Sendable (String) -> Void) throws(AdministrationError) -> String {
        let password: String
        if isatty(STDIN_FILENO) == 1 {
            errors("Password for \(email) (at least \(ConsoleRules.minimumPasswordLength) characters): ")
            let first = readLineWithoutEcho() ?? ""
            errors("Again: ")
            guard readLineWithoutEcho() == first else { throw .invalid(["the two passwords differ"]) }
            password = first
        } else {
            password = readLine(strippingNewline: true) ?? ""
        }
        let problems = ConsoleRules.passwordProblems(password, email: email)
        guard problems.isEmpty else { throw .invalid(problems) }
        return password
    }

    static func readLineWithoutEcho() -> String? {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return readLine() }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            StandardErrorSink().write("")
        }
        return readLine(strippingNewline: true)
    }
}

extension AdminCommands {
    /// `sidecar links add-region`: needs the regions directory, not the database.
    static func addRegionLink(_ invocation: AdminInvocation, directory: RegionDirectory, output: @Sendable (String) -> Void,
                              errors: @Sendable (String) -> Void) throws -> Int32 {
        let options = invocation.options
            var link = LinkRules.AddRegion(name: "", obaURL: "")
            var explicitID: Int64?
            if let text = options["region_id"] {
                guard let id = LinkRules.regionIDValue(text) else {
                    throw AdministrationError.invalid(["--region-id must be a non-negative integer that fits 64 bits (got '\(text)')"])
                }
                explicitID = id
            }
            if let text = options["region"] {
                guard let id = Int(text), let region = directory.region(id: id) else {
                    throw AdministrationError.notFound("No region \(text) in the regions directory (see sidecar region list)")
                }
                link = LinkRules.AddRegion(region: region, sidecarURL: nil)
            } else if let id = explicitID, id <= Int64(Int.max), let region = directory.region(id: Int(id)) {
                // The directory's values are the defaults the other flags override.
                link = LinkRules.AddRegion(region: region, sidecarURL: nil)
            }
            if let id = explicitID { link.regionID = id }
            if let name = options["name"] { link.name = name }
            if let oba = options["oba_url"] { link.obaURL = oba }
            if let sidecar = options["sidecar_url"] { link.sidecarURL = sidecar }
            if let otp = options["otp_url"] { link.otpURL = otp.presence }
            if let graphql = options["otp_graphql_url"] { link.otpGraphqlURL = graphql.presence }
            if let bikeshare = options["otp_graphql_bikeshare"] {
                guard let value = BooleanParameter.read(bikeshare) else {
                    throw AdministrationError.invalid(["--otp-graphql-bikeshare must be true or false (got '\(bikeshare)')"])
                }
                link.otpGraphqlBikeshare = value
            }
            if let url = options["umami_url"] { link.umamiURL = url.presence }
            if let id = options["umami_id"] { link.umamiID = id.presence }
            var problems = LinkRules.problems(link)
            if link.sidecarURL?.isEmpty ?? true { problems.append("the sidecar URL is required: pass --sidecar-url (this server's public https address)") }
            if link.regionID == nil {
                problems.append("the region id is required: pass --region-id N (the id this sidecar serves the region under; without it the apps invent one and every sidecar call answers 404)")
            }
            guard problems.isEmpty else { throw AdministrationError.invalid(problems) }
            let text = LinkRules.addRegionLink(link)
            output(text)
            if let path = options["qr"] {
                let code: QRCode
                do { code = try QRCode(text) } catch { throw AdministrationError.invalid(["the link is too long for a QR code"]) }
                let lower = path.lowercased()
                guard lower.hasSuffix(".png") || lower.hasSuffix(".svg") else { throw AdministrationError.invalid(["--qr must name a .png or .svg file"]) }
                let bytes = lower.hasSuffix(".png") ? code.png() : Array(code.svg().utf8)
                guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { throw AdministrationError.invalid(["cannot write \(path)"]) }
                errors("wrote a \(code.size)×\(code.size) QR code to \(path)")
            }
        return 0
    }
}
