import Database

extension AlertStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "AlertStore",
        [
            3: [
                .table(
                    "alerts", withID: true,
                    """
                    region_id BIGINT NOT NULL,
                    agency_id TEXT NOT NULL,
                    header TEXT NOT NULL,
                    description TEXT NOT NULL DEFAULT '',
                    url TEXT,
                    cause TEXT NOT NULL,
                    effect TEXT NOT NULL,
                    severity TEXT NOT NULL,
                    starts_at BIGINT NOT NULL,
                    ends_at BIGINT,
                    published BIGINT NOT NULL DEFAULT 0,
                    test BIGINT NOT NULL DEFAULT 0,
                    source_version BIGINT NOT NULL DEFAULT 1,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX alerts_region ON alerts (region_id, published, starts_at)"),
                .table(
                    "alert_translations",
                    """
                    alert_id BIGINT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
                    language TEXT NOT NULL,
                    header TEXT NOT NULL,
                    description TEXT NOT NULL DEFAULT '',
                    source_version BIGINT NOT NULL,
                    PRIMARY KEY (alert_id, language)
                    """),
                .table(
                    "alert_feed_versions",
                    """
                    region_id BIGINT PRIMARY KEY,
                    version BIGINT NOT NULL,
                    changed_at BIGINT NOT NULL
                    """),
            ],
            13: [
                .same("ALTER TABLE alert_translations ADD COLUMN source_header TEXT"),
                .same("ALTER TABLE alert_translations ADD COLUMN source_description TEXT"),
            ],
            16: [
                .same("ALTER TABLE alerts ADD COLUMN impact_starts_at BIGINT"),
                .same("ALTER TABLE alerts ADD COLUMN impact_ends_at BIGINT"),
            ],
            17: [
                .table(
                    "alert_id_sequence",
                    """
                    last_id BIGINT NOT NULL
                    """),
                .same("INSERT INTO alert_id_sequence (last_id) SELECT COALESCE(MAX(id), 0) FROM alerts"),
            ],
            19: [
                .same("ALTER TABLE alerts ADD COLUMN withdrawn_at BIGINT")
            ],
            22: [
                .same("ALTER TABLE alerts ADD COLUMN source_id BIGINT"),
                .same("ALTER TABLE alerts ADD COLUMN source_entity TEXT"),
                .engines(
                    sqlite: "ALTER TABLE alerts ADD COLUMN source_alert BLOB",
                    postgresql: "ALTER TABLE alerts ADD COLUMN source_alert BYTEA"),
                .same("ALTER TABLE alerts ADD COLUMN in_feed BIGINT NOT NULL DEFAULT 1"),
                .same("CREATE UNIQUE INDEX alerts_source_entity ON alerts (source_id, source_entity)"),
            ],
            28: [
                .same("ALTER TABLE alerts ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
            ],
            29: [
                .same("ALTER TABLE alerts ADD COLUMN acknowledged_checks TEXT NOT NULL DEFAULT ''")
            ],
        ])
}
