import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Push

/// Studies and surveys: `study create|list`, `survey create|list|show|edit|delete|responses`.
enum SurveyCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "study create", id: nil, access: .writes, summary: "Create a study (surveys belong to one)",
            options: [
                OperatorCommands.region, OperatorOption("name", "TEXT", required: true, "The study's name"),
                OperatorOption("description", "TEXT", "What it is for"),
            ],
            run: { c in
                let study = try await c.surveyAdministration.createStudy(
                    regionID: try c.region(), name: c.options["name"], description: c.options["description"])
                c.output("created study \(study.id)")
                return 0
            }),
        OperatorCommand(
            name: "study list", id: nil, access: .reads, summary: "List studies", options: [OperatorCommands.optionalRegion],
            run: { c in
                for study in try await SurveyStore(database: c.database).studies(regionID: c.options["region"].flatMap { Int($0) }) {
                    c.output("\(study.id)\tregion \(study.regionID)\t\(study.name)")
                }
                return 0
            }),
        OperatorCommand(
            name: "survey create", id: nil, access: .writes, summary: "Create a survey from a JSON document",
            options: [OperatorOption("file", "PATH|-", required: true, "The document (- for standard input); see 'sidecar survey show'")],
            run: saveSurvey),
        OperatorCommand(
            name: "survey list", id: nil, access: .reads, summary: "List surveys", options: [OperatorCommands.optionalRegion],
            run: { c in
                for survey in try await SurveyStore(database: c.database).surveys(regionID: c.options["region"].flatMap { Int($0) }) {
                    let active = SurveyRules.isActive(survey, now: c.now) ? "active" : "inactive"
                    c.output("\(survey.id)\tregion \(survey.regionID)\t\(active)\t\(survey.questions.count) questions\t\(survey.name)")
                }
                return 0
            }),
        OperatorCommand(
            name: "survey show", id: "ID", access: .reads,
            summary: "Print a survey's JSON document (edit it and pass it to survey edit)", options: [],
            run: { c in
                guard let survey = try await SurveyStore(database: c.database).survey(id: try c.id()) else {
                    throw AdministrationError.notFound("No survey \(try c.id())")
                }
                c.output(String(decoding: SurveyRules.document(survey).prettyEncoded(), as: UTF8.self))
                return 0
            }),
        OperatorCommand(
            name: "survey edit", id: "ID", access: .changes,
            summary: "Replace a survey from a JSON document; questions are frozen once it has responses",
            options: [OperatorOption("file", "PATH|-", required: true, "The document (- for standard input)")],
            run: saveSurvey),
        OperatorCommand(
            name: "survey delete", id: "ID", access: .changes, summary: "Delete a survey that has no responses", options: [],
            run: { c in
                guard let survey = try await c.surveys.survey(id: try c.id()) else { throw AdministrationError.notFound("No survey \(try c.id())") }
                try await c.surveyAdministration.delete(survey)
                c.output("deleted survey \(survey.id)")
                return 0
            }),
        OperatorCommand(
            name: "survey responses", id: "ID", access: .reads, summary: "Write a survey's responses as CSV to standard output",
            options: [],
            run: { c in
                let surveys = SurveyStore(database: c.database)
                guard let survey = try await surveys.survey(id: try c.id()) else { throw AdministrationError.notFound("No survey \(try c.id())") }
                try await surveys.responsesCSV(survey: survey, zone: await c.zone(regionID: survey.regionID)) { chunk in
                    c.output(String(chunk.dropLast()))
                }
                return 0
            }),
    ]

    /// `survey create` and `survey edit`: a document read into a new survey
    /// or over the one the id names.
    @Sendable static func saveSurvey(_ c: CommandRun) async throws -> Int32 {
        let editing = c.invocation.command == "survey edit"
        var existing: Survey? = nil
        if editing {
            guard let found = try await c.surveys.survey(id: try c.id()) else { throw AdministrationError.notFound("No survey \(try c.id())") }
            existing = found
        }
        let saved = try await c.surveyAdministration.save(document: try c.document(c.options["file"]), existing: existing)
        c.output("\(editing ? "updated" : "created") survey \(saved.id)")
        return 0
    }
}
