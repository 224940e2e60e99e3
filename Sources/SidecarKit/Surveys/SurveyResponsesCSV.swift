import Core
import Crypto
import Database
import FoundationEssentials

extension SurveyStore {
    /// A survey's responses as CSV: times in ISO 8601 in the region's zone,
    /// the stop's coordinates as numbers, then one column per question.
    func responsesCSV(survey: Survey, zone: ZoneInfo) async throws -> String {
        let questions = survey.questions.sorted { ($0.position, $0.id) < ($1.position, $1.id) }.filter { $0.type != "label" }
        var lines = [
            CSV.line(
                ["response_id", "created_at", "updated_at", "user_identifier", "stop_identifier", "stop_latitude", "stop_longitude"]
                    + questions.map { $0.content["label_text"]?.scalarText ?? "question \($0.id)" })
        ]
        for response in try await responses(surveyID: survey.id) {
            let byQuestion = Dictionary(
                response.answers.compactMap { answer -> (Int64, String)? in
                    guard case .integer(let id)? = answer["question_id"] else { return nil }
                    let value = answer["answer"].map { $0.scalarText ?? String(decoding: $0.encoded(), as: UTF8.self) }
                    return (id, value ?? "")
                }, uniquingKeysWith: { _, last in last })
            lines.append(
                CSV.row(
                    [
                        .text(response.publicID), .instant(response.createdAt, zone), .instant(response.updatedAt, zone),
                        .text(response.userIdentifier), .text(response.stopIdentifier), .number(response.stopLatitude),
                        .number(response.stopLongitude),
                    ] + questions.map { .text(byQuestion[$0.id]) }))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
