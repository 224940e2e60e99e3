import Core
import HTTPServer

/// Studies, surveys and their responses in the admin API, within the key's
/// regions: the same authoring rules as the CLI and the console.
struct SurveyAdminRoutes: Sendable {
    let admin: AdminAPI
    let administration: SurveyAdministration
    let store: SurveyStore
    let zone: @Sendable (Int) async -> ZoneInfo

    /// The fields of a survey document (as `sidecar survey show` prints it).
    static let document: [String: AdminField] = [
        "id": .integer, "region_id": .integer, "study_id": .integer, "name": .text, "available": .boolean, "start_date": .text,
        "end_date": .text, "show_on_map": .boolean, "show_on_stops": .boolean, "always_visible": .boolean,
        "allows_multiple_responses": .boolean, "visible_stop_list": .list, "visible_route_list": .list,
        "require_stop_id_in_response": .boolean, "questions": .list,
    ]

    var routes: [Route] {
        let page = AdminConventions.paging
        let responses = page.merging(AdminConventions.timeFilter) { first, _ in first }
        return [
            admin.route("GET", "/regions/:region/studies", on: .region, accepts: page) { request, key in await studies(request, key) },
            admin.route("POST", "/regions/:region/studies", on: .region, accepts: ["name": .text, "description": .text], idempotent: true) {
                request, key in
                await createStudy(request, key)
            },
            admin.route("GET", "/regions/:region/surveys", on: .region, accepts: page) { request, key in await surveys(request, key) },
            admin.route("POST", "/regions/:region/surveys", on: .region, accepts: Self.document, idempotent: true) { request, key in
                await createSurvey(request, key)
            },
            admin.route("GET", "/surveys/:survey", on: .survey) { request, key in await show(request, key) },
            admin.route("PUT", "/surveys/:survey", on: .survey, accepts: Self.document) { request, key in await edit(request, key) },
            admin.route("DELETE", "/surveys/:survey", on: .survey) { request, key in await delete(request, key) },
            admin.route("POST", "/surveys/:survey/activate", on: .survey) { request, key in await setAvailable(request, key, true) },
            admin.route("POST", "/surveys/:survey/archive", on: .survey) { request, key in await setAvailable(request, key, false) },
            admin.route("PUT", "/surveys/:survey/question-order", on: .survey, accepts: ["question_ids": .list]) { request, key in
                await reorder(request, key)
            },
            admin.route("GET", "/surveys/:survey/responses", on: .survey, accepts: responses) { request, key in await listResponses(request, key) },
            admin.route("GET", "/surveys/:survey/responses.csv", on: .survey, accepts: AdminConventions.timeFilter) { request, key in
                await exportResponses(request, key)
            },
        ]
    }

    func acting(_ key: ApiKeyStore.Record) -> SurveyAdministration { administration.acting(as: AdminKeyRoutes.actor(key)) }

    static func study(_ study: Study) -> JSONValue {
        .object([
            "id": .integer(study.id), "region_id": .integer(Int64(study.regionID)), "name": .string(study.name),
            "description": study.description.map(JSONValue.string) ?? .null, "created_at": AdminJSON.time(study.createdAt),
        ])
    }

    /// The survey the path names, if the key may act on its region; with
    /// `If-Match` checked when the request changes it.
    func scoped(_ request: Request, _ key: ApiKeyStore.Record, changing: Bool = false) async throws -> Survey {
        guard let id = try? admin.id(request, .survey),
            let survey = try await AdminResolved.reuse(Survey.self, matching: { $0.id == id }, else: { try await store.survey(id: id) }),
            key.allows(region: survey.regionID)
        else { throw AdministrationError.notFound("No such survey") }
        if changing { try AdminConventions.checkIfMatch(request, current: SurveyRules.document(survey)) }
        return survey
    }

    func studies(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let page = try await admin.page(request, list: "studies:\(regionID)")
            return page.response(try await store.studies(regionID: regionID), request: request, id: \.id, json: Self.study)
        } catch { return admin.failure(error) }
    }

    func createStudy(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let study = try await acting(key).createStudy(
                regionID: try admin.regionID(request), name: request.parameters["name"], description: request.parameters["description"])
            return .json(201, Self.study(study))
        } catch { return admin.failure(error) }
    }

    func surveys(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let page = try await admin.page(request, list: "surveys:\(regionID)")
            return page.response(try await store.surveys(regionID: regionID), request: request, id: \.id, json: SurveyRules.document)
        } catch { return admin.failure(error) }
    }

    /// The request's JSON body as a document: JSON `null` clears a date or
    /// a list, which form fields cannot say.
    static func body(_ request: Request) throws(AdministrationError) -> JSONValue {
        guard request.mediaType == "application/json", let fields = try? Parameters.parseJSONObject(request.body) else {
            throw .invalid(["the body must be a JSON object (Content-Type: application/json), as GET /admin/api/surveys/{id} answers"])
        }
        return .object(fields)
    }

    func createSurvey(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            var document = try Self.body(request)
            if case .object(var fields) = document, fields["region_id"] == nil {
                fields["region_id"] = .integer(Int64(regionID))
                document = .object(fields)
            }
            let survey = try await acting(key).save(document: document, existing: nil, regionID: regionID)
            return AdminConventions.tagged(201, SurveyRules.document(survey))
        } catch { return admin.failure(error) }
    }

    func show(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do { return AdminConventions.tagged(200, SurveyRules.document(try await scoped(request, key))) } catch { return admin.failure(error) }
    }

    func edit(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let survey = try await scoped(request, key, changing: true)
            let saved = try await acting(key).save(document: try Self.body(request), existing: survey, regionID: survey.regionID)
            return AdminConventions.tagged(200, SurveyRules.document(saved))
        } catch { return admin.failure(error) }
    }

    func delete(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            try await acting(key).delete(try await scoped(request, key, changing: true))
            return .empty(204)
        } catch { return admin.failure(error) }
    }

    func setAvailable(_ request: Request, _ key: ApiKeyStore.Record, _ available: Bool) async -> Response {
        do {
            let survey = try await scoped(request, key, changing: true)
            return AdminConventions.tagged(200, SurveyRules.document(try await acting(key).setAvailable(survey, available)))
        } catch { return admin.failure(error) }
    }

    func reorder(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let survey = try await scoped(request, key, changing: true)
            guard case .array(let items)? = request.parameters.value("question_ids") else {
                throw AdministrationError.invalid(["question_ids is required: the survey's question ids in their new order"])
            }
            let ids = items.compactMap { if case .integer(let id) = $0 { id } else { nil } }
            guard ids.count == items.count else { throw AdministrationError.invalid(["question_ids must be a list of integers"]) }
            return AdminConventions.tagged(200, SurveyRules.document(try await acting(key).reorder(survey, questionIDs: ids)))
        } catch { return admin.failure(error) }
    }

    static func response(_ response: SurveyStore.StoredResponse) -> JSONValue {
        .object([
            "id": .string(response.publicID), "survey_id": .integer(response.surveyID), "user_identifier": .string(response.userIdentifier),
            "stop_identifier": response.stopIdentifier.map(JSONValue.string) ?? .null,
            "stop_latitude": response.stopLatitude.map(JSONValue.double) ?? .null,
            "stop_longitude": response.stopLongitude.map(JSONValue.double) ?? .null,
            "answers": .array(response.answers.map(JSONValue.object)), "created_at": AdminJSON.time(response.createdAt),
            "updated_at": AdminJSON.time(response.updatedAt),
        ])
    }

    func listResponses(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let survey = try await scoped(request, key)
            let range = try AdminConventions.timeRange(request)
            let page = try await admin.page(request, list: "responses:\(survey.id)")
            let rows = try await store.responses(surveyID: survey.id, after: page.after, from: range.from, to: range.to, limit: page.limit + 1)
            return page.response(rows, request: request, id: \.id, json: { Self.response($0.response) })
        } catch { return admin.failure(error) }
    }

    /// Streamed a page of rows at a time: a million responses never sit in memory.
    func exportResponses(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let survey = try await scoped(request, key)
            let range = try AdminConventions.timeRange(request)
            let zone = await zone(survey.regionID)
            let store = store
            return CSVDownload.response(filename: "survey-\(survey.id)-responses.csv") { write in
                try await store.responsesCSV(survey: survey, zone: zone, from: range.from, to: range.to, write: write)
            }
        } catch { return admin.failure(error) }
    }
}

extension SurveyAdminRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            admin: AdminAPI(context),
            administration: SurveyAdministration(
                store: context.stores.surveys, regions: context.regions, audit: context.stores.audit, clock: context.clock),
            store: context.stores.surveys, zone: { [context] in await context.zone(regionID: $0) })
    }
}
