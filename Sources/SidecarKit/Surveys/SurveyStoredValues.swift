import Core
import Crypto
import Database
import FoundationEssentials

/// How surveys and responses are kept in their rows: lists and answers as
/// JSON text, and the store's errors.
extension SurveyStore {
    /// A stored response.
    struct StoredResponse: Sendable {
        var publicID: String
        var surveyID: Int64
        var userIdentifier: String
        var answers: [[String: JSONValue]]
        var stopIdentifier: String? = nil
        var stopLatitude: Double? = nil
        var stopLongitude: Double? = nil
        /// Epoch seconds.
        var createdAt: EpochSeconds = 0
        var updatedAt: EpochSeconds = 0

        static func read(_ row: Row) throws -> StoredResponse {
            StoredResponse(
                publicID: try row.string("public_id"), surveyID: try row.int("survey_id"), userIdentifier: try row.string("user_identifier"),
                answers: SurveyStore.decodeAnswers(try row.string("responses")), stopIdentifier: try row.optionalString("stop_identifier"),
                stopLatitude: try row.optionalDouble("stop_latitude"), stopLongitude: try row.optionalDouble("stop_longitude"),
                createdAt: try row.seconds("created_at"), updatedAt: try row.seconds("updated_at"))
        }
    }

    static func encode(_ list: [String]?) -> SQLValue {
        list.map { .text(String(decoding: JSONValue.array($0.map(JSONValue.string)).encoded(), as: UTF8.self)) } ?? .null
    }

    static func decodeList(_ text: String?) -> [String]? {
        guard let text, case .array(let items)? = try? JSONValue(parsing: text.utf8) else { return nil }
        return items.compactMap { $0.scalarText }
    }

    static func encode(_ answers: [[String: JSONValue]]) -> String {
        String(decoding: JSONValue.array(answers.map(JSONValue.object)).encoded(), as: UTF8.self)
    }

    static func decodeAnswers(_ text: String?) -> [[String: JSONValue]] {
        guard let text, case .array(let items)? = try? JSONValue(parsing: text.utf8) else { return [] }
        return items.compactMap { if case .object(let answer) = $0 { answer } else { nil } }
    }
}

enum SurveyStoreError: Error, Equatable {
    case notFound
    case unknownStudy(Int64)
    case questionsFrozen(responses: Int)
    case hasResponses(Int)

    var message: String {
        switch self {
        case .notFound: return "No such survey"
        case .unknownStudy(let id): return "No study \(id) (create one with: sidecar study create)"
        case .questionsFrozen(let count): return "The survey has \(count) responses, so its questions are frozen"
        case .hasResponses(let count): return "The survey has \(count) responses and cannot be deleted"
        }
    }
}
