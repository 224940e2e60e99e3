import Core
import FoundationEssentials
import HTTPServer

/// Studies, surveys and their responses in the Go reference's admin
/// contract (`/regions/{regionId}/studies|surveys|survey_responses`): the
/// reference's shapes (times with milliseconds, a survey's study inside
/// it), its strict survey document and its refusals, over the same
/// `SurveyAdministration` as `/admin/api`, the CLI and the console.
struct SurveyReferenceRoutes: Sendable {
    let api: ReferenceAdminAPI
    let administration: SurveyAdministration
    let store: SurveyStore

    /// The largest survey document, as the reference allows.
    static let maxDocument = 256 * 1024
    /// The most responses one list answers (the reference returns them all).
    static let listLimit = 10_000

    var routes: [Route] {
        [
            api.route("GET", "/regions/:regionId/studies", .operatorOrKey) { call in await studies(call) },
            api.route("POST", "/regions/:regionId/studies", .operatorOrKey) { call in await createStudy(call) },
            api.route("GET", "/regions/:regionId/studies/:studyId", .operatorOrKey) { call in await showStudy(call) },
            api.route("PATCH", "/regions/:regionId/studies/:studyId", .operatorOrKey) { call in await editStudy(call) },
            api.route("GET", "/regions/:regionId/surveys", .operatorOrKey) { call in await surveys(call) },
            api.route("POST", "/regions/:regionId/surveys", .operatorOrKey) { call in await createSurvey(call) },
            api.route("GET", "/regions/:regionId/surveys/:surveyId", .operatorOrKey) { call in await showSurvey(call) },
            api.route("PUT", "/regions/:regionId/surveys/:surveyId", .operatorOrKey) { call in await replaceSurvey(call) },
            api.route("DELETE", "/regions/:regionId/surveys/:surveyId", .operatorOrKey) { call in await deleteSurvey(call) },
            api.route("GET", "/regions/:regionId/surveys/:surveyId/responses", .operatorOrKey) { call in await responses(call) },
            api.route("GET", "/regions/:regionId/surveys/:surveyId/responses.csv", .operatorOrKey) { call in await responsesCSV(call) },
            api.route("GET", "/regions/:regionId/survey_responses/:publicId", .operatorOrKey) { call in await response(call) },
        ]
    }

    func acting(_ call: ReferenceAdminAPI.Call) -> SurveyAdministration { administration.acting(as: call.caller.actingName) }

    // MARK: Shapes

    static func json(_ study: Study) -> ReferenceJSON {
        .object([
            ("id", .integer(study.id)), ("name", .string(study.name)), ("description", .string(study.description ?? "")),
            ("created_at", .millisecondTime(study.createdAt)), ("updated_at", .millisecondTime(study.updatedAt ?? study.createdAt)),
        ])
    }

    static func list(_ values: [String]?) -> ReferenceJSON { values.map { .array($0.map(ReferenceJSON.string)) } ?? .null }

    /// The members a survey's document and its list entry share, in the reference's order.
    static func common(_ survey: Survey) -> [(String, ReferenceJSON)] {
        [
            ("name", .string(survey.name)), ("available", .bool(survey.available)), ("start_date", .millisecondTime(survey.startDate)),
            ("end_date", .millisecondTime(survey.endDate)), ("show_on_map", .bool(survey.showOnMap)), ("show_on_stops", .bool(survey.showOnStops)),
            ("always_visible", .bool(survey.alwaysVisible)), ("allows_multiple_responses", .bool(survey.allowsMultipleResponses)),
            ("visible_stop_list", list(survey.visibleStopList)), ("visible_route_list", list(survey.visibleRouteList)),
        ]
    }

    static func document(_ survey: Survey, study: Study) -> ReferenceJSON {
        .object(
            [("id", .integer(survey.id))] + common(survey) + [
                (
                    "questions",
                    .array(
                        survey.questions.map { question in
                            .object([
                                ("id", .integer(question.id)), ("position", .integer(question.position)), ("required", .bool(question.required)),
                                ("content", .value(.object(question.content))),
                            ])
                        })
                ),
                ("study", .object([("id", .integer(study.id)), ("name", .string(study.name)), ("description", .string(study.description ?? ""))])),
                ("created_at", .millisecondTime(survey.createdAt)), ("updated_at", .millisecondTime(survey.updatedAt)),
            ])
    }

    static func summary(_ survey: Survey, responses: Int) -> ReferenceJSON {
        .object(
            [("id", .integer(survey.id)), ("study_id", .integer(survey.studyID))] + common(survey) + [
                ("response_count", .integer(responses)), ("created_at", .millisecondTime(survey.createdAt)),
                ("updated_at", .millisecondTime(survey.updatedAt)),
            ])
    }

    static func json(_ id: Int64, _ response: SurveyStore.StoredResponse) -> ReferenceJSON {
        .object([
            ("id", .integer(id)), ("survey_id", .integer(response.surveyID)), ("public_id", .string(response.publicID)),
            ("user_identifier", .string(response.userIdentifier)), ("stop_identifier", .string(response.stopIdentifier ?? "")),
            ("stop_latitude", response.stopLatitude.map { .value(.double($0)) } ?? .null),
            ("stop_longitude", response.stopLongitude.map { .value(.double($0)) } ?? .null),
            (
                "answers",
                .array(
                    response.answers.map { answer in
                        .object(
                            ["question_id", "question_type", "question_label", "answer"].map { name in
                                (name, .value(answer[name] ?? (name == "question_id" ? .integer(0) : .string(""))))
                            })
                    })
            ),
            ("created_at", .millisecondTime(response.createdAt)), ("updated_at", .millisecondTime(response.updatedAt)),
        ])
    }

    // MARK: Studies

    func study(_ call: ReferenceAdminAPI.Call) async throws -> Study {
        let id = try call.pathID("studyId", named: "id")
        guard let study = try await store.study(id: id), study.regionID == call.regionID else {
            throw ReferenceFailure.status(404, "study not found")
        }
        return study
    }

    func studies(_ call: ReferenceAdminAPI.Call) async -> Response {
        do { return ReferenceAdminAPI.json(200, .array(try await store.studies(regionID: call.regionID).map(Self.json))) } catch {
            return api.failure(error, notFound: "study")
        }
    }

    func createStudy(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let body = try call.body()
            let name = try RegionReferenceRoutes.optionalString(body, "name")?.trimmingWhitespace() ?? ""
            guard !name.isEmpty else { throw ReferenceFailure.status(422, "name cannot be blank") }
            let description = try RegionReferenceRoutes.optionalString(body, "description")?.trimmingWhitespace()
            let study = try await acting(call).createStudy(regionID: call.regionID, name: name, description: description)
            return ReferenceAdminAPI.json(201, Self.json(study))
                .adding(header: "Location", "\(ReferenceAdminAPI.prefix)/regions/\(call.regionID)/studies/\(study.id)")
        } catch { return api.failure(error, notFound: "study", invalidStatus: 422) }
    }

    func showStudy(_ call: ReferenceAdminAPI.Call) async -> Response {
        do { return ReferenceAdminAPI.json(200, Self.json(try await study(call))) } catch { return api.failure(error, notFound: "study") }
    }

    func editStudy(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let study = try await study(call)
            let body = try call.body()
            let name = try RegionReferenceRoutes.optionalString(body, "name")?.trimmingWhitespace() ?? study.name
            guard !name.isEmpty else { throw ReferenceFailure.status(422, "name cannot be blank") }
            let description = try RegionReferenceRoutes.optionalString(body, "description")?.trimmingWhitespace() ?? study.description
            return ReferenceAdminAPI.json(200, Self.json(try await acting(call).editStudy(study, name: name, description: description)))
        } catch { return api.failure(error, notFound: "study", invalidStatus: 422) }
    }

    // MARK: Surveys

    /// The survey the path names, in the path's region, with its study.
    func survey(_ call: ReferenceAdminAPI.Call) async throws -> (survey: Survey, study: Study) {
        let id = try call.pathID("surveyId", named: "id")
        guard let survey = try await store.survey(id: id), survey.regionID == call.regionID, let study = try await store.study(id: survey.studyID)
        else { throw ReferenceFailure.status(404, "survey not found") }
        return (survey, study)
    }

    func surveys(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            var entries: [ReferenceJSON] = []
            for survey in try await store.surveys(regionID: call.regionID) {
                entries.append(Self.summary(survey, responses: try await store.responseCount(surveyID: survey.id)))
            }
            return ReferenceAdminAPI.json(200, .array(entries))
        } catch { return api.failure(error, notFound: "survey") }
    }

    func showSurvey(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let (survey, study) = try await survey(call)
            return ReferenceAdminAPI.json(200, Self.document(survey, study: study))
        } catch { return api.failure(error, notFound: "survey") }
    }

    func createSurvey(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let body = try SurveyReferenceDocument.read(call.request.body, limit: Self.maxDocument)
            guard case .integer(let studyID)? = body["study_id"] else { throw ReferenceFailure.status(422, "study_id is required") }
            let document = try SurveyReferenceDocument.authoring(body, regionID: call.regionID, studyID: studyID, existing: nil)
            guard let study = try await store.study(id: studyID), study.regionID == call.regionID else {
                throw ReferenceFailure.status(404, "study not found")
            }
            let saved = try await acting(call).save(document: document, existing: nil, regionID: call.regionID)
            return ReferenceAdminAPI.json(201, Self.document(saved, study: study))
                .adding(header: "Location", "\(ReferenceAdminAPI.prefix)/regions/\(call.regionID)/surveys/\(saved.id)")
        } catch { return api.failure(error, notFound: "survey", invalidStatus: 422) }
    }

    /// A whole replacement: what the document leaves out returns to its
    /// default. A survey with responses keeps its questions (409).
    func replaceSurvey(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let (survey, study) = try await survey(call)
            let body = try SurveyReferenceDocument.read(call.request.body, limit: Self.maxDocument)
            if body["study_id"] != nil {
                throw ReferenceFailure.status(422, "study_id cannot be changed; a survey cannot be moved between studies")
            }
            let document = try SurveyReferenceDocument.authoring(body, regionID: call.regionID, studyID: survey.studyID, existing: survey)
            var replaced = survey
            _ = SurveyRules.parse(document: document, into: &replaced)
            if try await store.responseCount(surveyID: survey.id) > 0, !SurveyStore.sameQuestions(survey.questions, replaced.questions) {
                throw ReferenceFailure.status(409, "survey questions are frozen")
            }
            let saved = try await acting(call).save(document: document, existing: survey, regionID: call.regionID)
            return ReferenceAdminAPI.json(200, Self.document(saved, study: study))
        } catch { return api.failure(error, notFound: "survey", invalidStatus: 422) }
    }

    func deleteSurvey(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let (survey, _) = try await survey(call)
            if try await store.responseCount(surveyID: survey.id) > 0 { throw ReferenceFailure.status(409, "survey has responses") }
            try await acting(call).delete(survey)
            return .empty(204)
        } catch { return api.failure(error, notFound: "survey") }
    }

    // MARK: Responses

    func responses(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let (survey, _) = try await survey(call)
            let rows = try await store.responses(surveyID: survey.id, after: 0, from: nil, to: nil, limit: Self.listLimit + 1)
            return ReferenceAdminAPI.list(rows, limit: Self.listLimit) { kept in
                kept.sorted { ($0.response.createdAt.value, $0.id) < ($1.response.createdAt.value, $1.id) }.map { Self.json($0.id, $0.response) }
            }
        } catch { return api.failure(error, notFound: "survey") }
    }

    /// Streamed a page of rows at a time.
    func responsesCSV(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let (survey, _) = try await survey(call)
            let store = store
            return CSVDownload.response(filename: "survey-\(survey.id)-responses.csv") { write in
                try await SurveyReferenceCSV.write(surveyID: survey.id, store: store, write)
            }
        } catch { return api.failure(error, notFound: "survey") }
    }

    func response(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let publicID = call.request.pathParameters["publicId"] ?? ""
            guard let found = try await store.response(publicID: publicID), let survey = try await store.survey(id: found.response.surveyID),
                survey.regionID == call.regionID
            else { return ReferenceAdminAPI.error(404, "response not found") }
            return ReferenceAdminAPI.json(200, Self.json(found.id, found.response))
        } catch { return api.failure(error, notFound: "response") }
    }
}

extension SurveyReferenceRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) {
        self.init(
            api: api,
            administration: SurveyAdministration(
                store: context.stores.surveys, regions: context.regions, audit: context.stores.audit, clock: context.clock),
            store: context.stores.surveys)
    }
}

extension SurveyReferenceRoutes: Feature {}
