import Core
import Database
import GTFSRealtime

/// How alerts and translations are read from rows and written as fields
/// (the SQL itself is in AlertStore.swift).
extension AlertStore {
    static let columns = """
        id, region_id, agency_id, header, description, url, cause, effect, severity, starts_at, ends_at, published, test, \
        source_version, created_at, updated_at, impact_starts_at, impact_ends_at, withdrawn_at, source_id, source_entity, in_feed, scope, acknowledged_checks
        """

    /// The columns an author sets, for an insert and an update alike.
    static func fields(_ alert: ServiceAlert) -> SQLFields {
        var fields = SQLFields()
        fields.set("region_id", alert.regionID)
        fields.set("agency_id", alert.agencyID)
        fields.set("header", alert.header)
        fields.set("description", alert.description)
        fields.set("url", alert.url)
        fields.set("cause", alert.cause.name)
        fields.set("effect", alert.effect.name)
        fields.set("severity", alert.severity.name)
        fields.set("starts_at", alert.startsAt)
        fields.set("ends_at", alert.endsAt)
        fields.set("published", alert.published)
        fields.set("test", alert.test)
        fields.set("impact_starts_at", alert.impactStartsAt)
        fields.set("impact_ends_at", alert.impactEndsAt)
        fields.set("scope", AlertScope.text(alert.scope))
        fields.set("acknowledged_checks", AlertPublishChecks.storedCodes(alert.acknowledgedChecks))
        return fields
    }

    static func alert(_ row: Row) throws -> ServiceAlert {
        ServiceAlert(
            id: try row.int("id"), regionID: Int(try row.int("region_id")), agencyID: try row.optionalString("agency_id") ?? "",
            header: try row.string("header"), description: try row.optionalString("description") ?? "", url: try row.optionalString("url"),
            cause: Cause(name: try row.string("cause")) ?? .unknownCause,
            effect: Effect(name: try row.string("effect")) ?? .unknownEffect,
            severity: SeverityLevel(name: try row.string("severity")) ?? .unknownSeverity,
            startsAt: try row.seconds("starts_at"), endsAt: try row.optionalSeconds("ends_at"), published: try row.bool("published"),
            test: try row.bool("test"), sourceVersion: Int(try row.int("source_version")),
            createdAt: try row.seconds("created_at"), updatedAt: try row.optionalSeconds("updated_at") ?? 0,
            impactStartsAt: try row.optionalSeconds("impact_starts_at"), impactEndsAt: try row.optionalSeconds("impact_ends_at"),
            withdrawnAt: try row.optionalSeconds("withdrawn_at"), sourceID: try row.optionalInt("source_id"),
            sourceEntity: try row.optionalString("source_entity"), inFeed: try row.bool("in_feed"),
            scope: try AlertScope.stored(try row.string("scope")),
            acknowledgedChecks: AlertPublishChecks.codes(try row.string("acknowledged_checks")))
    }

    static let translationColumns = "alert_id, language, header, description, source_version, source_header, source_description"

    static func translation(_ row: Row) throws -> AlertTranslation {
        AlertTranslation(
            language: try row.string("language"), header: try row.string("header"),
            description: try row.optionalString("description") ?? "", sourceVersion: Int(try row.int("source_version")),
            sourceHeader: try row.optionalString("source_header"), sourceDescription: try row.optionalString("source_description"))
    }

}

/// Storage outcomes a caller answers with a 4xx.
enum AlertStoreError: Error, Equatable {
    case notFound
    /// Another runner holds the send's lease for this many more seconds.
    case busy(retryAfter: Int64)
}
