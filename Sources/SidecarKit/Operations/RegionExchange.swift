import Core
import Database
import FoundationEssentials
import GTFSRealtime

/// `sidecar export` and `sidecar import`: one region's agency content and
/// rider state as a `sidecar-export/1` document, the interchange format
/// OBACloud exports and the reference sidecar imports. Ids the apps keep
/// (alert ids inside feed entity ids, survey and question ids) are carried
/// as they are, so a region that moves looks unchanged to riders.
///
/// Instants are RFC 3339 in UTC; `*_ms` fields are epoch milliseconds as on
/// the wire they came from. Importing is idempotent: a row that is already
/// there (same id, public id, or region and token) is left alone and counted
/// as present, so importing a later export adds only what is new.
enum RegionExchange {
    static let format = "sidecar-export/1"

    /// Why a document cannot be imported (or a region exported).
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// What an import did (or would do), per kind.
    struct Summary: Equatable, Sendable {
        struct Counts: Equatable, Sendable {
            var added = 0
            var present = 0
        }
        var alerts = Counts(), translations = Counts(), studies = Counts(), surveys = Counts(), questions = Counts()
        var surveyResponses = Counts(), pushRegistrations = Counts(), ghostBusReports = Counts(), alertSources = Counts()
        /// What the operator must do after the import (headers to give again).
        var notes: [String] = []

        var lines: [String] {
            let kinds: [(label: String, counts: Counts)] = [
                ("alerts", alerts), ("translations", translations), ("studies", studies), ("surveys", surveys), ("questions", questions),
                ("survey responses", surveyResponses), ("push registrations", pushRegistrations), ("ghost bus reports", ghostBusReports),
                ("alert sources", alertSources),
            ]
            return kinds.map { kind in
                let padding = String(repeating: " ", count: max(1, 20 - kind.label.count))
                return "  \(kind.label)\(padding)\(kind.counts.added) added, \(kind.counts.present) already present"
            } + notes.map { "  note: \($0)" }
        }
    }

    static func json(_ text: String?) -> JSONValue? {
        guard let text else { return nil }
        return try? JSONValue(parsing: text.utf8)
    }

    static func encoded(_ value: JSONValue) -> String { String(decoding: value.encoded(), as: UTF8.self) }
}
