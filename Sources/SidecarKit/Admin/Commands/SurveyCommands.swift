import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Push

/// Studies and surveys: `study create|list`, `survey create|list|show|edit|delete|responses`.
extension OperatorCommands {
    static let surveys: [OperatorCommand] = [
        OperatorCommand(
            name: "study create", id: nil, access: .writes, summary: "Create a study (surveys belong to one)",
            options: [
                region, OperatorOption("name", "TEXT", required: true, "The study's name"), OperatorOption("description", "TEXT", "What it is for"),
            ],
            run: { c in
                let regionID = try c.region()
                _ = try c.administration.region(regionID)
                guard let name = c.options["name"]?.presence else { throw AdministrationError.invalid(["--name is required"]) }
                let tooLong = FieldLimits.check([
                    ("--name", name, FieldLimits.name), ("--description", c.options["description"], FieldLimits.alertDescription),
                ])
                guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
                let study = try await SurveyStore(database: c.database).createStudy(
                    regionID: regionID, name: name,
                    description: c.options["description"]?.presence, now: c.now)
                await c.audit.record(
                    actor: c.actor, action: "study.create", regionID: regionID, target: "study \(study.id)", detail: name, now: c.now)
                c.output("created study \(study.id)")
                return 0
            }),
        OperatorCommand(
            name: "study list", id: nil, access: .reads, summary: "List studies", options: [optionalRegion],
            run: { c in
                for study in try await SurveyStore(database: c.database).studies(regionID: c.options["region"].flatMap { Int($0) }) {
                    c.output("\(study.id)\tregion \(study.regionID)\t\(study.name)")
                }
                return 0
            }),
        OperatorCommand(
            name: "survey create", id: nil, access: .writes, summary: "Create a survey from a JSON document",
            options: [OperatorOption("file", "PATH|-", required: true, "The document (- for standard input); see 'sidecar survey show'")],
            run: { c in
                let surveys = SurveyStore(database: c.database)
                var survey: Survey
                if c.invocation.command == "survey edit" {
                    guard let existing = try await surveys.survey(id: try c.id()) else {
                        throw AdministrationError.notFound("No survey \(try c.id())")
                    }
                    survey = existing
                } else {
                    survey = Survey(
                        id: 0, regionID: 0, studyID: 0, name: "", available: true, startDate: nil, endDate: nil, showOnMap: false,
                        showOnStops: false, alwaysVisible: false, allowsMultipleResponses: false, visibleStopList: nil,
                        visibleRouteList: nil, requireStopIDInResponse: false, questions: [], createdAt: c.now, updatedAt: c.now)
                }
                let document = try c.document(c.options["file"])
                var messages = SurveyRules.parse(document: document, into: &survey)
                if c.regions.region(id: survey.regionID) == nil { messages.append("region_id \(survey.regionID) is not in the regions directory") }
                guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
                do {
                    let saved = try await surveys.save(survey, now: c.now)
                    await c.audit.record(
                        actor: c.actor, action: c.invocation.command == "survey edit" ? "survey.edit" : "survey.create",
                        regionID: saved.regionID, target: "survey \(saved.id)", detail: "\(saved.name); \(saved.questions.count) questions",
                        now: c.now)
                    c.output("\(c.invocation.command == "survey edit" ? "updated" : "created") survey \(saved.id)")
                } catch let error as SurveyStoreError {
                    throw AdministrationError.invalid([error.message])
                }
                return 0
            }),
        OperatorCommand(
            name: "survey list", id: nil, access: .reads, summary: "List surveys", options: [optionalRegion],
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
            name: "survey edit", id: "ID", access: .writes,
            summary: "Replace a survey from a JSON document; questions are frozen once it has responses",
            options: [OperatorOption("file", "PATH|-", required: true, "The document (- for standard input)")],
            run: { c in
                let surveys = SurveyStore(database: c.database)
                var survey: Survey
                if c.invocation.command == "survey edit" {
                    guard let existing = try await surveys.survey(id: try c.id()) else {
                        throw AdministrationError.notFound("No survey \(try c.id())")
                    }
                    survey = existing
                } else {
                    survey = Survey(
                        id: 0, regionID: 0, studyID: 0, name: "", available: true, startDate: nil, endDate: nil, showOnMap: false,
                        showOnStops: false, alwaysVisible: false, allowsMultipleResponses: false, visibleStopList: nil,
                        visibleRouteList: nil, requireStopIDInResponse: false, questions: [], createdAt: c.now, updatedAt: c.now)
                }
                let document = try c.document(c.options["file"])
                var messages = SurveyRules.parse(document: document, into: &survey)
                if c.regions.region(id: survey.regionID) == nil { messages.append("region_id \(survey.regionID) is not in the regions directory") }
                guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
                do {
                    let saved = try await surveys.save(survey, now: c.now)
                    await c.audit.record(
                        actor: c.actor, action: c.invocation.command == "survey edit" ? "survey.edit" : "survey.create",
                        regionID: saved.regionID, target: "survey \(saved.id)", detail: "\(saved.name); \(saved.questions.count) questions",
                        now: c.now)
                    c.output("\(c.invocation.command == "survey edit" ? "updated" : "created") survey \(saved.id)")
                } catch let error as SurveyStoreError {
                    throw AdministrationError.invalid([error.message])
                }
                return 0
            }),
        OperatorCommand(
            name: "survey delete", id: "ID", access: .writes, summary: "Delete a survey that has no responses", options: [],
            run: { c in
                let doomed = try await SurveyStore(database: c.database).survey(id: try c.id())
                do { try await SurveyStore(database: c.database).delete(id: try c.id()) } catch let error as SurveyStoreError {
                    throw error == .notFound ? AdministrationError.notFound(error.message) : AdministrationError.invalid([error.message])
                }
                await c.audit.record(
                    actor: c.actor, action: "survey.delete", regionID: doomed?.regionID, target: "survey \(try c.id())",
                    detail: doomed?.name, now: c.now)
                c.output("deleted survey \(try c.id())")
                return 0
            }),
        OperatorCommand(
            name: "survey responses", id: "ID", access: .reads, summary: "Write a survey's responses as CSV to standard output",
            options: [],
            run: { c in
                let surveys = SurveyStore(database: c.database)
                guard let survey = try await surveys.survey(id: try c.id()) else { throw AdministrationError.notFound("No survey \(try c.id())") }
                c.output(String(try await surveys.responsesCSV(survey: survey, zone: await c.zone(regionID: survey.regionID)).dropLast()))
                return 0
            }),
    ]
}
