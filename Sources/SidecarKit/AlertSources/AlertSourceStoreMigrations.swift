import Database

extension AlertSourceStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "AlertSourceStore",
        [
            22: [
                .table(
                    "alert_sources", withID: true,
                    """
                    region_id BIGINT NOT NULL,
                    url TEXT NOT NULL,
                    mode TEXT NOT NULL,
                    interval_seconds BIGINT NOT NULL,
                    push TEXT NOT NULL,
                    min_severity TEXT NOT NULL,
                    effects TEXT NOT NULL DEFAULT '',
                    scope TEXT NOT NULL,
                    quiet_start BIGINT,
                    quiet_end BIGINT,
                    audience TEXT NOT NULL,
                    flood_threshold BIGINT NOT NULL,
                    push_corrections BIGINT NOT NULL DEFAULT 0,
                    headers TEXT NOT NULL DEFAULT '',
                    allow_link_local BIGINT NOT NULL DEFAULT 0,
                    max_bytes BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    last_poll_at BIGINT,
                    state TEXT,
                    last_success_at BIGINT,
                    failing_since BIGINT,
                    last_error TEXT,
                    problems TEXT NOT NULL DEFAULT '',
                    etag TEXT,
                    last_modified TEXT,
                    failures BIGINT NOT NULL DEFAULT 0,
                    next_poll_at BIGINT NOT NULL DEFAULT 0,
                    baselined BIGINT NOT NULL DEFAULT 0,
                    alert_count BIGINT NOT NULL DEFAULT 0,
                    polls BIGINT NOT NULL DEFAULT 0,
                    not_modified BIGINT NOT NULL DEFAULT 0,
                    failed_polls BIGINT NOT NULL DEFAULT 0,
                    pushes BIGINT NOT NULL DEFAULT 0,
                    held_reason TEXT
                    """),
                .table(
                    "source_alerts",
                    """
                    source_id BIGINT NOT NULL,
                    entity_id TEXT NOT NULL,
                    alert_id BIGINT NOT NULL,
                    content_hash TEXT NOT NULL,
                    material_hash TEXT NOT NULL,
                    decision TEXT NOT NULL,
                    reason TEXT,
                    not_before BIGINT,
                    pushed_at BIGINT,
                    send_id BIGINT,
                    present BIGINT NOT NULL,
                    changed_at BIGINT NOT NULL,
                    PRIMARY KEY (source_id, entity_id)
                    """),
            ],
            24: [
                .same("ALTER TABLE source_alerts ADD COLUMN first_seen_at BIGINT"),
                .same("ALTER TABLE source_alerts ADD COLUMN hidden BIGINT NOT NULL DEFAULT 0"),
                .same("ALTER TABLE alert_sources ADD COLUMN allow_private BIGINT NOT NULL DEFAULT 0"),
                .same("ALTER TABLE alert_sources ADD COLUMN pushes_per_hour BIGINT NOT NULL DEFAULT 4"),
            ],
        ])
}
