import GTFSRealtime

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

    func option(_ name: String) -> OperatorOption? { options.first { $0.name == name } }

    /// `sidecar alert create --region N --header TEXT --start TIME [--description TEXT] ...`
    var synopsis: String {
        (["sidecar", name] + (id.map { [$0] } ?? []) + options.map(\.synopsis)).joined(separator: " ")
    }
}

/// Every operator command, in the order `--help` lists them.
enum OperatorCommands {
    static func named(_ name: String) -> OperatorCommand? { byName[name] }

    static let byName: [String: OperatorCommand] = Dictionary(all.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })

    /// The groups whose commands are `sidecar GROUP COMMAND`.
    static let groups: Set<String> = Set(all.compactMap { command in
        let parts = command.name.split(separator: " ")
        return parts.count == 2 ? String(parts[0]) : nil
    })

    static let time = "TIME"
    static let timeNote = """
        Times are ISO 8601 with a UTC offset, e.g. 2026-12-01T08:00:00-08:00, from 2000 to 2100.
        """

    /// The authoring fields of `alert create` and `alert edit`.
    static func authoring(creating: Bool) -> [OperatorOption] {
        [
            OperatorOption("header", "TEXT", required: creating, "The English headline riders see (at most 200 characters)"),
            OperatorOption("start", time, required: creating, "When riders start seeing the alert"),
            OperatorOption("description", "TEXT", "The English body"),
            OperatorOption("url", "URL", "A page with more information"),
            OperatorOption("cause", "CAUSE", "GTFS-realtime cause (default UNKNOWN_CAUSE)"),
            OperatorOption("effect", "EFFECT", "GTFS-realtime effect (default UNKNOWN_EFFECT)"),
            OperatorOption("severity", "LEVEL", "INFO, WARNING (default) or SEVERE"),
            OperatorOption("end", "TIME|none", "When riders stop seeing it; without one the feed ends it 8 hours after the start"),
            OperatorOption("impact-start", time, "When service is affected from, if not the whole shown period"),
            OperatorOption("impact-end", "TIME|none", "When service is affected until"),
            OperatorOption("test", "true|false", "A test alert goes only to test devices"),
            OperatorOption("agency-id", "ID", "The OneBusAway agency id (default: the region's, see 'sidecar region set')"),
        ]
    }

    static let alertNotes = """
        \(timeNote)
        Causes: \(Cause.allCases.map(\.name).joined(separator: " "))
        Effects: \(Effect.allCases.map(\.name).joined(separator: " "))
        Severities: \(SeverityLevel.allCases.map(\.name).joined(separator: " "))
        """

    static let region = OperatorOption("region", "N", required: true, "The region's id in the regions directory")
    static let optionalRegion = OperatorOption("region", "N", "Only this region")

    static let all: [OperatorCommand] = [
        OperatorCommand(name: "region list", id: nil, access: .reads,
                        summary: "List the regions of the directory with their agency id and time zone", options: []),
        OperatorCommand(name: "region set", id: nil, access: .writes,
                        summary: "Set a region's OneBusAway agency id (used in the alerts feed) and time zone", options: [
                            OperatorOption("id", "N", required: true, "The region's id in the regions directory"),
                            OperatorOption("agency-id", "ID", "The agency id alerts name in the feed"),
                            OperatorOption("timezone", "ZONE|none", "A tz database zone such as America/Los_Angeles; none clears it"),
                        ]),
        OperatorCommand(name: "alert create", id: nil, access: .writes, summary: "Create a draft alert (publish it with 'sidecar alert publish ID')",
                        options: [region] + authoring(creating: true), notes: alertNotes),
        OperatorCommand(name: "alert list", id: nil, access: .reads, summary: "List a region's alerts with their state and times in the region's zone",
                        options: [region]),
        OperatorCommand(name: "alert show", id: "ID", access: .reads, summary: "Show an alert, its translations and its sends", options: []),
        OperatorCommand(name: "alert edit", id: "ID", access: .writes, summary: "Change an alert's fields (only those given)",
                        options: authoring(creating: false), notes: alertNotes),
        OperatorCommand(name: "alert publish", id: "ID", access: .writes, summary: "Publish an alert (it appears in the feed)", options: []),
        OperatorCommand(name: "alert unpublish", id: "ID", access: .writes, summary: "Withdraw an alert from the feed", options: []),
        OperatorCommand(name: "alert delete", id: "ID", access: .writes, summary: "Delete an alert", options: []),
        OperatorCommand(name: "alert translate", id: "ID", access: .writes,
                        summary: "Add or replace the translation of an alert into one language", options: [
                            OperatorOption("language", "TAG", required: true,
                                           "A language of --locales, as a tag (es, es-MX, zh-TW): stored as registrations normalise it"),
                            OperatorOption("header", "TEXT", required: true, "The translated headline"),
                            OperatorOption("description", "TEXT", "The translated body (required when the English has one)"),
                        ]),
        OperatorCommand(name: "alert send", id: "ID", access: .writes,
                        summary: "Push a published alert to the region's registrations, resuming an unfinished send",
                        options: [OperatorOption("audience", "all|test", "Everyone (default) or only test devices; a draft goes to test devices only")],
                        notes: "Needs a push transport: the push flags below, as 'sidecar serve' takes them."),
        OperatorCommand(name: "ghostbus export", id: nil, access: .reads,
                        summary: "Write a region's ghost-bus reports as CSV to standard output", options: [region]),
        OperatorCommand(name: "study create", id: nil, access: .writes, summary: "Create a study (surveys belong to one)", options: [
            region, OperatorOption("name", "TEXT", required: true, "The study's name"), OperatorOption("description", "TEXT", "What it is for"),
        ]),
        OperatorCommand(name: "study list", id: nil, access: .reads, summary: "List studies", options: [optionalRegion]),
        OperatorCommand(name: "survey create", id: nil, access: .writes, summary: "Create a survey from a JSON document",
                        options: [OperatorOption("file", "PATH|-", required: true, "The document (- for standard input); see 'sidecar survey show'")]),
        OperatorCommand(name: "survey list", id: nil, access: .reads, summary: "List surveys", options: [optionalRegion]),
        OperatorCommand(name: "survey show", id: "ID", access: .reads,
                        summary: "Print a survey's JSON document (edit it and pass it to survey edit)", options: []),
        OperatorCommand(name: "survey edit", id: "ID", access: .writes,
                        summary: "Replace a survey from a JSON document; questions are frozen once it has responses",
                        options: [OperatorOption("file", "PATH|-", required: true, "The document (- for standard input)")]),
        OperatorCommand(name: "survey delete", id: "ID", access: .writes, summary: "Delete a survey that has no responses", options: []),
        OperatorCommand(name: "survey responses", id: "ID", access: .reads, summary: "Write a survey's responses as CSV to standard output",
                        options: []),
        OperatorCommand(name: "push test", id: nil, access: .none,
                        summary: "Send one test notification to a device and print the provider's answer", options: [
                            OperatorOption("platform", "ios|android", required: true, "The device's platform"),
                            OperatorOption("token", "TOKEN", required: true, "The device's push token (never logged)"),
                            OperatorOption("sandbox", nil, "An iOS development build's token (APNs sandbox)"),
                        ],
                        notes: "Needs a push transport: the push flags below, as 'sidecar serve' takes them."),
        OperatorCommand(name: "apikey create", id: nil, access: .writes,
                        summary: "Create an admin API key (printed once on standard output, stored hashed)", options: [
                            OperatorOption("name", "TEXT", required: true, "What the key is for, shown in lists and the audit log"),
                            OperatorOption("region", "N|all", required: true, repeatable: true,
                                           "A region the key may manage (repeat for more), or all for every region"),
                            OperatorOption("push", nil, "The key may start sends"),
                        ]),
        OperatorCommand(name: "apikey list", id: nil, access: .reads, summary: "List admin API keys", options: []),
        OperatorCommand(name: "apikey revoke", id: "ID", access: .writes, summary: "Revoke an admin API key by id", options: []),
        OperatorCommand(name: "user create", id: nil, access: .writes,
                        summary: "Create a console account; the password is read from standard input", options: [
                            OperatorOption("email", "ADDRESS", required: true, "The account's email address (its sign-in name)"),
                            OperatorOption("role", "admin|editor|viewer", required: true, "What it may do"),
                            OperatorOption("region", "N", repeatable: true, "A region it may see (repeat for more; default every region)"),
                        ]),
        OperatorCommand(name: "user list", id: nil, access: .reads, summary: "List console accounts", options: []),
        OperatorCommand(name: "user passwd", id: nil, access: .writes,
                        summary: "Set an account's password (read from standard input); its sessions end",
                        options: [OperatorOption("email", "ADDRESS", required: true, "The account")]),
        OperatorCommand(name: "user delete", id: nil, access: .writes, summary: "Delete a console account and end its sessions",
                        options: [OperatorOption("email", "ADDRESS", required: true, "The account")]),
        OperatorCommand(name: "links add-region", id: nil, access: .none,
                        summary: "Print a region's onebusaway://add-region link and optionally write its QR code", options: [
                            OperatorOption("region", "N", "A directory region: its values become the defaults"),
                            OperatorOption("region-id", "N", "The id this sidecar serves the region under (iOS 26.3.0 and Android 26.2.0 read it)"),
                            OperatorOption("name", "TEXT", "The region's name"),
                            OperatorOption("oba-url", "URL", "Its OneBusAway server"),
                            OperatorOption("sidecar-url", "URL", "This server's public https address"),
                            OperatorOption("otp-url", "URL", "An OpenTripPlanner server"),
                            OperatorOption("otp-graphql-url", "URL", "An OpenTripPlanner GraphQL endpoint"),
                            OperatorOption("otp-graphql-bikeshare", "true|false", "Whether it plans bike share trips"),
                            OperatorOption("umami-url", "URL", "An Umami analytics server"),
                            OperatorOption("umami-id", "ID", "The website id at Umami"),
                            OperatorOption("qr", "FILE.png|FILE.svg", "Also write the link's QR code"),
                        ],
                        notes: "Give --region N, or --region-id N with --name, --oba-url and --sidecar-url."),
        OperatorCommand(name: "export", id: nil, access: .reads,
                        summary: "Write one region as a sidecar-export/1 document (moving to or from OBACloud)", options: [
                            region, OperatorOption("to", "FILE", "Write here instead of standard output"),
                        ],
                        notes: """
                            Carries alerts with their translations, studies, surveys with questions, survey
                            responses, push registrations and ghost-bus reports.
                            """),
        OperatorCommand(name: "import", id: nil, access: .writes,
                        summary: "Read a sidecar-export/1 document into its region, all or nothing", options: [
                            OperatorOption("file", "PATH|-", required: true, "The document (- for standard input)"),
                            OperatorOption("dry-run", nil, "Print what would be added and change nothing"),
                        ],
                        notes: "Importing the same document again changes nothing; an unknown field or region is an error naming where it is."),
    ]
}
