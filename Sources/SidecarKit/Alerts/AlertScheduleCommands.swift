import Core

/// Scheduled sends: `schedule add|list|edit|cancel`. A running server
/// starts them when due (`AlertScheduler`).
enum AlertScheduleCommands {
    static let ifChanged = OperatorOption(
        "if-changed", "hold|skip",
        "If the alert is edited, withdrawn or ended before then: hold (default; it waits for an editor) or skip (it does not go)")

    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "schedule add", id: "ALERT", access: .changes, summary: "Schedule a send of an alert at its start or at a time",
            options: [
                OperatorOption(
                    "at", "start|TIME", required: true, "start (the alert's start) or a time with its UTC offset, e.g. 2026-12-01T08:00:00-08:00"),
                OperatorOption("audience", "all|test", "Everyone (default) or only test devices"),
                ifChanged,
            ],
            notes: "A running server starts it within 10 s of its time; 'schedule list' shows it until then.",
            run: { c in
                let schedule = try await c.administration.schedule(
                    alertID: try c.id(), at: c.options["at"] ?? "", audience: c.options["audience"], ifChanged: c.options["if_changed"])
                c.output(line(schedule, zone: await c.zone(regionID: schedule.regionID)))
                return 0
            }),
        OperatorCommand(
            name: "schedule list", id: nil, access: .reads, summary: "A region's scheduled sends still to go or held, times in the region's zone",
            options: [OperatorCommands.region],
            run: { c in
                let regionID = try c.region()
                let zone = await c.zone(regionID: regionID)
                for schedule in try await c.administration.schedules.open(regionID: regionID) { c.output(line(schedule, zone: zone)) }
                return 0
            }),
        OperatorCommand(
            name: "schedule edit", id: "ID", access: .changes, summary: "Give a scheduled send a new time or choice (a held one goes again)",
            options: [OperatorOption("at", "start|TIME", "start or a time with its UTC offset"), ifChanged],
            run: { c in
                let schedule = try await c.administration.reschedule(id: try c.id(), at: c.options["at"], ifChanged: c.options["if_changed"])
                c.output(line(schedule, zone: await c.zone(regionID: schedule.regionID)))
                return 0
            }),
        OperatorCommand(
            name: "schedule cancel", id: "ID", access: .changes, summary: "Cancel a scheduled send that has not gone", options: [],
            run: { c in
                let id = try c.id()
                try await c.administration.cancelSchedule(id: id)
                c.output("cancelled scheduled send \(id)")
                return 0
            }),
    ]

    /// `12  alert 7  all  2026-12-01T08:00:00-08:00 (its start)  hold  scheduled`.
    static func line(_ schedule: AlertSchedule, zone: ZoneInfo) -> String {
        let when = RegionTime.iso8601(schedule.runAt, zone) + (schedule.atStart ? " (its start)" : "")
        return "\(schedule.id)\talert \(schedule.alertID)\t\(schedule.audience.rawValue)\t\(when)\tif changed: \(schedule.ifChanged.rawValue)"
            + "\t\(schedule.status.rawValue)" + (schedule.reason.map { ": \($0)" } ?? "") + (schedule.sendID.map { " (send \($0))" } ?? "")
    }
}
