import Database

extension PushRegistrationStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "PushRegistrationStore",
        [
            // Apps register their token again on every launch, and each
            // registration moves `last_seen_at`. With that column indexed,
            // every re-registration wrote a new row version into all five
            // indexes; without it, PostgreSQL updates the row in place on its
            // page (a HOT update: no index touched), given room on the page,
            // which a fill factor of 90 leaves. The daily prune walks the
            // table by id instead (`PushRegistrationStore.prune`).
            35: [
                .same("DROP INDEX push_registrations_last_seen"),
                .postgresqlOnly("ALTER TABLE push_registrations SET (fillfactor = 90)"),
            ],
            // A send's pages read in id order without sorting the region.
            27: [.same("CREATE INDEX push_registrations_region_order ON push_registrations (region_id, id)")],
            // Tokens stored before the token rule that no provider issues.
            25: [TokenRuleSQL.removal("push_registrations", "token")],
            1: [
                .table(
                    "push_registrations", withID: true,
                    """
                    region_id BIGINT NOT NULL,
                    token TEXT NOT NULL,
                    operating_system TEXT NOT NULL CHECK (operating_system IN ('ios', 'android')),
                    locale TEXT,
                    raw_locale TEXT,
                    apns_sandbox BIGINT NOT NULL DEFAULT 0,
                    test_device BIGINT NOT NULL DEFAULT 0,
                    description TEXT,
                    created_at BIGINT NOT NULL,
                    last_seen_at BIGINT NOT NULL,
                    UNIQUE (region_id, token)
                    """),
                .same("CREATE INDEX push_registrations_last_seen ON push_registrations (last_seen_at)"),
                .same("CREATE INDEX push_registrations_audience ON push_registrations (region_id, test_device, id)"),
            ],
        ])
}
