import Core
import Crypto
import Database
import FoundationEssentials

extension SurveyStore {
    /// Rows read per query while exporting: memory stays flat however many
    /// responses a survey has.
    static let exportPage = 1000

    /// A survey's responses as CSV, handed to `write` a page at a time:
    /// times in ISO 8601 in the region's zone, the stop's coordinates as
    /// numbers, then one column per question; only responses created
    /// between `from` and `to` (epoch seconds, inclusive) when given. The
    /// header row is named as `naming` says; question columns carry the
    /// question's label either way.
    func responsesCSV(
        survey: Survey, zone: ZoneInfo, from: EpochSeconds? = nil, to: EpochSeconds? = nil, naming: CSV.HeaderNaming = .codes,
        write: (String) async throws -> Void
    ) async throws {
        let questions = survey.questions.sorted { ($0.position, $0.id) < ($1.position, $1.id) }.filter { $0.type != "label" }
        let columns: [CSV.Column] =
            [
                .init("response_id", "Response"), .init("created_at", "Received", time: true), .init("updated_at", "Updated", time: true),
                .init("user_identifier", "Rider (anonymous id)"), .init("stop_identifier", "Stop"), .init("stop_latitude", "Stop latitude"),
                .init("stop_longitude", "Stop longitude"),
            ]
            + questions.map { question in
                let label = question.content["label_text"]?.scalarText ?? "question \(question.id)"
                return CSV.Column(label, label)
            }
        try await write(CSV.header(columns, naming, zone: zone) + "\n")
        var after: Int64 = 0
        while true {
            let page = try await responses(surveyID: survey.id, after: after, from: from, to: to, limit: Self.exportPage)
            guard let last = page.last else { return }
            after = last.id
            var chunk = ""
            for (_, response) in page {
                let byQuestion = Dictionary(
                    response.answers.compactMap { answer -> (Int64, String)? in
                        guard case .integer(let id)? = answer["question_id"] else { return nil }
                        let value = answer["answer"].map { $0.scalarText ?? String(decoding: $0.encoded(), as: UTF8.self) }
                        return (id, value ?? "")
                    }, uniquingKeysWith: { _, last in last })
                chunk +=
                    CSV.row(
                        [
                            .text(response.publicID), .instant(response.createdAt, zone), .instant(response.updatedAt, zone),
                            .text(response.userIdentifier), .text(response.stopIdentifier), .number(response.stopLatitude),
                            .number(response.stopLongitude),
                        ] + questions.map { .text(byQuestion[$0.id]) }) + "\n"
            }
            try await write(chunk)
        }
    }

    /// The whole export in memory (tests and small surveys).
    func responsesCSV(survey: Survey, zone: ZoneInfo) async throws -> String {
        var text = ""
        try await responsesCSV(survey: survey, zone: zone) { text += $0 }
        return text
    }
}
