import Core
import GTFSRealtime

/// What an administrator asked for that cannot be done.
enum AdministrationError: Error, Equatable {
    case notFound(String)
    case invalid([String])
    /// The caller may not do this (403).
    case forbidden(String)
    /// `If-Match` named an older version; the current ETag (412).
    case stale(String)
    /// The region asks a second person to approve this: the request waits (202).
    case approvalPending(requestID: Int64, message: String)

    var messages: [String] {
        switch self {
        case .notFound(let message): return [message]
        case .invalid(let messages): return messages
        case .forbidden(let message): return [message]
        case .stale(let etag):
            return ["It changed since you read it (its ETag is now \(etag)); read it again and reapply your change"]
        case .approvalPending(_, let message): return [message]
        }
    }
}

/// The authoring operations, shared by the CLI and the admin HTTP API so
/// both validate the same way.
struct AlertAdministration: Sendable {
    let store: AlertStore
    let regions: RegionDirectory
    let clock: any WallClock
    /// Set in the server process so its feed changes at once.
    let cache: AlertFeedCache?
    /// The languages a translation may be in (`--locales`): the ones a
    /// registration's locale can normalise into.
    var catalog = LocaleCatalog.standard
    /// Where changes are recorded, and under whose name.
    var audit: AuditLog? = nil
    var actor = "system"
    /// Checks a scope's routes, stops and trips against the region's
    /// OneBusAway server (nil: not checked, as in the demo's own seeding).
    var scopeChecker: (any AlertScopeChecker)? = nil

    /// An alert as saved, with what the save could not check; it reads as
    /// the alert itself (`saved.id`).
    @dynamicMemberLookup
    struct Saved: Sendable {
        let alert: ServiceAlert
        /// Said to whoever saved it (the form, the API's answer, the CLI's standard error).
        let warnings: [String]

        subscript<Value>(dynamicMember keyPath: KeyPath<ServiceAlert, Value>) -> Value { alert[keyPath: keyPath] }
    }

    /// The same operations, recorded as done by `actor`.
    func acting(as actor: String) -> AlertAdministration {
        var copy = self
        copy.actor = actor
        return copy
    }

    func record(_ action: String, region: Int?, target: String?, detail: String? = nil) async {
        await audit?.record(actor: actor, action: action, regionID: region, target: target, detail: detail, now: now)
    }

    /// The authoring fields of a change, for the audit log (values abbreviated).
    static func summary(_ fields: [String: String]) -> String {
        fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.count > 60 ? String($0.value.prefix(60)) + "…" : $0.value)" }
            .joined(separator: "; ")
    }

    var now: EpochSeconds { clock.nowSeconds }

    func region(_ id: Int) throws(AdministrationError) -> Region {
        guard let region = regions.region(id: id) else { throw .notFound("No region \(id) in the regions directory") }
        return region
    }

    /// Regions from the directory with their settings.
    func regionList() async throws -> [(region: Region, settings: RegionSettings?)] {
        let settings = try await RegionSettingsStore(database: store.database).all()
        return regions.all.map { ($0, settings[$0.id]) }
    }

    func setRegion(
        id: Int, agencyID: String?, timezone: String?, fixedOffset: Bool = false, pushPace: String? = nil, requireApproval: String? = nil,
        clearsAgency: Bool = false
    ) async throws
        -> RegionSettings
    {
        _ = try region(id)
        var messages: [String] = []
        var approval: Bool?
        if let requireApproval {
            if let value = BooleanParameter.read(requireApproval) {
                approval = value
            } else {
                messages.append("require_approval must be true or false")
            }
        }
        var pace: Int?
        if let pushPace {
            switch AlertSendPacing.parse(pushPace) {
            case .success(let value): pace = value
            case .failure(let failure): messages += failure.messages
            }
        }
        var zone: String??
        if let timezone {
            switch Self.timeZone(timezone, fixedOffset: fixedOffset) {
            case .success(let name): zone = .some(name)
            case .failure(let failure): messages += failure.messages
            }
        }
        if let agencyID, agencyID.presence == nil { messages.append("agency id can't be blank") }
        messages += FieldLimits.check([("agency id", agencyID, FieldLimits.identifier)])
        guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
        var settings = try await RegionSettingsStore(database: store.database).all()[id] ?? RegionSettings(regionID: id, agencyID: nil, timezone: nil)
        if let agencyID { settings.agencyID = agencyID.trimmingWhitespace() }
        if clearsAgency { settings.agencyID = nil }
        if let zone { settings.timezone = zone }
        if let pace { settings.pushPacePerMinute = pace }
        if let approval { settings.requiresApproval = approval }
        try await RegionSettingsStore(database: store.database).set(settings)
        await record(
            "region.set", region: id, target: "region \(id)",
            detail: Self.summary(
                [
                    "agency_id": clearsAgency ? "(cleared)" : agencyID, "timezone": timezone, "push_pace_per_minute": pace.map(String.init),
                    "require_approval": approval.map { String($0) },
                ].compactMapValues { $0 }))
        return settings
    }

    /// A time zone as the tz database names it (`America/Los_Angeles`), or
    /// nil for `none` (clears the region's zone: times then show in UTC);
    /// anything else is refused with the nearest name the database knows.
    /// An abbreviation (`PST`) is refused with the zone it usually means; a
    /// fixed-offset zone (`EST`, `MST`, `HST`: the same offset all year) only
    /// when `fixedOffset` says the region does not observe daylight time.
    static func timeZone(
        _ raw: String, fixedOffset: Bool = false, directory: String = ZoneInfo.defaultDirectory
    ) -> Result<String?, ValidationFailure> {
        let name = raw.trimmingWhitespace()
        if name.lowercased() == "none" { return .success(nil) }
        if ZoneCatalog.isGeographic(name), ZoneInfo.named(name, directory: directory) != nil { return .success(name) }
        let upper = name.uppercased()
        if fixedOffset, ZoneCatalog.fixedOffsetZones.contains(upper), ZoneInfo.named(upper, directory: directory) != nil {
            return .success(upper)
        }
        if let meant = ZoneCatalog.abbreviations[upper] {
            let fixed =
                ZoneCatalog.fixedOffsetZones.contains(upper)
                ? " If the region keeps \(upper) all year (no daylight time), say so and \(upper) is used as it is." : ""
            return .failure(
                ValidationFailure([
                    "time zone '\(name.prefix(16))' is an abbreviation, which names an offset and not a place: use \(meant), which follows daylight time as the region does.\(fixed)"
                ]))
        }
        let hint = ZoneCatalog.nearest(to: name, directory: directory).map { "; the nearest name in the tz database is \($0)" } ?? ""
        return .failure(
            ValidationFailure([
                "timezone '\(name.prefix(64))' is not a zone of the tz database (use a name such as America/Los_Angeles, or none to clear it)\(hint)"
            ]))
    }

    /// Creates a draft alert from authoring fields (`header`, `description`,
    /// `url`, `cause`, `effect`, `severity`, `start`, `end`, `test`, `agency_id`,
    /// `region_wide`).
    func create(regionID: Int, fields: [String: String]) async throws -> Saved {
        let region = try region(regionID)
        var messages: [String] = []
        if fields["header"]?.presence == nil { messages.append("Header can't be blank") }
        if fields["start"]?.presence == nil { messages.append("start is required (ISO 8601 with a UTC offset)") }
        let regionAgency = try await RegionSettingsStore(database: store.database).all()[regionID]?.agencyID
        let regionWide = fields["region_wide"].flatMap(BooleanParameter.read) == true
        let agency = regionWide ? "" : fields["agency_id"]?.presence ?? regionAgency
        if agency == nil {
            messages.append("agency_id is required: give one, or set region \(regionID)'s agency id first (its region settings)")
        }
        var alert = ServiceAlert(
            id: 0, regionID: regionID, agencyID: agency ?? "", header: "", description: "", url: nil,
            cause: .unknownCause, effect: .unknownEffect, severity: .warning, startsAt: 0, endsAt: nil,
            published: false, test: false, sourceVersion: 1, createdAt: now, updatedAt: now)
        messages += AlertInputRules.apply(fields, to: &alert).filter { !messages.contains($0) }
        guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
        let warnings = try await checkScope(alert, previous: [], region: region, fields: fields)
        let created = try await store.create(alert)
        cache?.invalidate(regionID: regionID)
        await record("alert.create", region: regionID, target: "alert \(created.id)", detail: Self.summary(fields))
        return Saved(alert: created, warnings: warnings)
    }

    func alert(id: Int64) async throws -> ServiceAlert {
        guard let alert = try await store.find(id: id) else { throw AdministrationError.notFound("No alert \(id)") }
        return alert
    }

    /// An alert this server may change: not one mirrored from a source,
    /// whose next poll would undo the change.
    func authored(id: Int64) async throws -> ServiceAlert {
        let alert = try await alert(id: id)
        if let sourceID = alert.sourceID {
            throw AdministrationError.invalid([
                "alert \(id) comes from source \(sourceID) and is changed there; 'sidecar source edit \(sourceID)' or 'sidecar source remove \(sourceID)' manage it here"
            ])
        }
        return alert
    }

    func edit(id: Int64, fields: [String: String]) async throws -> Saved {
        var alert = try await authored(id: id)
        var fields = fields
        // Back from region-wide to one agency: the region's, unless one is given.
        if fields["region_wide"].flatMap(BooleanParameter.read) == false, fields["agency_id"]?.presence == nil, alert.agencyID.isEmpty,
            let regionAgency = try await RegionSettingsStore(database: store.database).all()[alert.regionID]?.agencyID?.presence
        {
            fields["agency_id"] = regionAgency
        }
        let previous = alert.scope
        let messages = AlertInputRules.apply(fields, to: &alert)
        guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
        let warnings = try await checkScope(alert, previous: previous, region: try region(alert.regionID), fields: fields)
        let saved = try await save(alert)
        await record("alert.edit", region: saved.regionID, target: "alert \(id)", detail: Self.summary(fields))
        return Saved(alert: saved, warnings: warnings)
    }

    /// Publishes (after the publish-time checks: an error refuses it, the
    /// warnings not yet acknowledged come back) or withdraws an alert.
    func setPublished(id: Int64, _ published: Bool, approved: Bool = false) async throws -> Saved {
        var alert = try await authored(id: id)
        var warnings: [String] = []
        if published && !alert.published {
            let findings = try await publishChecks(alert, askingOneBusAway: true)
            let errors = findings.filter { $0.level == .error }
            guard errors.isEmpty else { throw AdministrationError.invalid(errors.map { "Not published: " + $0.message }) }
            if !approved { try await requireApproval(alert, .publish) }
            warnings = findings.filter { !alert.acknowledgedChecks.contains($0.code) }.map { "[\($0.code)] \($0.message)" }
        }
        if alert.published && !published { alert.withdrawnAt = now }
        if published { alert.withdrawnAt = nil }
        alert.published = published
        let saved = try await save(alert)
        await record(published ? "alert.publish" : "alert.unpublish", region: saved.regionID, target: "alert \(id)")
        return Saved(alert: saved, warnings: warnings)
    }

    /// Stores an edited alert and refreshes the region's feed.
    func save(_ alert: ServiceAlert) async throws -> ServiceAlert {
        let saved = try await store.update(alert, now: now)
        cache?.invalidate(regionID: saved.regionID)
        return saved
    }

    func delete(id: Int64) async throws {
        let alert = try await authored(id: id)
        guard try await store.delete(id: id, now: now) else { throw AdministrationError.notFound("No alert \(id)") }
        cache?.invalidate(regionID: alert.regionID)
        await record("alert.delete", region: alert.regionID, target: "alert \(id)", detail: alert.header)
    }

    /// The catalog language a tag names, normalised exactly as a
    /// registration's locale is (`es-MX` → `es`, `zh-TW` → `zh-Hant`), or
    /// the message refusing it (`Spanish`, `xx`, English).
    func catalogLanguage(_ raw: String) -> Result<String, ValidationFailure> {
        let tag = raw.trimmingWhitespace()
        let primary = tag.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init)
        if primary == "en" { return .failure(ValidationFailure(["English is the alert's own text; edit the alert instead"])) }
        guard tag.count <= 35, let language = catalog.normalize(tag) else {
            return .failure(
                ValidationFailure([
                    "language '\(tag.prefix(35))' is not one riders' phones can be matched to; use a tag of the translation catalog "
                        + "(\(catalog.languages.joined(separator: ", "))) or one that normalises to it, such as es-MX or zh-TW"
                ]))
        }
        return .success(language)
    }

    func translate(id: Int64, language: String, header: String?, description: String?) async throws -> AlertTranslation {
        let alert = try await authored(id: id)
        var messages: [String] = []
        var languageTag = ""
        switch catalogLanguage(language) {
        case .success(let tag): languageTag = tag
        case .failure(let failure): messages += failure.messages
        }
        messages += FieldLimits.check([("Header", header, FieldLimits.alertHeader), ("Description", description, FieldLimits.alertDescription)])
        // Riders who read the English get both; a translation must too.
        if !alert.description.isEmpty, description?.presence == nil {
            messages.append("Description can't be blank: the English has one, so riders reading this language need it too")
        }
        guard let header = header?.presence else { throw AdministrationError.invalid(messages + ["Header can't be blank"]) }
        guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
        let translation = try await store.translate(
            alertID: id, language: languageTag, header: header,
            description: description?.trimmingWhitespace() ?? "", now: now)
        cache?.invalidate(regionID: alert.regionID)
        await record("alert.translate", region: alert.regionID, target: "alert \(id)", detail: "language=\(languageTag); header=\(header)")
        return translation
    }

    func deleteTranslation(id: Int64, language: String) async throws {
        let alert = try await authored(id: id)
        guard try await store.deleteTranslation(alertID: id, language: language, now: now) else {
            throw AdministrationError.notFound("No \(language) translation of alert \(id)")
        }
        cache?.invalidate(regionID: alert.regionID)
        await record("alert.translation.delete", region: alert.regionID, target: "alert \(id)", detail: "language=\(language)")
    }

    /// The most languages a send's caller-supplied text may carry.
    static let maxMessageLanguages = 60

    /// Reads caller-supplied push text, `{"en": {"title": …, "body": …}, …}`:
    /// English is required (every language without its own gets it), each
    /// language must be one riders' locales normalise into, and titles and
    /// bodies follow the alert's length rules. nil when absent.
    func pushMessages(_ value: JSONValue?) throws(AdministrationError) -> AlertSend.Messages? {
        guard let value else { return nil }
        guard case .object(let languages) = value, !languages.isEmpty else {
            throw .invalid(["messages must be an object of languages, each {\"title\": …, \"body\": …}"])
        }
        guard languages.count <= Self.maxMessageLanguages else {
            throw .invalid(["messages has \(languages.count) languages; at most \(Self.maxMessageLanguages)"])
        }
        var problems: [String] = []
        var messages: AlertSend.Messages = [:]
        for (language, text) in languages.sorted(by: { $0.key < $1.key }) {
            let shown = String(language.prefix(35))
            let tag: String
            let primary = language.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).first
            switch primary == "en" ? .success("en") : catalogLanguage(language) {
            case .success(let found): tag = found
            case .failure(let failure):
                problems += failure.messages.map { "messages.\(shown): \($0)" }
                continue
            }
            guard case .object(let fields) = text, Set(fields.keys).isSubset(of: ["title", "body"]),
                case .string(let title)? = fields["title"]
            else {
                problems.append("messages.\(shown) must be {\"title\": text, \"body\": text} (title required)")
                continue
            }
            var body = ""
            if let given = fields["body"] {
                guard case .string(let text) = given else {
                    problems.append("messages.\(shown).body must be a string")
                    continue
                }
                body = text
            }
            problems += FieldLimits.check([
                ("messages.\(shown).title", title, FieldLimits.alertHeader), ("messages.\(shown).body", body, FieldLimits.alertDescription),
            ])
            if title.trimmingWhitespace().isEmpty { problems.append("messages.\(shown).title can't be blank") }
            if messages[tag] != nil { problems.append("messages names \(tag) twice") }
            messages[tag] = AlertSend.PushText(title: title.trimmingWhitespace(), body: body.trimmingWhitespace())
        }
        if problems.isEmpty && messages["en"] == nil {
            problems.append("messages needs an en entry: riders whose language has none get the English")
        }
        guard problems.isEmpty else { throw .invalid(problems) }
        return messages
    }

    /// The unfinished send for this alert and audience, or a new one.
    /// Everyone gets only published alerts; test devices may get a draft
    /// (to see it before riders do). Test alerts go to test devices only.
    /// Starts a send. `endedReason` is the editor's reason for pushing an
    /// alert whose shown period is over (recorded with the send).
    func startSend(
        id: Int64, audience: AlertSend.Audience, messages: AlertSend.Messages? = nil, endedReason: String? = nil, approved: Bool = false
    ) async throws -> (AlertSend, ServiceAlert) {
        let alert = try await alert(id: id)
        guard alert.published || audience == .test else {
            throw AdministrationError.invalid(["Publish the alert before sending it to everyone (a draft may go to test devices)"])
        }
        guard !alert.test || audience == .test else { throw AdministrationError.invalid(["A test alert can only be sent to the test audience"]) }
        if audience == .all && !approved { try await requireApproval(alert, .send) }
        let send = try await store.sends.startSend(alertID: id, audience: audience, messages: messages, now: now)
        let text = messages.map { "; caller's text in " + $0.keys.sorted().joined(separator: ",") } ?? ""
        let ended = endedReason.map { "; pushed after it ended: " + String($0.prefix(200)) } ?? ""
        await record(
            "alert.send", region: alert.regionID, target: "alert \(id)", detail: "audience=\(audience.rawValue); send \(send.id)\(text)\(ended)")
        return (send, alert)
    }

    /// Cancels a send of this alert that is under way; false when it is
    /// not running (finished, failed or cancelled already).
    func cancelSend(alertID: Int64, sendID: Int64) async throws -> Bool {
        let alert = try await alert(id: alertID)
        guard let send = try await store.sends.send(id: sendID), send.alertID == alertID else {
            throw AdministrationError.notFound("No send \(sendID) of alert \(alertID)")
        }
        guard try await store.sends.cancel(sendID: send.id, now: now) else { return false }
        await record("alert.send.cancel", region: alert.regionID, target: "alert \(alertID)", detail: "send \(sendID)")
        return true
    }
}
