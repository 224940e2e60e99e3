import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Push

/// Regions and whole-region documents: `region sync|list|set`, `ghostbus export`, `export`, `import`.
enum RegionCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "region sync", id: nil, access: .reads,
            summary: "Read the regions directory and say what it holds (the Go reference's cutover runbook step)",
            options: [],
            notes:
                "Sidecar keeps no copy of the directory: every server reads it at start and every --regions-refresh, and every command reads it as this one does.",
            run: { c in
                let regions = c.regions.all
                c.output("the regions directory holds \(regions.count) regions (\(regions.map { String($0.id) }.joined(separator: ", ")))")
                return 0
            }),
        OperatorCommand(
            name: "region list", id: nil, access: .reads,
            summary: "List the regions of the directory with their agency id and time zone", options: [],
            run: { c in
                for (region, settings) in try await c.administration.regionList() {
                    let pace = settings.map { $0.pushPacePerMinute == 0 ? "none" : "\($0.pushPacePerMinute)/min" } ?? "none"
                    c.output(
                        "\(region.id)\t\(region.name)\tagency=\(settings?.agencyID ?? "-")\ttimezone=\(settings?.timezone ?? "-")\tpush_pace=\(pace)")
                }
                return 0
            }),
        OperatorCommand(
            name: "region set", id: nil, access: .writes,
            summary: "Set a region's OneBusAway agency id (used in the alerts feed), time zone, push pace and two-person approval",
            options: [
                OperatorOption("id", "N", required: true, "The region's id in the regions directory"),
                OperatorOption("agency-id", "ID", "The agency id alerts name in the feed"),
                OperatorOption("timezone", "ZONE|none", "A tz database zone such as America/Los_Angeles; none clears it"),
                OperatorOption("fixed-offset", "true|false", "The region does not observe daylight time: accept EST, MST or HST as they are"),
                OperatorOption(
                    "require-approval", "true|false",
                    "Publishing an alert and sending to everyone wait for a second person's approval ('sidecar approval approve ID')"),
                OperatorOption(
                    "push-pace", "N|0",
                    "Pushes a minute a send to the region goes out at (60 to 1000000; 0: as fast as possible); SEVERE alerts go at full speed"),
                OperatorCommands.agencyCheck,
            ],
            run: { c in
                guard let id = c.options["id"].flatMap({ Int($0) }) else { throw AdministrationError.invalid(["--id N is required"]) }
                try await c.checkAgency(c.options["agency_id"], regionID: id)
                let settings = try await c.administration.setRegion(
                    id: id, agencyID: c.options["agency_id"], timezone: c.options["timezone"],
                    fixedOffset: c.options["fixed_offset"].flatMap(BooleanParameter.read) ?? false, pushPace: c.options["push_pace"],
                    requireApproval: c.options["require_approval"])
                c.output(
                    "region \(id): agency=\(settings.agencyID ?? "-") timezone=\(settings.timezone ?? "-")"
                        + " push_pace=\(settings.pushPacePerMinute == 0 ? "none" : "\(settings.pushPacePerMinute)/min")"
                        + " approval=\(settings.requiresApproval ? "two people" : "none")")
                return 0
            }),
        OperatorCommand(
            name: "ghostbus export", id: nil, access: .reads,
            summary: "Write a region's ghost-bus reports as CSV to standard output", options: [OperatorCommands.region],
            run: { c in
                let regionID = try c.region()
                _ = try c.administration.region(regionID)
                // A page at a time: a region's every report never sits in memory.
                try await GhostBusStore(database: c.database).exportCSV(regionID: regionID, zone: await c.zone(regionID: regionID)) { chunk in
                    c.output(String(chunk.dropLast()))
                }
                return 0
            }),
        OperatorCommand(
            name: "export", id: nil, access: .reads,
            summary: "Write one region as a sidecar-export/1 document (moving to or from OBACloud)",
            options: [
                OperatorCommands.region, OperatorOption("to", "FILE", "Write here instead of standard output"),
            ],
            notes: """
                Carries alerts with their translations, studies, surveys with questions, survey
                responses, push registrations and ghost-bus reports.
                """,
            run: { c in
                let regionID = try c.region()
                _ = try c.administration.region(regionID)
                let document = try await RegionExport.export(regionID: regionID, database: c.database, nowMillis: c.clock.nowMillis)
                let text = String(decoding: document.prettyEncoded(), as: UTF8.self) + "\n"
                if let path = c.options["to"], path != "-" {
                    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
                        throw AdministrationError.invalid(["cannot write \(path)"])
                    }
                    c.errors("wrote region \(regionID) to \(path)")
                } else {
                    c.output(String(text.dropLast()))
                }
                return 0
            }),
        OperatorCommand(
            name: "import", id: nil, access: .writes,
            summary: "Read a sidecar-export/1 document into its region, all or nothing",
            options: [
                OperatorOption("file", "PATH|-", required: true, "The document (- for standard input)"),
                OperatorOption("dry-run", nil, "Print what would be added and change nothing"),
                OperatorOption("strict", nil, "Refuse a field this sidecar does not know (by default it is skipped and listed)"),
            ],
            notes:
                "Importing the same document again changes nothing; an unknown region is an error, an unknown field (a newer exporter's) is skipped and listed.",
            run: { c in
                let document: RegionExchange.Document
                let strict = c.options["strict"].map { $0 != "false" } ?? false
                do { document = try RegionDocumentParser.parse(try c.document(c.options["file"]), regions: c.regions, strict: strict) } catch let
                    failure
                    as RegionExchange.Failure
                {
                    throw AdministrationError.invalid(["import: \(failure.description)"])
                }
                let dryRun = c.options["dry_run"].map { $0 != "false" } ?? false
                let summary: RegionExchange.Summary
                do {
                    summary = try await RegionImport.importDocument(document, database: c.database, dryRun: dryRun, nowSeconds: c.now)
                } catch let failure as RegionExchange.Failure {
                    throw AdministrationError.invalid(["import: \(failure.description); nothing was imported"])
                }
                if !dryRun {
                    await c.audit.record(
                        actor: c.actor, action: "region.import", regionID: document.regionID, target: "region \(document.regionID)",
                        detail: summary.lines.map { $0.trimmingWhitespace() }.joined(separator: "; "), now: c.now)
                }
                c.output(
                    dryRun
                        ? "dry run: importing into region \(document.regionID) would do this (nothing was changed):"
                        : "imported into region \(document.regionID):")
                summary.lines.forEach(c.output)
                document.warnings.forEach { c.errors("warning: " + $0) }
                return 0
            }),
    ]
}
