import Core
import Crypto
import Database
import FoundationEssentials
import HTTPClient
import Push
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
        let logger = Logger(level: configuration.logLevel)
        let database: SQLiteDatabase
        do {
            database = try SQLiteDatabase(path: configuration.database, synchronous: configuration.sqliteSynchronous, readers: 2)
            try await database.migrate(Migrations.all)
        } catch {
            errors("sidecar: error: \(error)")
            return 1
        }
        defer { Task { await database.close() } }
        let http = HTTPClient()
        defer { http.shutdown() }
        var directory = RegionDirectory([])
        if invocation.command.hasPrefix("region") || invocation.command.hasPrefix("alert") || invocation.command.hasPrefix("ghostbus") {
            do { directory = RegionDirectory(try await RegionSource(argument: configuration.regions).load(client: http)) } catch {
                errors("sidecar: error: regions directory: \(error.description)")
                return 2
            }
        }
        let store = AlertStore(database: database)
        let administration = AlertAdministration(store: store, regions: directory, clock: clock, cache: nil)
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
                for alert in try await store.alerts(regionID: regionID) {
                    let state = alert.published ? "published" : "draft"
                    output("\(alert.id)\t\(state)\(alert.test ? " test" : "")\t\(format(alert.startsAt))\t\(alert.header)")
                }
            case "alert show":
                let id = try alertID()
                let alert = try await administration.alert(id: id)
                output(describe(alert, translations: try await store.translations(alertID: id), sends: try await store.sends(alertID: id)))
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
                guard let transport = Sidecar.pushTransport(configuration, http: http, logger: logger) else {
                    throw AdministrationError.invalid(["no push transport: pass --gorush-url URL (or --push-transport log)"])
                }
                guard let audience = AlertSend.Audience(rawValue: options["audience"] ?? "all") else {
                    throw AdministrationError.invalid(["--audience must be all or test"])
                }
                let (send, alert) = try await administration.startSend(id: try alertID(), audience: audience)
                let total = try await store.audienceCount(regionID: alert.regionID, audience: audience)
                if send.cursor > 0 { output("resuming send \(send.id) after \(send.targeted) registrations") }
                let sender = AlertSender(store: store, transport: transport, clock: clock, logger: Logger(level: .warning))
                let finished = try await sender.run(send, alert: alert, translations: try await store.translations(alertID: alert.id)) { progress in
                    errors(progressBar(progress, total: total))
                }
                output("send \(finished.id) \(finished.status): targeted \(finished.targeted), delivered \(finished.delivered), failed \(finished.failed), pruned \(finished.pruned)")
            case "ghostbus export":
                let regionID = try regionOption()
                _ = try administration.region(regionID)
                let csv = try await GhostBusStore(database: database).exportCSV(regionID: regionID)
                output(String(csv.dropLast()))
            case "apikey create":
                guard let name = options["name"]?.presence else { throw AdministrationError.invalid(["--name is required"]) }
                let (key, record) = try await ApiKeyStore(database: database).create(name: name, now: now)
                output("created API key \(record.id) (\(name)). It is shown only now; store it safely:\n\(key)")
            case "apikey list":
                for record in try await ApiKeyStore(database: database).list() {
                    let state = record.revokedAt == nil ? "active" : "revoked"
                    output("\(record.id)\t\(record.name)\t\(record.prefix)…\t\(state)\tlast used \(record.lastUsedAt.map(format) ?? "never")")
                }
            case "apikey revoke":
                guard let id = Int64(invocation.positional.first ?? ""), try await ApiKeyStore(database: database).revoke(id: id, now: now) else {
                    throw AdministrationError.notFound("No active API key \(invocation.positional.first ?? "")")
                }
                output("revoked API key \(id)")
            default:
                errors("sidecar: error: unknown command '\(invocation.command)'")
                return 2
            }
            return 0
        } catch let error as AdministrationError {
            error.messages.forEach { errors("sidecar: error: \($0)") }
            return 1
        } catch AlertStoreError.busy(let retryAfter) {
            errors("sidecar: error: this send is running in another process; if that process died, retry in \(retryAfter) s")
            return 1
        } catch {
            errors("sidecar: error: \(error)")
            return 1
        }
    }

    static func format(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(seconds)).formatted(.iso8601)
    }

    static func describe(_ alert: ServiceAlert, translations: [AlertTranslation], sends: [AlertSend]) -> String {
        var lines = [
            "alert \(alert.id) (region \(alert.regionID), agency \(alert.agencyID))",
            "  state:       \(alert.published ? "published" : "draft")\(alert.test ? ", test" : "")",
            "  header:      \(alert.header)",
            "  description: \(alert.description)",
            "  url:         \(alert.url ?? "-")",
            "  cause:       \(alert.cause.name)   effect: \(alert.effect.name)   severity: \(alert.severity.name)",
            "  start:       \(format(alert.startsAt))",
            "  end:         \(alert.endsAt.map(format) ?? "none (the feed shows start + 8 h)")",
        ]
        for translation in translations {
            let stale = translation.sourceVersion != alert.sourceVersion ? " [stale: made from an earlier English text, withheld]" : ""
            lines.append("  translation \(translation.language)\(stale): \(translation.header)")
        }
        for send in sends {
            lines.append("  send \(send.id) to \(send.audience.rawValue): \(send.status), targeted \(send.targeted), delivered \(send.delivered), failed \(send.failed), pruned \(send.pruned)")
        }
        return lines.joined(separator: "\n")
    }

    static func progressBar(_ send: AlertSend, total: Int) -> String {
        let width = 30
        let fraction = total > 0 ? min(Double(send.targeted) / Double(total), 1) : 1
        let filled = Int(fraction * Double(width))
        return "[\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(Int(fraction * 100))% \(send.targeted)/\(total) delivered \(send.delivered) failed \(send.failed)"
    }
}
