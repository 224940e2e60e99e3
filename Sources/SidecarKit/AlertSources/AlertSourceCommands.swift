import Core
import FoundationEssentials
import GTFSRealtime

/// Alert sources: `source add|list|show|edit|remove|poll|reviews|approve|dismiss`.
enum AlertSourceCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "source add", id: nil, access: .writes,
            summary: "Add a GTFS-realtime Alerts feed to a region: its alerts are mirrored and may be pushed",
            options: [OperatorCommands.region, OperatorOption("url", "URL", required: true, "The feed (http or https)")] + sourceSettings + [
                OperatorCommands.agencyCheck
            ],
            notes: sourceNotes,
            run: { c in
                let regionID = try c.region()
                // Its alerts go out under the region's agency id.
                try await c.checkAgency(
                    try await RegionSettingsStore(database: c.alerts.database).all()[regionID]?.agencyID, regionID: regionID, refuse: false)
                let source = try await c.sourceAdministration.add(regionID: regionID, fields: c.options)
                c.output("source \(source.id)")
                return 0
            }),
        OperatorCommand(
            name: "source list", id: nil, access: .reads, summary: "List alert sources with their last poll",
            options: [OperatorCommands.optionalRegion],
            run: { c in
                let regionID = c.options["region"].flatMap { Int($0) }
                for (source, status) in try await c.sourceStore.sources(regionID: regionID) {
                    let zone = await c.zone(regionID: source.regionID)
                    c.output(
                        "\(source.id)\tregion \(source.regionID)\t\(source.mode.rawValue)\tpush \(source.push.rawValue)\t"
                            + "\(SourceDescription.state(status))\tlast poll \(RegionTime.display(status.lastPollAt, zone))\t\(source.url)")
                }
                return 0
            }),
        OperatorCommand(
            name: "source show", id: "ID", access: .reads, summary: "Show a source's settings and status", options: [],
            run: { c in
                guard let (source, status) = try await c.sourceStore.source(id: try c.id()) else {
                    throw AdministrationError.notFound("No source \(try c.id())")
                }
                c.output(SourceDescription.lines(source, status, zone: await c.zone(regionID: source.regionID)).joined(separator: "\n"))
                return 0
            }),
        OperatorCommand(
            name: "source edit", id: "ID", access: .changes, summary: "Change a source's settings (only those given); it is polled again at once",
            options: [OperatorOption("url", "URL", "The feed (http or https)")] + sourceSettings, notes: sourceNotes,
            run: { c in
                let before = try await c.sourceStore.source(id: try c.id())?.0
                let source = try await c.sourceAdministration.edit(id: try c.id(), fields: c.options)
                c.output("updated source \(source.id)")
                if let before, before.url != source.url {
                    // Secrets and allowances were granted for the old feed.
                    let dropped = before.headers.filter { header in !source.headers.contains(header) }.map(\.name)
                    if !dropped.isEmpty {
                        c.output(
                            "the URL changed: its secret headers (\(dropped.joined(separator: ", "))) were dropped; give them again with --header-file or --header-env"
                        )
                    }
                    if (before.allowPrivate && !source.allowPrivate) || (before.allowLinkLocal && !source.allowLinkLocal) {
                        c.output(
                            "the URL changed: its address allowances were dropped; give --allow-private true or --allow-link-local true again if the new feed needs them"
                        )
                    }
                }
                return 0
            }),
        OperatorCommand(
            name: "source remove", id: "ID", access: .changes, summary: "Remove a source and the alerts it brought", options: [],
            run: { c in
                try await c.sourceAdministration.remove(id: try c.id())
                c.output("removed source \(try c.id())")
                return 0
            }),
        OperatorCommand(
            name: "source poll", id: "ID", access: .changes,
            summary: "Poll a source now and print what changed; sends it decides are carried out by a running server",
            options: [],
            run: { c in
                let report = try await c.sourcePoller.pollNow(sourceID: try c.id())
                report.lines.forEach(c.output)
                if let failure = report.failure {
                    c.errors("sidecar: error: failed: \(failure)")
                    return 1
                }
                return 0
            }),
        OperatorCommand(
            name: "source reviews", id: "ID", access: .reads, summary: "List a source's alerts waiting for an editor", options: [],
            run: { c in
                for (state, header) in try await c.sourceStore.reviews(sourceID: try c.id()) {
                    c.output("\(state.entityID)\t\(state.reason ?? "")\t\(header)")
                }
                return 0
            }),
        OperatorCommand(
            name: "source approve", id: "ID", access: .changes, summary: "Push an alert waiting for review (once)",
            options: [OperatorOption("entity", "ENTITY", required: true, "The alert's entity id at the source (see 'sidecar source reviews ID')")],
            run: { c in
                let lines = try await c.sourceAdministration.decide(id: try c.id(), entityID: c.options["entity"] ?? "", approve: true)
                lines.forEach(c.output)
                return 0
            }),
        OperatorCommand(
            name: "source dismiss", id: "ID", access: .changes, summary: "Dismiss an alert waiting for review: it is not pushed",
            options: [OperatorOption("entity", "ENTITY", required: true, "The alert's entity id at the source")],
            run: { c in
                _ = try await c.sourceAdministration.decide(id: try c.id(), entityID: c.options["entity"] ?? "", approve: false)
                c.output("dismissed \(c.options["entity"] ?? "")")
                return 0
            }),
        OperatorCommand(
            name: "source hide", id: "ID", access: .changes,
            summary: "Keep one of a source's alerts out of the region's feed while the source lists it",
            options: [OperatorOption("entity", "ENTITY", required: true, "The alert's entity id at the source")],
            run: { c in
                let entity = c.options["entity"] ?? ""
                let changed = try await c.sourceAdministration.setHidden(id: try c.id(), entityID: entity, hidden: true)
                c.output(changed ? "hid \(entity) from the feed" : "\(entity) was already out of the feed")
                return 0
            }),
        OperatorCommand(
            name: "source unhide", id: "ID", access: .changes, summary: "Let a hidden alert of a source back into the region's feed",
            options: [OperatorOption("entity", "ENTITY", required: true, "The alert's entity id at the source")],
            run: { c in
                let entity = c.options["entity"] ?? ""
                let changed = try await c.sourceAdministration.setHidden(id: try c.id(), entityID: entity, hidden: false)
                c.output(changed ? "\(entity) is back in the feed" : "\(entity) was not hidden")
                return 0
            }),
    ]

    /// The settings `source add` and `source edit` take.
    static let sourceSettings: [OperatorOption] = [
        OperatorOption("mode", "mirror|push-only", "mirror (default): in the region's feed; push-only: only pushed"),
        OperatorOption("interval", "SECONDS", "Seconds between polls (default 60, at least 15)"),
        OperatorOption("push", "off|auto|review", "Whether new and changed alerts push: review (default) waits for an editor"),
        OperatorOption("min-severity", "LEVEL", "The least severity that pushes (default WARNING)"),
        OperatorOption("effects", "E1,E2", "Only these effects push (default: any)"),
        OperatorOption("scope", "agency|route|any", "How narrow an alert may be and push (default route: agency- and route-wide)"),
        OperatorOption("quiet-hours", "HH:MM-HH:MM|none", "Pushes wait while inside, in the region's time zone"),
        OperatorOption("audience", "all|test", "Who gets the pushes (default all; test: only test devices)"),
        OperatorOption("flood-threshold", "N", "More new or changed alerts than this in one poll all wait for review (default 20)"),
        OperatorOption("push-corrections", "true|false", "Push again a change made within 10 minutes of a push (default false)"),
        OperatorOption("header-file", "NAME:PATH", repeatable: true, "A request header whose value is read from a file at each poll"),
        OperatorOption("header-env", "NAME:VARIABLE", repeatable: true, "A request header whose value is read from the environment"),
        OperatorOption("allow-link-local", "true|false", "Allow a link-local or cloud metadata address (refused by default)"),
        OperatorOption(
            "allow-private", "true|false",
            "Allow a loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7) or CGNAT (100.64/10) address: an on-premises feed (refused by default)"
        ),
        OperatorOption("pushes-per-hour", "N", "Pushes the rules may start in an hour; beyond, they wait for review (default 4, 1 to 60)"),
        OperatorOption("max-bytes", "N", "The largest feed accepted (default 8388608)"),
    ]

    static let sourceNotes = """
        Severities: \(SeverityLevel.allCases.map(\.name).joined(separator: " "))
        Effects: \(Effect.allCases.map(\.name).joined(separator: " "))
        The region needs an agency id first: sidecar region set --id N --agency-id ID.
        A running 'sidecar serve' on the same database polls each source at its interval (a new or edited one at once).
        A changed --url drops the source's secret headers and address allowances unless the same command gives them again.
        Polls use no proxy, whatever http_proxy says; 'sidecar serve --source-proxy URL' sends them through one.
        """
}

/// How a source reads in the CLI (and the console).
enum SourceDescription {
    static func state(_ status: AlertSourceStatus) -> String {
        guard let state = status.state else { return "never polled" }
        if state == "failing", let since = status.failingSince, let last = status.lastPollAt,
            last.seconds(since: since) >= AlertSourceRules.staleAfterSeconds
        {
            return "failing for over an hour (its last good alerts are kept)"
        }
        return state
    }

    static func lines(_ source: AlertSource, _ status: AlertSourceStatus, zone: ZoneInfo) -> [String] {
        func time(_ instant: EpochSeconds?) -> String { RegionTime.display(instant, zone) }
        var lines = [
            "source \(source.id) (region \(source.regionID)); times in \(zone.identifier)",
            "  url:           \(source.url)",
            "  mode:          \(source.mode.rawValue), every \(source.intervalSeconds) s",
            "  push:          \(source.push.rawValue) to \(source.audience.rawValue); severity \(source.minSeverity.name) or more; "
                + "effects \(source.effects.isEmpty ? "any" : source.effects.map(\.name).joined(separator: ","))",
            "  scope:         \(source.scope.rawValue); quiet hours \(source.quietHours?.text ?? "none"); flood threshold \(source.floodThreshold); "
                + "corrections \(source.pushCorrections ? "push" : "do not push")",
            "  headers:       \(source.headers.isEmpty ? "none" : source.headers.map(\.described).joined(separator: ", "))",
            "  may reach:     the internet"
                + (source.allowPrivate ? ", loopback, private and CGNAT addresses (allowed)" : "")
                + (source.allowLinkLocal ? ", link-local and metadata addresses (allowed)" : ""),
            "  pushes:        at most \(source.pushesPerHour) an hour from this source, \(AlertSourceRules.pushesPerDevicePerHour) from all of the region's",
            "status:          \(state(status))",
            "last poll:       \(time(status.lastPollAt))",
            "last success:    \(time(status.lastSuccessAt))",
            "next poll:       \(status.nextPollAt > 0 ? time(status.nextPollAt) : "at once")",
            "etag:            \(status.etag ?? "-")",
            "alerts:          \(status.alertCount)",
            "polls:           \(status.polls)",
            "not modified:    \(status.notModified)",
            "failures:        \(status.failedPolls) (\(status.failures) in a row)",
            "pushes:          \(status.pushes)",
            "last error:      \(status.lastError ?? "-")",
        ]
        if let held = status.heldReason { lines.append("held:            \(held)") }
        lines += status.problems.map { "problem:         \($0)" }
        return lines
    }
}
