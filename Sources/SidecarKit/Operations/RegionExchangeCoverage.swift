/// What a region's export carries, table by table: every table of the
/// schema is here, either with the document member that carries its rows or
/// with why it stays on the server. A test fails when a feature adds a
/// table without deciding (`CentralListTests`), so a move to another server
/// never drops a kind of data silently.
extension RegionExchange {
    enum Coverage: Sendable, Equatable {
        /// Carried by this member of a `sidecar-export/1` document.
        case exported(member: String)
        /// Not carried, and why.
        case kept(reason: String)
    }

    static let coverage: [String: Coverage] = [
        "alerts": .exported(member: "alerts"),
        "alert_translations": .exported(member: "alerts[].translations"),
        "alert_sources": .exported(member: "alert_sources"),
        "source_alerts": .exported(member: "alert_sources[].alerts"),
        "studies": .exported(member: "studies"),
        "surveys": .exported(member: "studies[].surveys"),
        "survey_questions": .exported(member: "studies[].surveys[].questions"),
        "survey_responses": .exported(member: "survey_responses"),
        "push_registrations": .exported(member: "push_registrations"),
        "ghost_bus_reports": .exported(member: "ghost_bus_reports"),
        "region_settings": .kept(reason: "the agency id travels on the alerts and is adopted by an import; the time zone is set on the new server"),
        "alarms": .kept(reason: "not in sidecar-export/1: an alarm is for one trip of one day, and the apps set it again"),
        "live_activities": .kept(reason: "not in sidecar-export/1: a Live Activity lasts hours and its token is the activity's own"),
        "alert_sends": .kept(reason: "a send's progress belongs to the server that ran it"),
        "approval_requests": .kept(reason: "who approved what on this server: its audit log keeps the record"),
        "alert_schedules": .kept(reason: "sends planned on this server: scheduled again after a move, so none goes twice"),
        "alert_send_pending": .kept(reason: "a send's progress belongs to the server that ran it"),
        "alert_feed_versions": .kept(reason: "derived from the alerts: the new server versions its own feed"),
        "alert_id_sequence": .kept(reason: "the importing server's own numbering, moved past every imported id"),
        "survey_id_sequences": .kept(reason: "the importing server's own numbering, moved past every imported id"),
        "api_keys": .kept(reason: "credentials are made on each server, never carried in a file"),
        "audit_log": .kept(reason: "this server's own record of who changed what"),
        "console_users": .kept(reason: "this server's console accounts; made again with sidecar user create"),
        "console_sessions": .kept(reason: "this server's signed-in browsers"),
        "console_secrets": .kept(reason: "this server's signing secrets"),
        "console_spent_tokens": .kept(reason: "this server's used single-use forms"),
        "admin_idempotency": .kept(reason: "answers kept for a day so a retried request is not done twice"),
        "leases": .kept(reason: "coordination among this server's instances"),
        "rate_limits": .kept(reason: "coordination among this server's instances"),
        "shared_documents": .kept(reason: "coordination among this server's instances"),
        "relay_bound_tokens": .kept(reason: "the relay's own table"),
    ]
}
