import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Sending an alert: the confirmation and the start (its live progress is
/// `ConsoleSendProgress.swift`).
/// One push per decision: the confirmation lists earlier sends and asks for
/// a deliberate second step before everyone gets the alert again, its
/// token is spent on the first submission (a refresh or a double click
/// starts nothing), and no send starts while one runs.
extension AlertSendConsolePages {
    enum AudienceChoice { case chosen(AlertSend.Audience), refused(Response) }

    func audience(_ request: Request, _ session: ConsoleStore.Session) -> AudienceChoice {
        guard let audience = AlertSend.Audience(rawValue: request.parameters["audience"] ?? "") else {
            return .refused(ConsoleLayout.errorPage(422, "Choose an audience", "Send to test devices or to everyone."))
        }
        if audience == .all && !ConsoleRules.may(session.user.role, .sendToEveryone) {
            return .refused(ConsoleLayout.errorPage(403, "Not allowed", "Only an administrator may send to everyone. Send to test devices instead."))
        }
        return .chosen(audience)
    }

    /// What a send's single-use token is for: this session, this alert, this audience.
    static func sendPurpose(_ session: ConsoleStore.Session, _ alert: ServiceAlert, _ audience: AlertSend.Audience) -> String {
        "send:\(session.idHash):\(alert.id):\(audience.rawValue)"
    }

    /// A push a source holds for review that the form approves: its source
    /// and entity, for an alert from a source whose review is still open.
    struct ReviewApproval: Sendable {
        var source: AlertSource
        var entityID: String
    }

    /// The review `?review=` names, or the page refusing it; nil when the
    /// form is an ordinary send.
    func reviewApproval(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async throws -> Result<
        ReviewApproval, ReviewRefusal
    >? {
        guard let entity = request.parameters["review"] else { return nil }
        guard let sourceID = alert.sourceID, alert.sourceEntity == entity, let (source, _) = try await sources.store.source(id: sourceID),
            let state = try await sources.store.state(alertID: alert.id), state.decision == .review
        else { return .failure(ReviewRefusal(response: .seeOther("/admin/regions/\(alert.regionID)/sources?done=source-decided"))) }
        guard ConsoleRules.may(context.session.user.role, .author) else {
            return .failure(ReviewRefusal(response: ConsoleLayout.errorPage(403, "Not allowed", "An editor or an admin approves a source's pushes.")))
        }
        return .success(ReviewApproval(source: source, entityID: entity))
    }

    /// A refused approval's answer.
    struct ReviewRefusal: Error {
        let response: Response
    }

    /// What each language group of the audience will get, flagged where a
    /// translation is missing or stale (they get the English).
    /// Also returns how many devices get the English because their
    /// language's translation is stale, and those languages' names.
    func languagePreview(_ alert: ServiceAlert, audience: AlertSend.Audience) async throws -> (html: HTML, staleDevices: Int, stale: [String]) {
        let groups = try await ConsoleStats.languageGroups(database: database, regionID: alert.regionID, audience: audience)
        let translations = try await alerts.translations(alertID: alert.id)
        let fresh = AlertFeedRules.fresh(translations, for: alert)
        var staleDevices = 0
        var stale: [String] = []
        for group in groups {
            guard let locale = group.locale, !fresh.contains(where: { $0.language.lowercased() == locale.lowercased() }),
                translations.contains(where: { $0.language.lowercased() == locale.lowercased() })
            else { continue }
            staleDevices += group.count
            stale.append(AlertWords.languageName(locale))
        }
        let rows: [[any HTMLContent]] = groups.map { group in
            let copy = AlertPushRules.copy(for: alert, translations: translations, locale: group.locale)
            let note: String
            if let locale = group.locale, !fresh.contains(where: { $0.language.lowercased() == locale.lowercased() }) {
                note =
                    translations.contains(where: { $0.language.lowercased() == locale.lowercased() })
                    ? "stale translation (made from an earlier English text): they get the English"
                    : "no translation: they get the English"
            } else {
                note = ""
            }
            return [
                group.locale.map(AlertWords.languageName) ?? "English (and every language without a translation)", Self.grouped(group.count),
                tag("span", [], [tag("strong", [], [copy.title]), " — ", copy.body]), note,
            ]
        }
        let warning: HTML =
            staleDevices == 0
            ? .empty
            : tag(
                "div", [.class("problems")],
                [
                    tag(
                        "p", [],
                        [
                            "The \(stale.joined(separator: ", ")) translation was made from an earlier English text: ",
                            tag("strong", [], ["\(Self.grouped(staleDevices)) device\(staleDevices == 1 ? "" : "s") would get the English"]), ".",
                        ]),
                    tag(
                        "p", [.class("actions")],
                        [tag("a", [.href("/admin/alerts/\(alert.id)#translations"), .class("button secondary")], ["Update translation"])]),
                ])
        let html: HTML = .join([
            tag("h2", [], ["What each language gets"]),
            ConsoleLayout.table(
                caption: "The push each language group of this audience receives", headers: ["Language", "Devices", "Push", ""], rows: rows,
                empty: "No device in this audience."),
            warning,
        ])
        return (html, staleDevices, stale)
    }

    /// Whether the alert's shown period is over: riders no longer see it.
    func hasEnded(_ alert: ServiceAlert) -> Bool { AlertFeedRules.hasEnded(alert, now: now) }

    /// When riders will see the alert in each app, from the apps' own rules
    /// (`AlertAppVisibility`), and for an ended alert the reason the editor
    /// must give to push it anyway.
    func whenRidersSeeIt(_ alert: ServiceAlert, zone: ZoneInfo) async throws -> HTML {
        var parts: [any HTMLContent] = [tag("h2", [], ["When riders see it"])]
        if hasEnded(alert) {
            parts.append(
                tag(
                    "p", [.class("problems")],
                    [
                        "This alert ended \(RegionTime.display(AlertFeedRules.effectiveEnd(alert), zone)): the apps no longer show it, ",
                        "and a push now tells riders about something that is over. To push it anyway, say why below.",
                    ]))
            return .join(parts)
        }
        if alert.startsAt > now {
            parts.append(
                tag(
                    "p", [],
                    [
                        "It starts \(RegionTime.display(alert.startsAt, zone)). A push now arrives before the apps show it: ",
                        "iOS lists it in the feed at once and shows its banner from 8 hours before the start; Android's dialog shows it from the start.",
                    ]))
        }
        let view = try await AlertFeedView.read(alerts, regionID: alert.regionID, now: now)
        let findings = view.appFindings(alert, now: now)
        if !alert.published {
            parts.append(
                tag(
                    "p", [],
                    [
                        alert.withdrawnAt != nil
                            ? "It is withdrawn: the apps no longer show it." : "It is a draft: riders see it in the apps once it is published."
                    ]))
        } else if findings.isEmpty && alert.startsAt <= now {
            parts.append(tag("p", [], ["Both apps show it now, in full."]))
        } else {
            let showing = [AlertAppVisibility.App.iOS, .android].filter { app in !findings.contains { $0.app == app } }
            parts.append(
                tag(
                    "ul", [],
                    findings.map { tag("li", [], [tag("strong", [], [$0.app.rawValue]), " \($0.text)."]) }
                        + showing.map { tag("li", [], [tag("strong", [], [$0.rawValue]), " shows it now, in full."]) }))
        }
        return .join(parts)
    }

    /// What a send form asks for: the source review it approves (a push
    /// from the review queue) and the audience, or the page refusing it.
    enum SendChoice {
        case chosen(ReviewApproval?, AlertSend.Audience)
        case answered(Response)
    }

    func reviewAndAudience(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> SendChoice {
        let review: ReviewApproval?
        do {
            switch try await reviewApproval(request, context, alert) {
            case .success(let approval)?: review = approval
            case .failure(let refusal)?: return .answered(refusal.response)
            case nil: review = nil
            }
        } catch { return .answered(unavailable(error)) }
        if let review { return .chosen(review, review.source.audience) }
        switch audience(request, context.session) {
        case .chosen(let chosen): return .chosen(nil, chosen)
        case .refused(let response): return .answered(response)
        }
    }

    func confirmSend(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let review: ReviewApproval?
        let audience: AlertSend.Audience
        switch await reviewAndAudience(request, context, alert) {
        case .chosen(let chosenReview, let chosenAudience): (review, audience) = (chosenReview, chosenAudience)
        case .answered(let response): return response
        }
        let count: Int
        let earlier: [AlertSend]
        let testDevices: (descriptions: [String], total: Int)
        let token: String
        let pacePerMinute: Int
        let zone = await zone(regionID: alert.regionID)
        do {
            pacePerMinute = try await RegionSettingsStore(database: database).settings(regionID: alert.regionID)?.pushPacePerMinute ?? 0
            count = try await alerts.sends.audienceCount(regionID: alert.regionID, audience: audience)
            earlier = try await alerts.sends.list(alertID: alert.id)
            testDevices = try await PushRegistrationStore(database: database).testDevices(regionID: alert.regionID)
            token = try await formTokens.issue(purpose: Self.sendPurpose(context.session, alert, audience), now: now)
        } catch { return unavailable(error) }
        if earlier.contains(where: { $0.status == "running" }) {
            return .seeOther("/admin/alerts/\(alert.id)?done=send-running#sends")
        }
        let who =
            audience == .test ? "\(count) test device\(count == 1 ? "" : "s")" : "everyone: \(Self.grouped(count)) device\(count == 1 ? "" : "s")"
        // A failed send of this audience is resumed, not repeated: only the
        // devices it did not reach get the alert.
        let resumed = review == nil ? earlier.last { $0.audience == audience && $0.status == "failed" } : nil
        let previousToEveryone = resumed == nil && review == nil && earlier.contains { $0.audience == .all }
        var content: [any HTMLContent] = [
            resumed.map { send in
                tag(
                    "p", [],
                    [
                        "This resumes send \(send.id) of “", alert.header, "”: only the devices it has not reached get it (",
                        tag("strong", [], ["\(Self.grouped(send.delivered)) of \(Self.grouped(send.audienceSize)) were delivered"]),
                        "). It stopped: \(Self.plainError(send)).",
                    ])
            }
                ?? tag(
                    "p", [],
                    [
                        "This pushes “", alert.header, "” to ", tag("strong", [], [who]),
                        " in \(context.region?.name ?? "this region"). It cannot be undone.",
                    ])
        ]
        if let review {
            content.insert(
                tag(
                    "p", [],
                    ["Source \(review.source.id) holds this push for review: approving sends it once, to the source's audience."]), at: 0)
        }
        if !alert.published {
            content.append(
                tag(
                    "p", [.class("hint")],
                    [
                        alert.withdrawnAt != nil
                            ? "The alert is withdrawn: riders no longer see it in the feed, and only test devices can get it."
                            : "The alert is a draft: test devices get it before riders can see it in the feed."
                    ]))
        }
        content.append(Self.pacing(alert, perMinute: pacePerMinute, devices: count - (resumed?.targeted ?? 0), now: now, zone: zone))
        var staleDevices = 0
        do {
            let preview = try await languagePreview(alert, audience: audience)
            staleDevices = preview.staleDevices
            content.append(preview.html)
            if review == nil { content.append(try await whenRidersSeeIt(alert, zone: zone)) }
        } catch { return unavailable(error) }
        if audience == .test {
            content.append(tag("h2", [], ["Test devices"]))
            content.append(
                testDevices.total == 0
                    ? tag(
                        "p", [.class("problems")],
                        ["This region has no test devices: register one from a debug build of the app with test_device=true."])
                    : tag(
                        "ul", [],
                        testDevices.descriptions.map { tag("li", [], [$0]) }
                            + (testDevices.total > testDevices.descriptions.count
                                ? [tag("li", [], ["and \(testDevices.total - testDevices.descriptions.count) more"])] : [])))
        }
        content.append(tag("h2", [], ["Sent before"]))
        content.append(
            ConsoleLayout.table(
                caption: "Earlier sends of this alert", headers: ["When", "Audience", "Status", "Delivered"],
                rows: earlier.reversed().map { send in
                    [
                        RegionTime.display(send.startedAt, zone), send.audience == .all ? "everyone" : "test devices", send.status,
                        "\(Self.grouped(send.delivered)) of \(Self.grouped(send.audienceSize))",
                    ] as [any HTMLContent]
                }, empty: "Never sent."))
        var fields: [any HTMLContent] = [
            tag("input", [Attribute("type", "hidden"), Attribute("name", "audience"), Attribute("value", audience.rawValue)]),
            tag("input", [Attribute("type", "hidden"), Attribute("name", "send_token"), Attribute("value", token)]),
        ]
        if let review {
            fields.append(tag("input", [Attribute("type", "hidden"), Attribute("name", "review"), Attribute("value", review.entityID)]))
        }
        if review == nil && hasEnded(alert) {
            fields.append(
                ConsoleLayout.field(
                    "Why push an alert that has ended?", name: "ended_reason", value: request.parameters["ended_reason"], required: true,
                    hint: "Recorded in the audit log with the send.", maxLength: 200))
        }
        if audience == .all && previousToEveryone {
            fields.append(tag("p", [.class("problems")], ["Everyone already got this alert. Riders get a second notification if you send it again."]))
            fields.append(ConsoleLayout.checkbox("Yes, send it to everyone again", name: "again", checked: false))
        }
        fields.append(
            tag(
                "div", [.class("actions")],
                [
                    tag(
                        "button", [Attribute("type", "submit"), .class(audience == .all ? "danger" : "primary"), Attribute("data-once", "true")],
                        [
                            review != nil
                                ? "Approve: push to \(who)"
                                : resumed != nil
                                    ? "Resume the send"
                                    : staleDevices > 0 ? "Send anyway to \(who) (\(Self.grouped(staleDevices)) get English)" : "Send to \(who)"
                        ]),
                    tag("a", [.href("/admin/alerts/\(alert.id)")], ["Cancel"]),
                ]))
        content.append(ConsoleLayout.form("/admin/alerts/\(alert.id)/sends", context.session, fields))
        return ConsoleLayout.respond(
            200, ConsoleLayout.page(review == nil ? "Send alert \(alert.id)?" : "Approve and push alert \(alert.id)?", context, content))
    }

    /// When the last device gets a paced send (or why it is not paced).
    static func pacing(_ alert: ServiceAlert, perMinute: Int, devices: Int, now: EpochSeconds, zone: ZoneInfo) -> HTML {
        guard perMinute > 0 else { return .empty }
        guard let pace = AlertSendPacing.pace(for: alert, perMinute: perMinute),
            let last = AlertSendPacing.lastDevice(audience: devices, pace: pace, now: now)
        else {
            return tag(
                "p", [.class("hint")],
                ["A severe alert goes at full speed: the region's pace of \(grouped(perMinute)) pushes a minute does not apply."])
        }
        return tag(
            "p", [.class("pacing")],
            [
                "Paced at \(grouped(pace)) pushes a minute (the region's setting): ",
                tag("strong", [], ["the last device gets it about \(RegionTime.display(last, zone))"]),
                " (\(zone.identifier)), so riders opening it do not all reach the OneBusAway server in the same minute.",
            ])
    }

    func startSend(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let review: ReviewApproval?
        let audience: AlertSend.Audience
        switch await reviewAndAudience(request, context, alert) {
        case .chosen(let chosenReview, let chosenAudience): (review, audience) = (chosenReview, chosenAudience)
        case .answered(let response): return response
        }
        guard sends.transport != nil else {
            return ConsoleLayout.errorPage(
                409, "No push transport", "This server has no push transport configured (gorush, APNs and FCM, or a relay); its operator sets one.")
        }
        // An ended alert goes out only with the editor's reason; the
        // confirmation stays valid, so going back and giving one works.
        let endedReason = request.parameters["ended_reason"]?.trimmingWhitespace().presence
        if review == nil && hasEnded(alert) && endedReason == nil {
            return ConsoleLayout.errorPage(
                422, "Not sent",
                "This alert has ended: riders no longer see it in the apps. Go back and say why it should be pushed anyway, or edit its end first.")
        }
        do {
            // A resubmitted confirmation (refresh, double click) starts nothing.
            switch try await formTokens.spend(
                request.parameters["send_token"] ?? "", purpose: Self.sendPurpose(context.session, alert, audience), now: now)
            {
            case .invalid:
                return ConsoleLayout.errorPage(403, "This confirmation has expired", "Nothing was sent. Open the alert and confirm the send again.")
            case .repeated:
                return .seeOther("/admin/alerts/\(alert.id)?done=send-repeated#sends")
            case .first:
                break
            }
            if let review {
                // Decided once: a second approval finds the review closed.
                _ = try await sourceAdministration(context.session).decide(id: review.source.id, entityID: review.entityID, approve: true)
                return .seeOther("/admin/alerts/\(alert.id)?done=source-approved#sends")
            }
            let earlier = try await alerts.sends.list(alertID: alert.id)
            if earlier.contains(where: { $0.status == "running" }) {
                return .seeOther("/admin/alerts/\(alert.id)?done=send-running#sends")
            }
            let resuming = earlier.contains { $0.audience == audience && $0.status == "failed" }
            if audience == .all, !resuming, earlier.contains(where: { $0.audience == .all }), request.parameters["again"] != "true" {
                return ConsoleLayout.errorPage(
                    422, "Not sent", "Everyone already got this alert. To send it again, tick “Yes, send it to everyone again”.")
            }
            let (send, _) = try await administration(context.session).startSend(
                id: alert.id, audience: audience, endedReason: hasEnded(alert) ? endedReason : nil)
            sends.launch(send)
            return .seeOther("/admin/alerts/\(alert.id)?done=sending#sends")
        } catch AdministrationError.approvalPending {
            return .seeOther("/admin/alerts/\(alert.id)?done=approval-requested#approvals")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not sent", error.messages.joined(separator: " "))
        } catch AlertStoreError.busy {
            return ConsoleLayout.errorPage(409, "Already sending", "This send is running on another server; its progress shows on the alert's page.")
        } catch { return unavailable(error) }
    }

}
