import Database

/// Every schema migration, in version order, each naming the stores that
/// own what it changes. A new change takes the next version here and its
/// DDL in the owning store's `schema`.
enum Migrations {
    static let sidecar: [Migration] = [
        entry(1, "create push_registrations", PushRegistrationStore.schema),
        entry(2, "create alarms", AlarmStore.schema),
        entry(3, "create alerts", RegionSettingsStore.schema, AlertStore.schema, AlertSendStore.schema, ApiKeyStore.schema),
        entry(4, "create ghost_bus_reports", GhostBusStore.schema),
        entry(5, "create surveys", SurveyStore.schema),
        entry(6, "create live_activities", LiveActivityStore.schema),
        entry(7, "alert sends keep pushes to retry", AlertSendStore.schema),
        entry(8, "alarms counted per device", AlarmStore.schema),
        entry(9, "alarm pages claimed by one instance", AlarmStore.schema),
        entry(10, "live activity pages claimed by one instance", LiveActivityStore.schema),
        entry(11, "one unfinished send per alert and audience", AlertSendStore.schema),
        entry(12, "coordination between instances", CoordinationStore.schema),
        entry(13, "keep what sidecar-export/1 carries", AlertStore.schema, SurveyStore.schema, GhostBusStore.schema),
        entry(14, "console accounts, sessions, audit log, scoped API keys", ConsoleStore.schema, AuditLog.schema, ApiKeyStore.schema),
        entry(15, "tokens bound at the push relay", RelayBinder.schema),
        entry(16, "alerts keep an impact period", AlertStore.schema),
        entry(17, "alert ids are never reused", AlertStore.schema),
        entry(18, "console secrets", ConsoleStore.schema),
        entry(19, "alerts remember being withdrawn", AlertStore.schema),
        entry(20, "a send remembers its audience's size", AlertSendStore.schema),
        entry(21, "ghost-bus reports keep the route's short name", GhostBusStore.schema),
        entry(22, "alert sources", AlertStore.schema, AlertSourceStore.schema),
        entry(
            23, "admin API: key managers, principals, idempotency, caller-supplied push text, paged exports", ApiKeyStore.schema,
            IdempotencyStore.schema, AlertSendStore.schema, SurveyStore.schema, GhostBusStore.schema),
        entry(
            24, "alert sources held to what authored alerts obey: private addresses, push caps, a sources scope", AlertSourceStore.schema,
            ApiKeyStore.schema),
        entry(
            25, "relay bindings remember refusals and back off; tokens outside the token rule removed", RelayBinder.schema,
            PushRegistrationStore.schema, AlarmStore.schema, LiveActivityStore.schema),
        entry(26, "a send says when it stalled", AlertSendStore.schema),
        entry(27, "a send's audience read in id order from an index", PushRegistrationStore.schema),
        entry(28, "an authored alert names the routes, stops and trips it is about", AlertStore.schema),
        entry(29, "publish-time warnings an editor acknowledged", AlertStore.schema),
        entry(30, "a region's sends paced to a number of pushes a minute", RegionSettingsStore.schema),
        entry(31, "sends scheduled for later", AlertScheduleStore.schema),
        entry(32, "two-person approval of publishing and sending to everyone", RegionSettingsStore.schema, ApprovalStore.schema),
        entry(33, "keys record who made and who revoked them", ApiKeyStore.schema),
        entry(34, "study, survey and question ids from sequences, which sidecar sequence bump can raise", SurveyStore.schema),
        entry(35, "re-registrations update push registrations in place: no index on last_seen_at", PushRegistrationStore.schema),
    ]

    /// The push relay's own database (versions from 1001, so each program
    /// recognises and refuses the other's).
    static let relay: [Migration] = [
        entry(1001, "relay bindings and replay window", RelayStore.schema),
        entry(1002, "relay bindings counted per server and client", RelayStore.schema),
        entry(1003, "relay bindings looked up by token in one B-tree", RelayStore.schema),
    ]

    static var all: [Migration] { sidecar }

    /// Every store's schema: each of their versions must be in a list above
    /// under the store's name (a test checks), so no DDL is left unapplied.
    static let schemas: [Schema] = [
        PushRegistrationStore.schema, AlarmStore.schema, AlertStore.schema, AlertSendStore.schema, ApiKeyStore.schema, GhostBusStore.schema,
        SurveyStore.schema, LiveActivityStore.schema, CoordinationStore.schema, ConsoleStore.schema, AuditLog.schema, RelayBinder.schema,
        RelayStore.schema, AlertSourceStore.schema, IdempotencyStore.schema, RegionSettingsStore.schema,
    ]

    /// The tables a migration list creates, in the order it creates them
    /// (so a table comes after every table it can reference), with whether
    /// each has an auto-assigned `id`; a dropped table is left out.
    static func tables(_ migrations: [Migration]) -> [DatabaseCopy.Table] {
        var tables: [DatabaseCopy.Table] = []
        for statement in migrations.sorted(by: { $0.version < $1.version }).flatMap(\.statements) {
            let words = statement.sqlite.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" }).map { $0.uppercased() }
            if words.count >= 3, words[0] == "CREATE", words[1] == "TABLE" {
                let name = (words[2] == "IF" && words.count >= 6 ? words[5] : words[2]).lowercased()
                // A table rebuilt under its own name (renamed away, created
                // again, copied, the old one dropped) keeps its place.
                guard !tables.contains(where: { $0.name == name }) else { continue }
                tables.append(DatabaseCopy.Table(name: name, hasID: statement.sqlite.contains("id INTEGER PRIMARY KEY")))
            } else if words.count >= 3, words[0] == "DROP", words[1] == "TABLE" {
                let name = (words[2] == "IF" && words.count >= 5 ? words[4] : words[2]).lowercased()
                tables.removeAll { $0.name == name }
            }
        }
        return tables
    }

    static func entry(_ version: Int, _ name: String, _ owners: Schema...) -> Migration {
        Migration(version: version, name: name, owners: owners.map(\.owner), statements: owners.flatMap { $0.changes[version] ?? [] })
    }
}
