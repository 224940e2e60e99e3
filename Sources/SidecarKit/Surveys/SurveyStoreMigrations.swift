import Database

extension SurveyStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "SurveyStore",
        [
            34: [
                .table(
                    "survey_id_sequences",
                    """
                    name TEXT PRIMARY KEY,
                    last_id BIGINT NOT NULL
                    """),
                .same("INSERT INTO survey_id_sequences (name, last_id) SELECT 'studies', COALESCE(MAX(id), 0) FROM studies"),
                .same("INSERT INTO survey_id_sequences (name, last_id) SELECT 'surveys', COALESCE(MAX(id), 0) FROM surveys"),
                .same("INSERT INTO survey_id_sequences (name, last_id) SELECT 'survey_questions', COALESCE(MAX(id), 0) FROM survey_questions"),
            ],
            5: [
                .table(
                    "studies", withID: true,
                    """
                    region_id BIGINT NOT NULL,
                    name TEXT NOT NULL,
                    description TEXT,
                    created_at BIGINT NOT NULL
                    """),
                .table(
                    "surveys", withID: true,
                    """
                    region_id BIGINT NOT NULL,
                    study_id BIGINT NOT NULL REFERENCES studies (id),
                    name TEXT NOT NULL,
                    available BIGINT NOT NULL DEFAULT 1,
                    start_date BIGINT,
                    end_date BIGINT,
                    show_on_map BIGINT NOT NULL DEFAULT 0,
                    show_on_stops BIGINT NOT NULL DEFAULT 0,
                    always_visible BIGINT NOT NULL DEFAULT 0,
                    allows_multiple_responses BIGINT NOT NULL DEFAULT 0,
                    visible_stop_list TEXT,
                    visible_route_list TEXT,
                    require_stop_id_in_response BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX surveys_region ON surveys (region_id)"),
                .table(
                    "survey_questions", withID: true,
                    """
                    survey_id BIGINT NOT NULL REFERENCES surveys (id),
                    position BIGINT NOT NULL,
                    required BIGINT NOT NULL DEFAULT 0,
                    content TEXT NOT NULL
                    """),
                .same("CREATE INDEX survey_questions_survey ON survey_questions (survey_id)"),
                .table(
                    "survey_responses", withID: true,
                    """
                    public_id TEXT NOT NULL UNIQUE,
                    survey_id BIGINT NOT NULL REFERENCES surveys (id),
                    user_identifier TEXT NOT NULL,
                    stop_identifier TEXT,
                    stop_latitude DOUBLE PRECISION,
                    stop_longitude DOUBLE PRECISION,
                    responses TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX survey_responses_survey ON survey_responses (survey_id)"),
            ],
            13: [
                .same("ALTER TABLE studies ADD COLUMN updated_at BIGINT")
            ],
            // Responses are paged and exported a survey at a time in id order.
            23: [
                .same("CREATE INDEX survey_responses_survey_id ON survey_responses (survey_id, id)")
            ],
        ])
}
