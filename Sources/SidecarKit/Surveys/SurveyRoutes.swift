import Core
import HTTPServer

/// `GET /api/v1/regions/{id}/surveys` and the survey-response routes (spec §7).
struct SurveyRoutes: Sendable {
    let store: SurveyStore
    let regions: RegionDirectory
    let clock: any WallClock
    let logger: Logger
    /// Response writes per minute per TCP peer.
    let limiter: FixedWindowRateLimiter

    var routes: [Route] {
        var routes = [
            Route("GET", "/api/v1/regions/:region/surveys", suffixes: [".json"], errorStyle: .legacy, handler: list),
            Route("POST", "/api/v1/survey_responses", suffixes: [".json"], errorStyle: .legacy, throttle: limiter, handler: create),
        ]
        for method in ["POST", "PUT", "PATCH"] {
            routes.append(
                Route(method, "/api/v1/survey_responses/:response", suffixes: [".json"], errorStyle: .legacy, throttle: limiter, handler: amend))
        }
        return routes
    }

    static func invalid(_ messages: [String]) -> Response { ErrorStyle.legacy.response(status: 422, error: "Invalid", messages: messages) }

    func list(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        guard request.parameters["user_id"]?.presence != nil else {
            return Self.invalid(["user_id is required"]).logging("region", String(region.id))
        }
        do {
            let now = clock.nowSeconds
            let surveys = try await store.surveys(regionID: region.id).filter { SurveyRules.isActive($0, now: now) }
            var studies: [Int64: Study] = [:]
            for study in try await store.studies(regionID: nil) { studies[study.id] = study }
            let served = surveys.compactMap { survey in studies[survey.studyID].map { SurveyRules.served(survey, study: $0) } }
            return Response.json(
                200,
                JSONValue.object([
                    "surveys": .array(served),
                    "region": .object(["id": .integer(Int64(region.id)), "name": .string(region.name)]),
                ])
            )
            .logging("region", String(region.id))
        } catch {
            logger.error("survey list failed", [("region", String(region.id)), ("error", "\(error)")])
            return Response.storageUnavailable(.legacy, summary: "Unavailable")
        }
    }

    static func responseBody(_ response: SurveyStore.StoredResponse) -> JSONValue {
        .object([
            "survey_response": .object([
                "id": .string(response.publicID), "user_identifier": .string(response.userIdentifier),
                "update_path": .string("/api/v1/survey_responses/\(response.publicID)"),
            ])
        ])
    }

    func create(_ request: Request) async -> Response {
        let parameters = request.parameters
        guard let surveyID = parameters["survey_id"].flatMap({ Int64($0.trimmingWhitespace()) }) else {
            return .json(404, ["error": "Couldn't find Survey"])
        }
        do {
            guard let survey = try await store.survey(id: surveyID) else { return .json(404, ["error": "Couldn't find Survey"]) }
            var messages: [String] = []
            let user = parameters.identifier("user_identifier")?.presence
            if user == nil { messages.append("User identifier can't be blank") }
            let stop = parameters["stop_identifier"]?.presence
            let latitude = parameters["stop_latitude"].flatMap { Double($0.trimmingWhitespace()) }
            let longitude = parameters["stop_longitude"].flatMap { Double($0.trimmingWhitespace()) }
            if stop != nil {
                if latitude == nil { messages.append("Stop latitude can't be blank") }
                if longitude == nil { messages.append("Stop longitude can't be blank") }
            } else if survey.requireStopIDInResponse {
                messages.append("Stop identifier can't be blank")
            }
            messages += FieldLimits.check([("User identifier", user, FieldLimits.identifier), ("Stop identifier", stop, FieldLimits.identifier)])
            let answers: [[String: JSONValue]]
            switch SurveyRules.answers(parameters.value("responses")) {
            case .success(let value): answers = value
            case .failure(let failure):
                messages += failure.messages
                answers = []
            }
            guard messages.isEmpty, let user else { return Self.invalid(messages) }
            let created = try await store.createResponse(
                surveyID: survey.id, userIdentifier: user, stopIdentifier: stop,
                stopLatitude: latitude, stopLongitude: longitude, answers: answers,
                now: clock.nowSeconds)
            return .json(201, Self.responseBody(created))
        } catch {
            logger.error("survey response write failed", [("error", "\(error)")])
            return Response.storageUnavailable(.legacy, summary: "Unavailable")
        }
    }

    func amend(_ request: Request) async -> Response {
        let publicID = request.pathParameters["response"] ?? ""
        let answers: [[String: JSONValue]]
        switch SurveyRules.answers(request.parameters.value("responses")) {
        case .success(let value): answers = value
        case .failure(let failure):
            // An unknown response is a 404 whatever was sent.
            guard (try? await store.responseExists(publicID: publicID)) == true else { return .json(404, ["error": "Couldn't find SurveyResponse"]) }
            return Self.invalid(failure.messages)
        }
        do {
            guard let amended = try await store.amendResponse(publicID: publicID, answers: answers, now: clock.nowSeconds) else {
                return .json(404, ["error": "Couldn't find SurveyResponse"])
            }
            return .json(200, Self.responseBody(amended))
        } catch let failure as ValidationFailure {
            return Self.invalid(failure.messages)
        } catch {
            logger.error("survey response amend failed", [("error", "\(error)")])
            return Response.storageUnavailable(.legacy, summary: "Unavailable")
        }
    }
}

extension SurveyRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            store: context.stores.surveys, regions: context.regions, clock: context.clock, logger: context.logger,
            limiter: context.limiter("survey_responses", limit: context.configuration.surveyResponseLimit))
    }
}
