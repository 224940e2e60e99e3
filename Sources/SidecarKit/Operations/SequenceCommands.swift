import Core
import Database

/// `sidecar sequence show|bump --min N`: the id sequences of the objects
/// another server's content keeps its ids in (alerts, studies, surveys and
/// their questions), as the Go reference's cutover runbook uses them:
/// before a region's content is imported here, the ids this server gives
/// out are moved past the ones it will import.
enum SequenceCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "sequence show", id: nil, access: .reads, summary: "Print the last id handed out of alerts, studies, surveys and questions",
            options: [],
            run: { c in
                for (table, lastID) in try await c.database.read({ connection in try sequences(connection) }) { c.output("\(table)\t\(lastID)") }
                return 0
            }),
        OperatorCommand(
            name: "sequence bump", id: nil, access: .changes,
            summary: "Raise every id sequence below N to N, in one transaction, so the next ids are above N",
            options: [OperatorOption("min", "N", required: true, "The smallest last id each sequence is left at (a positive number)")],
            notes: "Running it again with the same or a lower N changes nothing; a sequence already above N is left alone.",
            run: { c in
                guard let raw = c.options["min"] else { throw AdministrationError.invalid(["sequence bump requires --min"]) }
                guard let minimum = Int64(raw), minimum > 0 else {
                    throw AdministrationError.invalid(["sequence bump: --min must be positive, got \(raw)"])
                }
                let (before, after) = try await c.database.write { connection in
                    let before = try sequences(connection)
                    try AlertStore.raiseIDs(connection, to: minimum)
                    try SurveyStore.raiseSequences(connection, to: minimum)
                    return (before, try sequences(connection))
                }
                for ((table, old), (_, new)) in zip(before, after) { c.output("\(table): \(old) -> \(new)") }
                if before.map(\.lastID) != after.map(\.lastID) {
                    await c.audit.record(
                        actor: c.actor, action: "sequence.bump", regionID: Optional<Int>.none, target: "id sequences", detail: "--min \(minimum)",
                        now: c.now)
                }
                return 0
            }),
    ]

    /// Each sequenced table with the last id it handed out, alerts first.
    static func sequences(_ connection: any SQLConnection) throws -> [(table: String, lastID: Int64)] {
        [("alerts", try AlertStore.lastID(connection))] + (try SurveyStore.sequences(connection))
    }
}
