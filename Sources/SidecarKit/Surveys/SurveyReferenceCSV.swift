import Core

/// A survey's responses as the Go reference's CSV lays them out: one row per
/// answer (a response without answers still gets one row), the response's
/// public id first, times with milliseconds. Cells are spreadsheet-safe as
/// every Sidecar CSV is (`CSV`), quoted only where needed as the reference's.
enum SurveyReferenceCSV {
    static let columns = [
        "response_id", "user_identifier", "stop_identifier", "stop_latitude", "stop_longitude", "created_at", "updated_at", "question_id",
        "question_type", "question_label", "answer",
    ]

    /// Rows read per query: memory stays flat however many responses there are.
    static let page = 1000

    static func rows(_ response: SurveyStore.StoredResponse) -> String {
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case nil, .null?: return nil
            case .string(let text)?: return text
            case let other?: return other.scalarText ?? String(decoding: other.encoded(), as: UTF8.self)
            }
        }
        func millisecondTime(_ instant: EpochSeconds) -> String {
            if case .value(.string(let text)) = ReferenceJSON.millisecondTime(instant) { return text }
            return ""
        }
        let head: [CSV.Value] = [
            .text(response.publicID), .text(response.userIdentifier), .text(response.stopIdentifier ?? ""), .number(response.stopLatitude),
            .number(response.stopLongitude), .text(millisecondTime(response.createdAt)), .text(millisecondTime(response.updatedAt)),
        ]
        guard !response.answers.isEmpty else {
            return CSV.row(head + [.text(nil), .text(nil), .text(nil), .text(nil)], quoting: .whereNeeded) + "\n"
        }
        return response.answers.map { answer in
            let questionID: CSV.Value = if case .integer(let id)? = answer["question_id"] { .integer(id) } else { .text(text(answer["question_id"])) }
            return CSV.row(
                head + [questionID, .text(text(answer["question_type"])), .text(text(answer["question_label"])), .text(text(answer["answer"]))],
                quoting: .whereNeeded)
                + "\n"
        }.joined()
    }

    /// The whole download, handed to `write` a page at a time, in id order.
    static func write(surveyID: Int64, store: SurveyStore, _ write: (String) async throws -> Void) async throws {
        try await write(CSV.line(columns, quoting: .whereNeeded) + "\n")
        var after: Int64 = 0
        while true {
            let batch = try await store.responses(surveyID: surveyID, after: after, from: nil, to: nil, limit: page)
            guard let last = batch.last else { return }
            after = last.id
            try await write(batch.map { rows($0.response) }.joined())
        }
    }
}
