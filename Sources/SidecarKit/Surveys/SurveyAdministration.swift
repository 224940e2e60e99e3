import Core

/// Authoring studies and surveys, shared by the CLI and the admin API so
/// both validate and audit the same way.
struct SurveyAdministration: Sendable {
    let store: SurveyStore
    let regions: RegionDirectory
    let audit: AuditLog
    let clock: any WallClock
    /// Whose changes these are, as the audit log names them.
    var actor = "system"

    func acting(as actor: String) -> SurveyAdministration {
        var copy = self
        copy.actor = actor
        return copy
    }

    var now: EpochSeconds { clock.nowSeconds }

    func createStudy(regionID: Int, name: String?, description: String?) async throws -> Study {
        guard regions.region(id: regionID) != nil else { throw AdministrationError.notFound("No region \(regionID)") }
        guard let name = name?.trimmingWhitespace().presence else { throw AdministrationError.invalid(["name is required"]) }
        let tooLong = FieldLimits.check([("name", name, FieldLimits.name), ("description", description, FieldLimits.alertDescription)])
        guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
        let study = try await store.createStudy(regionID: regionID, name: name, description: description?.presence, now: now)
        await audit.record(actor: actor, action: "study.create", regionID: regionID, target: "study \(study.id)", detail: name, now: now)
        return study
    }

    /// Renames or redescribes a study of the region.
    func editStudy(_ study: Study, name: String, description: String?) async throws -> Study {
        guard let name = name.trimmingWhitespace().presence else { throw AdministrationError.invalid(["name is required"]) }
        let tooLong = FieldLimits.check([("name", name, FieldLimits.name), ("description", description, FieldLimits.alertDescription)])
        guard tooLong.isEmpty else { throw AdministrationError.invalid(tooLong) }
        guard let saved = try await store.updateStudy(id: study.id, name: name, description: description?.presence, now: now) else {
            throw AdministrationError.notFound("No study \(study.id)")
        }
        await audit.record(actor: actor, action: "study.edit", regionID: study.regionID, target: "study \(study.id)", detail: name, now: now)
        return saved
    }

    /// A new survey's defaults (`Survey.blank`): shown on the map and at stops.
    func blank(regionID: Int) -> Survey { Survey.blank(regionID: regionID, now: now) }

    /// Creates (`existing` nil) or replaces a survey from an authoring
    /// document. `regionID`, when given, is the region the survey must be
    /// in (the API's path); the study must be in the survey's region.
    func save(document: JSONValue, existing: Survey?, regionID: Int? = nil) async throws -> Survey {
        var survey = existing ?? blank(regionID: regionID ?? 0)
        var messages = SurveyRules.parse(document: document, into: &survey)
        if let regionID, survey.regionID != regionID {
            messages.append("region_id must be \(regionID), the region this survey is in")
        }
        if let existing, survey.regionID != existing.regionID { messages.append("a survey cannot move to another region") }
        if regions.region(id: survey.regionID) == nil { messages.append("region_id \(survey.regionID) is not in the regions directory") }
        guard messages.isEmpty else { throw AdministrationError.invalid(messages) }
        guard let study = try await store.study(id: survey.studyID), study.regionID == survey.regionID else {
            throw AdministrationError.invalid(["study_id \(survey.studyID) is not a study of region \(survey.regionID)"])
        }
        return try await saved(survey, action: existing == nil ? "survey.create" : "survey.edit")
    }

    /// Stores a survey and audits it; the store's refusals become 422s.
    func saved(_ survey: Survey, action: String) async throws -> Survey {
        do {
            let saved = try await store.save(survey, now: now)
            await audit.record(
                actor: actor, action: action, regionID: saved.regionID, target: "survey \(saved.id)",
                detail: "\(saved.name); \(saved.questions.count) questions", now: now)
            return saved
        } catch let error as SurveyStoreError {
            throw error == .notFound ? AdministrationError.notFound(error.message) : AdministrationError.invalid([error.message])
        }
    }

    /// Makes a survey available to riders (activate) or not (archive).
    func setAvailable(_ survey: Survey, _ available: Bool) async throws -> Survey {
        var changed = survey
        changed.available = available
        if available && !survey.questions.contains(where: { $0.type != "label" }) {
            throw AdministrationError.invalid(["a survey with no questions cannot be made available: add a question first"])
        }
        return try await saved(changed, action: available ? "survey.activate" : "survey.archive")
    }

    /// Puts the survey's questions in the order given: every question's id
    /// exactly once.
    func reorder(_ survey: Survey, questionIDs: [Int64]) async throws -> Survey {
        guard questionIDs.count == survey.questions.count, Set(questionIDs) == Set(survey.questions.map(\.id)) else {
            throw AdministrationError.invalid([
                "question_ids must list each of the survey's \(survey.questions.count) question ids exactly once"
            ])
        }
        var changed = survey
        changed.questions = questionIDs.enumerated().compactMap { position, id in
            survey.questions.first { $0.id == id }.map { question in
                var moved = question
                moved.position = position + 1
                return moved
            }
        }
        return try await saved(changed, action: "survey.reorder")
    }

    func delete(_ survey: Survey) async throws {
        do { try await store.delete(id: survey.id) } catch let error as SurveyStoreError {
            throw error == .notFound ? AdministrationError.notFound(error.message) : AdministrationError.invalid([error.message])
        }
        await audit.record(
            actor: actor, action: "survey.delete", regionID: survey.regionID, target: "survey \(survey.id)", detail: survey.name, now: now)
    }
}
