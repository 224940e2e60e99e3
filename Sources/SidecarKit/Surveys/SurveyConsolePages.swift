import Core
import Database
import FoundationEssentials
import HTML
import HTTPServer

/// The console's survey pages: a region's surveys, the survey form, a
/// survey's responses and their CSV.
struct SurveyConsolePages: ConsolePages {
    let console: ConsoleRoutes
    let surveys: SurveyStore

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/surveys", .read) { request, context in await surveyList(request, context) },
            regionPage("GET", "/admin/regions/:region/surveys/new", .author) { _, context in
                await surveyForm(context, survey: nil, values: [:], problems: [])
            },
            regionPage("POST", "/admin/regions/:region/surveys", .author) { request, context in await saveSurvey(request, context, existing: nil) },
            surveyRoute("GET", "/admin/surveys/:survey", .read) { request, context, survey in await surveyPage(request, context, survey) },
            surveyRoute("POST", "/admin/surveys/:survey", .author) { request, context, survey in await saveSurvey(request, context, existing: survey)
            },
            surveyRoute("GET", "/admin/surveys/:survey/responses.csv", .read) { _, _, survey in
                let zone = await zone(regionID: survey.regionID)
                let surveys = surveys
                return CSVDownload.response(filename: "survey-\(survey.id)-responses.csv") { write in
                    try await surveys.responsesCSV(survey: survey, zone: zone, naming: .names, write: write)
                }
            },
        ]
    }

    /// A page of the survey in `:survey`, for a user allowed `action` in its region.
    func surveyRoute(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleLayout.Context, Survey) async -> Response
    ) -> Route {
        route(method, path, .session("\(action)")) { request in await withSurvey(request, action, handler) }
    }

    /// Runs `handler` with the survey the path names; one of a region the
    /// user may not see is answered as missing.
    func withSurvey(
        _ request: Request, _ action: ConsoleAction,
        _ handler: @escaping (Request, ConsoleLayout.Context, Survey) async -> Response
    ) async -> Response {
        let surveys = surveys
        return await withObject(
            request, action, parameter: "survey", section: .surveys, find: { try await surveys.survey(id: $0) }, regionOf: \.regionID, handler)
    }

    func surveyList(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        var listContext = context
        listContext.section = .surveys
        let zone = await zone(regionID: region.id)
        let list: [Survey]
        let studies: [Study]
        do {
            list = try await surveys.surveys(regionID: region.id)
            studies = try await surveys.studies(regionID: region.id)
        } catch { return unavailable(error) }
        var content: [any HTMLContent] = []
        if ConsoleRules.may(context.session.user.role, .author) {
            content.append(
                tag("p", [.class("actions")], [tag("a", [.href("/admin/regions/\(region.id)/surveys/new"), .class("button")], ["New survey"])]))
        }
        let now = now
        content.append(tag("p", [.class("hint")], [timesHint(zone)]))
        content.append(
            ConsoleLayout.table(
                caption: "Surveys", headers: ["Survey", "Study", "Questions", "Shown", "From", "Until"],
                rows: list.map { survey in
                    [
                        tag("a", [.href("/admin/surveys/\(survey.id)")], [survey.name]), studies.first { $0.id == survey.studyID }?.name ?? "—",
                        survey.questions.count,
                        SurveyRules.isActive(survey, now: now) ? "now" : "not now", RegionTime.display(survey.startDate, zone),
                        RegionTime.display(survey.endDate, zone),
                    ]
                        as [any HTMLContent]
                }, empty: "No surveys in this region yet."))
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): surveys", listContext, notice: Self.notice(request), content))
    }

    /// Question slots on the form: the survey's own and three empty ones.
    static func questionSlots(_ survey: Survey?) -> Int { min((survey?.questions.count ?? 0) + 3, FieldLimits.surveyQuestionCount) }

    func surveyForm(
        _ context: ConsoleLayout.Context, survey: Survey?, values: [String: String], problems: [String], status: Int = 200,
        heading: String? = nil
    ) async -> Response {
        guard let region = context.region else { return notFound() }
        var formContext = context
        formContext.section = .surveys
        let zone = await zone(regionID: region.id)
        let studies: [Study]
        do { studies = try await surveys.studies(regionID: region.id) } catch { return unavailable(error) }
        // Each problem in the form's words, on its field and in the summary.
        let placed = ConsoleFieldErrors.survey(problems, questionSlots: Self.filledSlots(values, slots: Self.questionSlots(survey)))
        let content: [any HTMLContent] = [
            ConsoleLayout.problems(placed.map(\.text), heading: heading),
            surveyFields(
                context.session, region: region, survey: survey, studies: studies, values: values, zone: zone,
                errors: ConsoleFieldErrors.byField(placed)),
        ]
        return ConsoleLayout.respond(status, ConsoleLayout.page(survey.map { "Edit survey \($0.id)" } ?? "New survey", formContext, content))
    }

    func surveyFields(
        _ session: ConsoleStore.Session, region: Region, survey: Survey?, studies: [Study], values: [String: String], zone: ZoneInfo,
        errors: [String: String] = [:]
    ) -> HTML {
        func value(_ name: String, _ current: String?) -> String { values[name] ?? current ?? "" }
        func flag(_ name: String, _ current: Bool) -> Bool { values.isEmpty ? current : values[name] == "true" }
        var questionFields: [any HTMLContent] = []
        for index in 0..<Self.questionSlots(survey) {
            let question = survey.flatMap { index < $0.questions.count ? $0.questions[index] : nil }
            let options: String = {
                guard case .array(let items)? = question?.content["options"] else { return "" }
                return items.compactMap(\.scalarText).joined(separator: "\n")
            }()
            questionFields.append(
                tag(
                    "fieldset", [.class("card")],
                    [
                        tag("legend", [], ["Question \(index + 1)\(question == nil ? " (leave empty to skip)" : "")"]),
                        tag(
                            "input",
                            [
                                Attribute("type", "hidden"), Attribute("name", "q\(index)_id"),
                                Attribute("value", question.map { String($0.id) } ?? ""),
                            ]),
                        ConsoleLayout.field(
                            "Label", name: "q\(index)_label", value: value("q\(index)_label", question?.content["label_text"]?.scalarText),
                            maxLength: 2000, error: errors["q\(index)_label"]),
                        ConsoleLayout.select(
                            "Type", name: "q\(index)_type",
                            options: ConsoleFieldErrors.surveyTypeNames.map { ($0.type, $0.name) },
                            selected: value("q\(index)_type", question?.type ?? "text"), error: errors["q\(index)_type"]),
                        ConsoleLayout.textArea(
                            "Choices (one per line)", name: "q\(index)_options", value: value("q\(index)_options", options), rows: 3,
                            error: errors["q\(index)_options"]),
                        ConsoleLayout.field(
                            "External survey URL", name: "q\(index)_url", value: value("q\(index)_url", question?.content["url"]?.scalarText),
                            type: "url", error: errors["q\(index)_url"]),
                        ConsoleLayout.field(
                            "External survey provider", name: "q\(index)_provider",
                            value: value("q\(index)_provider", question?.content["survey_provider"]?.scalarText), error: errors["q\(index)_provider"]),
                        ConsoleLayout.checkbox(
                            "An answer is required", name: "q\(index)_required", checked: flag("q\(index)_required", question?.required ?? false),
                            error: errors["q\(index)_required"]),
                    ]))
        }
        let zoneHint = "Leave empty for no limit. " + zoneHint(zone)
        return ConsoleLayout.form(
            survey.map { "/admin/surveys/\($0.id)" } ?? "/admin/regions/\(region.id)/surveys", session,
            [
                ConsoleLayout.field(
                    "Name", name: "name", value: value("name", survey?.name), required: true, maxLength: FieldLimits.name, error: errors["name"]),
                ConsoleLayout.select(
                    "Study", name: "study_id", options: [("", "A new study named below")] + studies.map { (String($0.id), $0.name) },
                    selected: value("study_id", survey.map { String($0.studyID) } ?? studies.first.map { String($0.id) }), error: errors["study_id"]),
                ConsoleLayout.field(
                    "New study name", name: "new_study", value: values["new_study"], hint: "Only when “a new study” is chosen.",
                    maxLength: FieldLimits.name, error: errors["new_study"]),
                tag(
                    "div", [.class("columns")],
                    [
                        ConsoleLayout.field(
                            "Available from", name: "start_date",
                            value: value("start_date", RegionTime.inputValue(survey?.startDate, zone)),
                            type: "datetime-local", hint: zoneHint, error: errors["start_date"]),
                        ConsoleLayout.field(
                            "Available until", name: "end_date",
                            value: value("end_date", RegionTime.inputValue(survey?.endDate, zone)),
                            type: "datetime-local", hint: zoneHint, error: errors["end_date"]),
                    ]),
                ConsoleLayout.checkbox(
                    "Available", name: "available", checked: flag("available", survey?.available ?? true), error: errors["available"]),
                ConsoleLayout.checkbox(
                    "Show on the map", name: "show_on_map", checked: flag("show_on_map", survey?.showOnMap ?? true), error: errors["show_on_map"]),
                ConsoleLayout.checkbox(
                    "Show on stop pages", name: "show_on_stops", checked: flag("show_on_stops", survey?.showOnStops ?? true),
                    hint: Survey.placementHint, error: errors["show_on_stops"]),
                ConsoleLayout.checkbox(
                    "Always visible", name: "always_visible", checked: flag("always_visible", survey?.alwaysVisible ?? false),
                    error: errors["always_visible"]),
                ConsoleLayout.checkbox(
                    "A rider may answer more than once", name: "allows_multiple_responses",
                    checked: flag("allows_multiple_responses", survey?.allowsMultipleResponses ?? false), error: errors["allows_multiple_responses"]),
                ConsoleLayout.field(
                    "Only at these stops", name: "visible_stop_list",
                    value: value("visible_stop_list", survey?.visibleStopList?.joined(separator: ", ")),
                    hint: "Stop ids separated by commas; empty for every stop.", error: errors["visible_stop_list"]),
                ConsoleLayout.field(
                    "Only on these routes", name: "visible_route_list",
                    value: value("visible_route_list", survey?.visibleRouteList?.joined(separator: ", ")),
                    hint: "Route ids separated by commas; empty for every route.", error: errors["visible_route_list"]),
                tag("h2", [], ["Questions"]),
                survey.map { _ in tag("p", [.class("hint")], ["Once a survey has responses its questions are frozen: edits to them are refused."]) }
                    ?? .empty,
            ] + questionFields + [
                tag("div", [.class("actions")], [tag("button", [Attribute("type", "submit")], [survey == nil ? "Create survey" : "Save survey"])])
            ] + ConsoleEditVersion.input(values: values, current: survey.map(ConsoleEditVersion.version(of:))))
    }

    /// The form's question slots that hold a question (a label or choices):
    /// the others are skipped, so question n of the document is slot `[n-1]`.
    static func filledSlots(_ values: [String: String], slots: Int) -> [Int] {
        (0..<slots).filter { index in
            !(values["q\(index)_label"]?.trimmingWhitespace() ?? "").isEmpty || !choices(values["q\(index)_options"]).isEmpty
        }
    }

    /// A choices box's lines, trimmed, empty ones dropped.
    static func choices(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: \.isNewline).map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
    }

    /// The survey document the CLI reads, built from the form.
    func surveyDocument(_ request: Request, zone: ZoneInfo, slots: Int) -> (JSONValue, [String: String], [String]) {
        var values: [String: String] = [:]
        for (name, value) in request.parameters.values where name.count <= 40 { values[name] = value.scalarText ?? "" }
        var problems: [String] = []
        var document: [String: JSONValue] = ["name": .string(values["name"] ?? "")]
        for name in ["available", "show_on_map", "show_on_stops", "always_visible", "allows_multiple_responses"] {
            document[name] = .bool(values[name] == "true")
        }
        for name in ["visible_stop_list", "visible_route_list"] {
            let items = (values[name] ?? "").split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            document[name] = items.isEmpty ? .null : .array(items.map(JSONValue.string))
        }
        for name in ["start_date", "end_date"] {
            let text = values[name]?.trimmingWhitespace() ?? ""
            if text.isEmpty {
                document[name] = .null
            } else if let instant = RegionTime.parse(text, zone) {
                document[name] = .string(Timestamp.format(instant))
            } else {
                problems.append("\(name == "start_date" ? "Available from" : "Available until") must be a date and time")
            }
        }
        var questions: [JSONValue] = []
        for index in Self.filledSlots(values, slots: slots) {
            let label = values["q\(index)_label"]?.trimmingWhitespace() ?? ""
            let options = Self.choices(values["q\(index)_options"])
            let type = values["q\(index)_type"] ?? "text"
            var content: [String: JSONValue] = ["type": .string(type), "label_text": .string(label)]
            if type == "radio" || type == "checkbox" { content["options"] = .array(options.map(JSONValue.string)) }
            if type == "external_survey" {
                content["url"] = .string(values["q\(index)_url"] ?? "")
                content["survey_provider"] = .string(values["q\(index)_provider"] ?? "")
            }
            var question: [String: JSONValue] = [
                "position": .integer(Int64(questions.count + 1)), "required": .bool(values["q\(index)_required"] == "true"),
                "content": .object(content),
            ]
            if let id = values["q\(index)_id"].flatMap({ Int64($0) }) { question["id"] = .integer(id) }
            questions.append(.object(question))
        }
        document["questions"] = .array(questions)
        return (.object(document), values, problems)
    }

    func saveSurvey(_ request: Request, _ context: ConsoleLayout.Context, existing: Survey?) async -> Response {
        guard let region = context.region else { return notFound() }
        let zone = await zone(regionID: region.id)
        let (document, values, problems) = surveyDocument(request, zone: zone, slots: Self.questionSlots(existing))
        var survey =
            existing
            ?? Survey.blank(regionID: region.id, now: now)
        if let existing, case let current = ConsoleEditVersion.version(of: existing), ConsoleEditVersion.isStale(request, current: current) {
            var shown = values
            shown[ConsoleEditVersion.field] = current
            return await surveyForm(
                context, survey: existing, values: shown, problems: [ConsoleEditVersion.problem("survey")], status: 412,
                heading: ConsoleEditVersion.heading)
        }
        var messages = problems + SurveyRules.parse(document: document, into: &survey)
        survey.regionID = region.id
        let newStudy = values["new_study"]?.trimmingWhitespace() ?? ""
        if let chosen = values["study_id"].flatMap({ Int64($0) }) {
            survey.studyID = chosen
        } else if newStudy.isEmpty {
            messages.append("Choose a study or name a new one")
        }
        messages += FieldLimits.check([("New study name", newStudy, FieldLimits.name)])
        guard messages.isEmpty else { return await surveyForm(context, survey: existing, values: values, problems: messages, status: 422) }
        do {
            let studies = try await surveys.studies(regionID: region.id)
            if values["study_id"].flatMap({ Int64($0) }) == nil {
                survey.studyID = try await surveys.createStudy(regionID: region.id, name: newStudy, description: nil, now: now).id
                await audit.record(
                    actor: "user:" + context.session.user.email, action: "study.create", regionID: region.id,
                    target: "study \(survey.studyID)", detail: newStudy, now: now)
            } else if !studies.contains(where: { $0.id == survey.studyID }) {
                return await surveyForm(context, survey: existing, values: values, problems: ["That study is not in this region"], status: 422)
            }
            let saved = try await surveys.save(survey, now: now)
            await audit.record(
                actor: "user:" + context.session.user.email, action: existing == nil ? "survey.create" : "survey.edit", regionID: region.id,
                target: "survey \(saved.id)", detail: "\(saved.name); \(saved.questions.count) questions", now: now)
            return .seeOther("/admin/surveys/\(saved.id)?done=survey-saved")
        } catch let error as SurveyStoreError {
            return await surveyForm(context, survey: existing, values: values, problems: [error.message], status: 422)
        } catch { return unavailable(error) }
    }

    func surveyPage(_ request: Request, _ context: ConsoleLayout.Context, _ survey: Survey) async -> Response {
        let zone = await zone(regionID: survey.regionID)
        let responses: [SurveyStore.StoredResponse]
        let studies: [Study]
        do {
            responses = try await surveys.responses(surveyID: survey.id)
            studies = try await surveys.studies(regionID: survey.regionID)
        } catch { return unavailable(error) }
        var content: [any HTMLContent] = []
        if ConsoleRules.may(context.session.user.role, .author) {
            content.append(
                tag(
                    "details", [],
                    [
                        tag("summary", [], ["Edit this survey"]),
                        surveyFields(context.session, region: context.region!, survey: survey, studies: studies, values: [:], zone: zone),
                    ]))
        }
        content.append(tag("h2", [], ["Questions"]))
        content.append(
            ConsoleLayout.table(
                caption: "Questions", headers: ["#", "Question", "Type", "Choices", "Required"],
                rows: survey.questions.map { question in
                    let options: String = {
                        guard case .array(let items)? = question.content["options"] else { return "" }
                        return items.compactMap(\.scalarText).joined(separator: " · ")
                    }()
                    return [
                        question.position, question.content["label_text"]?.scalarText ?? "",
                        tag("span", [Attribute("title", question.type)], [ConsoleFieldErrors.surveyTypeName(question.type)]), options,
                        question.required ? "yes" : "no",
                    ] as [any HTMLContent]
                }, empty: "No questions."))
        content.append(tag("h2", [], ["Responses (\(responses.count))"]))
        content.append(tag("p", [], [tag("a", [.href("/admin/surveys/\(survey.id)/responses.csv"), .class("button secondary")], ["Download CSV"])]))
        let labels = Dictionary(survey.questions.map { ($0.id, $0.content["label_text"]?.scalarText ?? "") }, uniquingKeysWith: { first, _ in first })
        content.append(
            ConsoleLayout.table(
                caption: "Responses, newest first (up to 200)", headers: ["When", "Stop", "Answers"],
                rows: responses.suffix(200).reversed().map { Self.responseRow($0, labels: labels, zone: zone) },
                empty: "No responses yet."))
        return ConsoleLayout.respond(200, ConsoleLayout.page("Survey \(survey.id): \(survey.name)", context, notice: Self.notice(request), content))
    }

    static func responseRow(_ response: SurveyStore.StoredResponse, labels: [Int64: String], zone: ZoneInfo) -> [any HTMLContent] {
        var answers: [String] = []
        for answer in response.answers {
            var id: Int64 = 0
            if case .integer(let value)? = answer["question_id"] { id = value }
            let text: String
            switch answer["answer"] {
            case .string(let value)?: text = value
            case .array(let items)?: text = items.compactMap(\.scalarText).joined(separator: ", ")
            case let other?: text = other.scalarText ?? String(decoding: other.encoded(), as: UTF8.self)
            case nil: text = ""
            }
            answers.append("\(labels[id] ?? "question \(id)"): \(text)")
        }
        let list = tag("ul", [], answers.map { tag("li", [], [$0]) })
        return [RegionTime.display(response.createdAt, zone), response.stopIdentifier ?? "—", list]
    }
}

extension SurveyConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, surveys: context.stores.surveys) }
}
