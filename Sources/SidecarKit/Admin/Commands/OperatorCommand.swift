import Core
import FoundationEssentials

/// One option of an operator command (`--region N`), as its help shows it.
struct OperatorOption: Sendable {
    let name: String
    /// What the value looks like (`N`, `TEXT`); nil for a switch, which
    /// takes no value (`--push`), though `--push false` is read too.
    let value: String?
    let required: Bool
    /// Given more than once, the values are joined with commas.
    let repeatable: Bool
    let help: String

    init(_ name: String, _ value: String?, required: Bool = false, repeatable: Bool = false, _ help: String) {
        self.name = name
        self.value = value
        self.required = required
        self.repeatable = repeatable
        self.help = help
    }

    /// `--region N`, or `[--push]` when optional.
    var synopsis: String {
        let text = "--\(name)" + (value.map { " \($0)" } ?? "")
        return required ? text : "[\(text)]"
    }
}

/// An operator command (`sidecar alert create ...`): its options, whether it
/// takes an id, and what it does to the database.
struct OperatorCommand: Sendable {
    /// How a command uses the database, which decides what it may do to a
    /// missing one.
    enum Access: Sendable {
        /// Only reads: a missing database is an error, never created.
        case reads
        /// Writes: a missing SQLite database is created, and the command says so.
        case writes
        /// Changes rows that must exist already (an id, an account): a
        /// missing database holds nothing to change, so it is an error,
        /// never created.
        case changes
        /// Never opens the database (`push test`, `links add-region`).
        case none
    }

    let name: String
    /// The positional argument's placeholder (`ID`), nil when there is none.
    let id: String?
    let access: Access
    let summary: String
    let options: [OperatorOption]
    /// More help printed after the options (formats, examples).
    var notes: String = ""
    /// What it does; returns the exit status (errors it throws are reported
    /// by `AdminCommands.run`).
    let run: @Sendable (CommandRun) async throws -> Int32

    func option(_ name: String) -> OperatorOption? { options.first { $0.name == name } }

    /// `sidecar alert create --region N --header TEXT --start TIME [--description TEXT] ...`
    var synopsis: String {
        (["sidecar", name] + (id.map { [$0] } ?? []) + options.map(\.synopsis)).joined(separator: " ")
    }
}

/// Every operator command, in the order `--help` lists them. Each feature
/// describes and implements its own group in its folder (`AlertCommands`,
/// `SurveyCommands`, ...); this list only orders them, and
/// `CentralListTests` fails when a described command is missing from it.
enum OperatorCommands {
    static let all: [OperatorCommand] =
        RegionCommands.all + AlertCommands.all + AlertScheduleCommands.all + ApprovalCommands.all + AlertSourceCommands.all + SurveyCommands.all
        + AccessCommands.all
        + SequenceCommands.all
        + DeviceCommands.all

    static func named(_ name: String) -> OperatorCommand? { byName[name] }

    static let byName: [String: OperatorCommand] = Dictionary(all.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })

    /// The groups whose commands are `sidecar GROUP COMMAND`.
    static let groups: Set<String> = Set(
        all.compactMap { command in
            let parts = command.name.split(separator: " ")
            return parts.count == 2 ? String(parts[0]) : nil
        })

    // Options several groups share.
    static let region = OperatorOption("region", "N", required: true, "The region's id in the regions directory")
    static let optionalRegion = OperatorOption("region", "N", "Only this region")
    static let agencyCheck = OperatorOption(
        "agency-check", "true|false",
        "Check the agency id against the region's OneBusAway server (agencies-with-coverage; default true): iOS drops alerts of an agency it does not list"
    )

    /// An instant in UTC, ISO 8601, for a line that names no region (keys, accounts).
    static func format(_ instant: EpochSeconds) -> String {
        Date(timeIntervalSince1970: Double(instant.value)).formatted(.iso8601)
    }
}
