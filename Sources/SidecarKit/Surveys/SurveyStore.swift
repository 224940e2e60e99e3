import Core
import Crypto
import Database
import FoundationEssentials

/// Storage of studies, surveys, their questions and responses.
struct SurveyStore: Sendable {
    let database: any Database

    init(database: any Database) { self.database = database }

    // MARK: Studies

    func createStudy(regionID: Int, name: String, description: String?, now: EpochSeconds) async throws -> Study {
        let id = try await database.write { connection in
            try connection.queryOne(
                "INSERT INTO studies (id, region_id, name, description, created_at) VALUES (\(try Self.nextID(connection, "studies")), \(Int64(regionID)), \(name), \(description), \(now)) RETURNING id"
            )?.int("id") ?? 0
        }
        return Study(id: id, regionID: regionID, name: name, description: description, createdAt: now)
    }

    func studies(regionID: Int? = nil) async throws -> [Study] {
        try await database.read { connection in
            try connection.query("SELECT * FROM studies WHERE \(Int64(regionID ?? -1)) < 0 OR region_id = \(Int64(regionID ?? -1)) ORDER BY id").map(
                Self.study)
        }
    }

    static func study(_ row: Row) throws -> Study {
        Study(
            id: try row.int("id"), regionID: try row.count("region_id"), name: try row.string("name"),
            description: try row.optionalString("description"),
            createdAt: try row.seconds("created_at"), updatedAt: try row.optionalSeconds("updated_at"))
    }

    // MARK: Surveys

    /// Surveys of a region (or all) with their questions.
    func surveys(regionID: Int? = nil) async throws -> [Survey] {
        try await database.read { connection in
            let rows = try connection.query(
                "SELECT * FROM surveys WHERE \(Int64(regionID ?? -1)) < 0 OR region_id = \(Int64(regionID ?? -1)) ORDER BY id")
            return try rows.map { try Self.survey($0, connection) }
        }
    }

    func survey(id: Int64) async throws -> Survey? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM surveys WHERE id = \(id)").map { try Self.survey($0, connection) }
        }
    }

    func study(id: Int64) async throws -> Study? {
        try await database.read { connection in try connection.queryOne("SELECT * FROM studies WHERE id = \(id)").map(Self.study) }
    }

    /// Renames or redescribes a study; nil when there is no such study.
    func updateStudy(id: Int64, name: String, description: String?, now: EpochSeconds) async throws -> Study? {
        try await database.write { connection in
            try connection.queryOne(
                "UPDATE studies SET name = \(name), description = \(description), updated_at = \(now) WHERE id = \(id) RETURNING *"
            ).map(Self.study)
        }
    }

    /// How many responses a survey has.
    func responseCount(surveyID: Int64) async throws -> Int {
        try await database.read { connection in try Self.responseCount(connection, surveyID: surveyID) }
    }

    /// A response by its public id, with its row id.
    func response(publicID: String) async throws -> (id: Int64, response: StoredResponse)? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM survey_responses WHERE public_id = \(publicID)").map {
                (try $0.int("id"), try StoredResponse.read($0))
            }
        }
    }

    /// Inserts or replaces a survey. Questions with an id keep it; new ones
    /// get one. A survey with responses keeps its questions: changing them
    /// throws `SurveyStoreError.questionsFrozen`.
    func save(_ survey: Survey, now: EpochSeconds) async throws -> Survey {
        try await database.write { connection in
            guard try connection.queryOne("SELECT 1 AS ok FROM studies WHERE id = \(survey.studyID)") != nil else {
                throw SurveyStoreError.unknownStudy(survey.studyID)
            }
            var saved = survey
            saved.updatedAt = now
            var fields = Self.fields(survey)
            fields.set("updated_at", now)
            if survey.id == 0 {
                saved.createdAt = now
                fields.set("id", try Self.nextID(connection, "surveys"))
                saved.id =
                    try connection.queryOne(
                        """
                        INSERT INTO surveys (\(fields.columns), created_at) VALUES (\(fields.values), \(now)) RETURNING id
                        """)?.int("id") ?? 0
            } else {
                let existing = try connection.queryOne("SELECT * FROM surveys WHERE id = \(survey.id)").map { try Self.survey($0, connection) }
                guard let existing else { throw SurveyStoreError.notFound }
                let responses = try Self.responseCount(connection, surveyID: survey.id)
                if responses > 0 && !Self.sameQuestions(existing.questions, survey.questions) {
                    throw SurveyStoreError.questionsFrozen(responses: responses)
                }
                saved.createdAt = existing.createdAt
                try connection.execute("UPDATE surveys SET \(fields.assignments) WHERE id = \(survey.id)")
                if responses > 0 { return saved }
                let kept = survey.questions.map(\.id).filter { $0 != 0 }
                for old in existing.questions where !kept.contains(old.id) {
                    try connection.execute("DELETE FROM survey_questions WHERE id = \(old.id)")
                }
            }
            var questions: [SurveyQuestion] = []
            for question in survey.questions {
                var stored = question
                let content = String(decoding: JSONValue.object(question.content).encoded(), as: UTF8.self)
                if question.id != 0,
                    try connection.execute(
                        "UPDATE survey_questions SET position = \(Int64(question.position)), required = \(question.required), content = \(content) WHERE id = \(question.id) AND survey_id = \(saved.id)"
                    ) > 0
                {
                    questions.append(stored)
                    continue
                }
                stored.id =
                    try connection.queryOne(
                        "INSERT INTO survey_questions (id, survey_id, position, required, content) VALUES (\(try Self.nextID(connection, "survey_questions")), \(saved.id), \(Int64(question.position)), \(question.required), \(content)) RETURNING id"
                    )?.int("id") ?? 0
                questions.append(stored)
            }
            saved.questions = questions
            return saved
        }
    }

    /// Deletes a survey that has no responses.
    func delete(id: Int64) async throws {
        _ = try await database.write { connection in
            guard try connection.queryOne("SELECT 1 AS ok FROM surveys WHERE id = \(id)") != nil else { throw SurveyStoreError.notFound }
            let responses = try Self.responseCount(connection, surveyID: id)
            guard responses == 0 else { throw SurveyStoreError.hasResponses(responses) }
            try connection.execute("DELETE FROM survey_questions WHERE survey_id = \(id)")
            try connection.execute("DELETE FROM surveys WHERE id = \(id)")
        }
    }

    /// The columns an author sets, for an insert and an update alike.
    static func fields(_ survey: Survey) -> SQLFields {
        var fields = SQLFields()
        fields.set("region_id", survey.regionID)
        fields.set("study_id", survey.studyID)
        fields.set("name", survey.name)
        fields.set("available", survey.available)
        fields.set("start_date", survey.startDate)
        fields.set("end_date", survey.endDate)
        fields.set("show_on_map", survey.showOnMap)
        fields.set("show_on_stops", survey.showOnStops)
        fields.set("always_visible", survey.alwaysVisible)
        fields.set("allows_multiple_responses", survey.allowsMultipleResponses)
        fields.set("visible_stop_list", encode(survey.visibleStopList))
        fields.set("visible_route_list", encode(survey.visibleRouteList))
        fields.set("require_stop_id_in_response", survey.requireStopIDInResponse)
        return fields
    }

    static func sameQuestions(_ lhs: [SurveyQuestion], _ rhs: [SurveyQuestion]) -> Bool {
        lhs.count == rhs.count && zip(lhs.sorted { $0.id < $1.id }, rhs.sorted { $0.id < $1.id }).allSatisfy { $0 == $1 }
    }

    static func responseCount(_ connection: any SQLConnection, surveyID: Int64) throws -> Int {
        Int(try connection.queryOne("SELECT COUNT(*) AS n FROM survey_responses WHERE survey_id = \(surveyID)")?.int("n") ?? 0)
    }

    static func survey(_ row: Row, _ connection: any SQLConnection) throws -> Survey {
        let id = try row.int("id")
        let questions = try connection.query("SELECT * FROM survey_questions WHERE survey_id = \(id) ORDER BY position, id").map { question in
            let content: [String: JSONValue]
            if case .object(let object)? = try? JSONValue(parsing: (question.string("content")).utf8) {
                content = object
            } else {
                content = [:]
            }
            return SurveyQuestion(
                id: try question.int("id"), position: Int(try question.int("position")), required: try question.bool("required"), content: content)
        }
        return Survey(
            id: id, regionID: Int(try row.int("region_id")), studyID: try row.int("study_id"), name: try row.string("name"),
            available: try row.bool("available"), startDate: try row.optionalSeconds("start_date"), endDate: try row.optionalSeconds("end_date"),
            showOnMap: try row.bool("show_on_map"), showOnStops: try row.bool("show_on_stops"), alwaysVisible: try row.bool("always_visible"),
            allowsMultipleResponses: try row.bool("allows_multiple_responses"),
            visibleStopList: decodeList(try row.optionalString("visible_stop_list")),
            visibleRouteList: decodeList(try row.optionalString("visible_route_list")),
            requireStopIDInResponse: try row.bool("require_stop_id_in_response"),
            questions: questions, createdAt: try row.seconds("created_at"), updatedAt: try row.optionalSeconds("updated_at") ?? 0)
    }

    // MARK: Responses

    func createResponse(
        surveyID: Int64, userIdentifier: String, stopIdentifier: String?, stopLatitude: Double?, stopLongitude: Double?,
        answers: [[String: JSONValue]], now: EpochSeconds
    ) async throws -> StoredResponse {
        let publicID = SecureToken.hex(bytes: 10)
        _ = try await database.write { connection in
            try connection.execute(
                """
                INSERT INTO survey_responses (public_id, survey_id, user_identifier, stop_identifier, stop_latitude, stop_longitude, responses, created_at, updated_at)
                VALUES (\(publicID), \(surveyID), \(userIdentifier), \(stopIdentifier), \(stopLatitude), \(stopLongitude), \(Self.encode(answers)), \(now), \(now))
                """)
        }
        return StoredResponse(
            publicID: publicID, surveyID: surveyID, userIdentifier: userIdentifier, answers: answers, stopIdentifier: stopIdentifier,
            stopLatitude: stopLatitude, stopLongitude: stopLongitude, createdAt: now, updatedAt: now)
    }

    /// Merges answers into a stored response by `question_id`; nil when unknown.
    func amendResponse(publicID: String, answers: [[String: JSONValue]], now: EpochSeconds) async throws -> StoredResponse? {
        try await database.write { connection in
            guard let row = try connection.queryOne("SELECT * FROM survey_responses WHERE public_id = \(publicID)") else { return nil }
            var stored = try StoredResponse.read(row)
            let merged = SurveyRules.merge(stored: stored.answers, incoming: answers)
            if let problem = SurveyRules.answersTooLarge(merged.map(JSONValue.object)) { throw ValidationFailure([problem]) }
            try connection.execute(
                "UPDATE survey_responses SET responses = \(Self.encode(merged)), updated_at = \(now) WHERE public_id = \(publicID)")
            stored.answers = merged
            stored.updatedAt = now
            return stored
        }
    }

    func responseExists(publicID: String) async throws -> Bool {
        try await database.read { connection in
            try connection.queryOne("SELECT 1 AS ok FROM survey_responses WHERE public_id = \(publicID)") != nil
        }
    }

    /// A page of a survey's responses in id order after `after`, created
    /// between `from` and `to` (epoch seconds, inclusive) when given.
    func responses(surveyID: Int64, after: Int64, from: EpochSeconds?, to: EpochSeconds?, limit: Int) async throws -> [(
        id: Int64, response: StoredResponse
    )] {
        let from = from ?? EpochSeconds(.min), to = to ?? EpochSeconds(.max)
        return try await database.read { connection in
            try connection.query(
                """
                SELECT * FROM survey_responses WHERE survey_id = \(surveyID) AND id > \(after) AND created_at >= \(from) AND created_at <= \(to)
                ORDER BY id LIMIT \(Int64(limit))
                """
            ).map { (try $0.int("id"), try StoredResponse.read($0)) }
        }
    }

    func responses(surveyID: Int64) async throws -> [StoredResponse] {
        try await database.read { connection in
            try connection.query("SELECT * FROM survey_responses WHERE survey_id = \(surveyID) ORDER BY id").map(StoredResponse.read)
        }
    }

    // MARK: For an export and an import

    /// A region's studies with their surveys (and questions), oldest first.
    static func studiesWithSurveys(_ connection: any SQLConnection, regionID: Int) throws -> [(study: Study, surveys: [Survey])] {
        try connection.query("SELECT * FROM studies WHERE region_id = \(regionID) ORDER BY id").map { row in
            let study = try study(row)
            let surveys = try connection.query("SELECT * FROM surveys WHERE study_id = \(study.id) ORDER BY id").map { try survey($0, connection) }
            return (study, surveys)
        }
    }

    /// Every response to a region's surveys, oldest first.
    static func responses(_ connection: any SQLConnection, regionID: Int) throws -> [StoredResponse] {
        try connection.query(
            """
            SELECT r.* FROM survey_responses r JOIN surveys s ON s.id = r.survey_id WHERE s.region_id = \(regionID) ORDER BY r.id
            """
        ).map(StoredResponse.read)
    }

    /// What a row of `table` (studies, surveys, survey_questions) with this
    /// id belongs to: the value of `column` (its region, study or survey).
    static func owner(_ connection: any SQLConnection, of kind: Kind, id: Int64) throws -> Int64? {
        try connection.queryOne("SELECT \(raw: kind.ownerColumn) AS owner FROM \(raw: kind.table) WHERE id = \(id)")?.int("owner")
    }

    /// The rows an import checks before it adds, by what they belong to.
    enum Kind {
        case studyRegion, surveyStudy, surveyRegion, questionSurvey
        var table: String {
            switch self {
            case .studyRegion: "studies"
            case .surveyStudy, .surveyRegion: "surveys"
            case .questionSurvey: "survey_questions"
            }
        }
        var ownerColumn: String {
            switch self {
            case .studyRegion, .surveyRegion: "region_id"
            case .surveyStudy: "study_id"
            case .questionSurvey: "survey_id"
            }
        }
    }

    static func responseExists(_ connection: any SQLConnection, publicID: String) throws -> Bool {
        try connection.queryOne("SELECT 1 AS found FROM survey_responses WHERE public_id = \(publicID)") != nil
    }

    /// Adds rows as they were exported, ids kept (an import).
    static func insertImported(_ connection: any SQLConnection, study: Study) throws {
        try connection.execute(
            """
            INSERT INTO studies (id, region_id, name, description, created_at, updated_at)
            VALUES (\(study.id), \(study.regionID), \(study.name), \(study.description), \(study.createdAt), \(study.updatedAt))
            """)
    }

    static func insertImported(_ connection: any SQLConnection, survey: Survey) throws {
        var fields = fields(survey)
        fields.set("id", survey.id)
        fields.set("created_at", survey.createdAt)
        fields.set("updated_at", survey.updatedAt)
        try connection.execute("INSERT INTO surveys (\(fields.columns)) VALUES (\(fields.values))")
    }

    static func insertImported(_ connection: any SQLConnection, question: SurveyQuestion, surveyID: Int64) throws {
        let content = String(decoding: JSONValue.object(question.content).encoded(), as: UTF8.self)
        try connection.execute(
            """
            INSERT INTO survey_questions (id, survey_id, position, required, content)
            VALUES (\(question.id), \(surveyID), \(question.position), \(question.required), \(content))
            """)
    }

    static func insertImported(_ connection: any SQLConnection, response: StoredResponse) throws {
        try connection.execute(
            """
            INSERT INTO survey_responses (public_id, survey_id, user_identifier, stop_identifier, stop_latitude, stop_longitude, responses,
                created_at, updated_at)
            VALUES (\(response.publicID), \(response.surveyID), \(response.userIdentifier), \(response.stopIdentifier), \(response.stopLatitude),
                \(response.stopLongitude), \(encode(response.answers)), \(response.createdAt), \(response.updatedAt))
            """)
    }

    /// After rows were written with ids of their own, new ones continue after them.
    static func advanceIdentities(_ connection: any SQLConnection) throws {
        for table in sequencedTables {
            try connection.advanceIdentity(table: table)
            try connection.execute(
                """
                UPDATE survey_id_sequences SET last_id = (SELECT MAX(id) FROM \(raw: table))
                WHERE name = \(table) AND last_id < (SELECT COALESCE(MAX(id), 0) FROM \(raw: table))
                """)
        }
    }

    // MARK: Ids

    /// The tables whose ids come from `survey_id_sequences`, in the order
    /// `sidecar sequence show` lists them: ids are never reused (SQLite
    /// would hand the largest out again after a delete) and can be moved
    /// past another server's before its content is imported.
    static let sequencedTables = ["studies", "surveys", "survey_questions"]

    static func nextID(_ connection: any SQLConnection, _ table: String) throws -> Int64 {
        guard
            let id = try connection.queryOne("UPDATE survey_id_sequences SET last_id = last_id + 1 WHERE name = \(table) RETURNING last_id")?
                .optionalInt("last_id")
        else { throw DatabaseError.failed(code: 0, message: "survey_id_sequences has no row for \(table)") }
        return id
    }

    /// The last id handed out of each sequenced table.
    static func sequences(_ connection: any SQLConnection) throws -> [(table: String, lastID: Int64)] {
        try sequencedTables.map { table in
            (table, try connection.queryOne("SELECT last_id FROM survey_id_sequences WHERE name = \(table)")?.int("last_id") ?? 0)
        }
    }

    /// Raises each sequence below `minimum` to it (the next id is then
    /// `minimum + 1`); one above it is left alone.
    static func raiseSequences(_ connection: any SQLConnection, to minimum: Int64) throws {
        try connection.execute("UPDATE survey_id_sequences SET last_id = \(minimum) WHERE last_id < \(minimum)")
    }

}
