import Core

/// Scheduled sends, as the CLI, the admin API and the console make them:
/// at the alert's start or a chosen time, listed, changed and cancelled
/// until they go (the server's `AlertScheduler` starts them).
extension AlertAdministration {
    var schedules: AlertScheduleStore { AlertScheduleStore(database: store.database) }

    /// Schedules a send of an authored alert; `at` is `start` or an instant
    /// with its offset; `ifChanged` is `hold` (default) or `skip`.
    func schedule(alertID: Int64, at: String, audience: String?, ifChanged: String?) async throws -> AlertSchedule {
        let alert = try await authored(id: alertID)
        var messages: [String] = []
        let chosenAudience = AlertSend.Audience(rawValue: audience?.presence ?? "all")
        if chosenAudience == nil { messages.append("audience must be all or test") }
        if chosenAudience == .all && alert.test { messages.append("A test alert can only be sent to the test audience") }
        let choice = AlertSchedule.IfChanged(rawValue: ifChanged?.presence ?? "hold")
        if choice == nil { messages.append("if_changed must be hold (wait for an editor) or skip (do not send)") }
        var when: (atStart: Bool, runAt: EpochSeconds)?
        switch AlertScheduleRules.runAt(at, alert: alert, now: now, parse: AlertInputRules.parseTime) {
        case .success(let value): when = value
        case .failure(let failure): messages += failure.messages
        }
        if try await schedules.openCount(alertID: alertID) >= AlertScheduleRules.maxOpenPerAlert {
            messages.append("alert \(alertID) already has \(AlertScheduleRules.maxOpenPerAlert) scheduled sends: cancel one first")
        }
        guard messages.isEmpty, let chosenAudience, let choice, let when else { throw AdministrationError.invalid(messages) }
        let created = try await schedules.create(
            AlertSchedule(
                id: 0, alertID: alertID, regionID: alert.regionID, audience: chosenAudience, atStart: when.atStart, runAt: when.runAt,
                ifChanged: choice, alertFingerprint: AlertScheduleRules.fingerprint(alert), status: .scheduled, sendID: nil, reason: nil,
                createdBy: actor, createdAt: now, updatedAt: now))
        await record(
            "alert.schedule", region: alert.regionID, target: "alert \(alertID)",
            detail:
                "schedule \(created.id); audience=\(chosenAudience.rawValue); at=\(when.atStart ? "start" : Timestamp.format(when.runAt)); if_changed=\(choice.rawValue)"
        )
        return created
    }

    /// The schedule and its alert, if the schedule belongs to it.
    func schedule(id: Int64, alertID: Int64? = nil) async throws -> AlertSchedule {
        guard let schedule = try await schedules.find(id: id), alertID.map({ $0 == schedule.alertID }) ?? true else {
            throw AdministrationError.notFound("No scheduled send \(id)")
        }
        return schedule
    }

    /// Gives an open schedule a new time or choice; it then goes with the
    /// alert as it is now (a held one is scheduled again).
    func reschedule(id: Int64, at: String?, ifChanged: String?) async throws -> AlertSchedule {
        let current = try await schedule(id: id)
        guard current.isOpen else {
            throw AdministrationError.invalid(["scheduled send \(id) is \(current.status.rawValue): only one still to go can change"])
        }
        let alert = try await authored(id: current.alertID)
        var messages: [String] = []
        var when = (atStart: current.atStart, runAt: current.atStart ? alert.startsAt : current.runAt)
        if let at = at?.presence ?? (current.status == .held ? (current.atStart ? "start" : Timestamp.format(current.runAt)) : nil) {
            switch AlertScheduleRules.runAt(at, alert: alert, now: now, parse: AlertInputRules.parseTime) {
            case .success(let value): when = value
            case .failure(let failure): messages += failure.messages
            }
        }
        let choice = ifChanged?.presence.map { AlertSchedule.IfChanged(rawValue: $0) } ?? current.ifChanged
        if choice == nil { messages.append("if_changed must be hold (wait for an editor) or skip (do not send)") }
        guard messages.isEmpty, let choice else { throw AdministrationError.invalid(messages) }
        guard
            let changed = try await schedules.reschedule(
                id: id, atStart: when.atStart, runAt: when.runAt, ifChanged: choice, fingerprint: AlertScheduleRules.fingerprint(alert), now: now)
        else { throw AdministrationError.invalid(["scheduled send \(id) has just gone or been cancelled"]) }
        await record(
            "alert.schedule.edit", region: alert.regionID, target: "alert \(alert.id)",
            detail: "schedule \(id); at=\(when.atStart ? "start" : Timestamp.format(when.runAt)); if_changed=\(choice.rawValue)")
        return changed
    }

    func cancelSchedule(id: Int64) async throws {
        let current = try await schedule(id: id)
        guard try await schedules.cancel(id: id, now: now) else {
            throw AdministrationError.invalid(["scheduled send \(id) is \(current.status.rawValue): only one still to go can be cancelled"])
        }
        await record("alert.schedule.cancel", region: current.regionID, target: "alert \(current.alertID)", detail: "schedule \(id)")
    }
}
