import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Alerts: what an editor does to one alert besides editing it: publish,
/// unpublish, end now, delete a draft.
extension AlertConsolePages {
    /// Only a draft that was never published and never sent may be
    /// deleted: anything riders may have seen stays, withdrawn, on record.
    static func deletable(_ alert: ServiceAlert, sent: Bool) -> Bool { !alert.published && alert.withdrawnAt == nil && !sent }

    func confirmDeleteDraft(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) -> Response {
        guard !alert.published && alert.withdrawnAt == nil else { return .seeOther("/admin/alerts/\(alert.id)") }
        return ConsoleLayout.respond(
            200,
            ConsoleLayout.page(
                "Delete draft \(alert.id)?", context,
                [
                    tag(
                        "p", [],
                        [
                            "“", alert.header, "” and its translations are deleted. Riders never saw it: it was never published.",
                            alert.test ? " It is a test alert." : "",
                        ]),
                    ConsoleLayout.form(
                        "/admin/alerts/\(alert.id)/delete", context.session,
                        [
                            ConsoleLayout.confirmActions("Delete the draft", cancel: "/admin/alerts/\(alert.id)")
                        ]),
                ]))
    }

    func deleteDraft(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        do {
            let sent = !(try await alerts.sends.list(alertID: alert.id)).isEmpty
            guard Self.deletable(alert, sent: sent) else {
                return ConsoleLayout.errorPage(
                    409, "Not deleted", "Only a draft that was never published or sent can be deleted; unpublish a live alert instead.")
            }
            try await administration(context.session).delete(id: alert.id)
            return .seeOther("/admin/regions/\(alert.regionID)/alerts?done=draft-deleted")
        } catch AdministrationError.notFound {
            return .seeOther("/admin/regions/\(alert.regionID)/alerts?done=draft-deleted")
        } catch { return unavailable(error) }
    }

    func confirmUnpublish(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) -> Response {
        guard alert.published else { return .seeOther("/admin/alerts/\(alert.id)") }
        return ConsoleLayout.respond(
            200,
            ConsoleLayout.page(
                "Unpublish alert \(alert.id)?", context,
                [
                    tag(
                        "p", [],
                        [
                            "“", alert.header, "” leaves the feed at once: riders' apps stop showing it. Notifications already delivered stay on ",
                            "their phones. You can publish it again later.",
                        ]),
                    ConsoleLayout.form(
                        "/admin/alerts/\(alert.id)/unpublish", context.session,
                        [
                            ConsoleLayout.confirmActions("Unpublish", cancel: "/admin/alerts/\(alert.id)")
                        ]),
                ]))
    }

    func setPublished(_ context: ConsoleLayout.Context, _ alert: ServiceAlert, _ published: Bool) async -> Response {
        do {
            let saved = try await administration(context.session).setPublished(id: alert.id, published)
            let done = published ? (saved.warnings.isEmpty ? "published" : "published-with-warnings") : "unpublished"
            return .seeOther("/admin/alerts/\(alert.id)?done=\(done)")
        } catch AdministrationError.approvalPending {
            return .seeOther("/admin/alerts/\(alert.id)?done=approval-requested#approvals")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not published", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }

    /// "Acknowledge these warnings": the codes the page listed (a warning
    /// gone since is refused with the others, so nothing unseen is taken).
    func acknowledge(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let codes = (request.parameters["codes"] ?? "").split(separator: " ").map(String.init)
        do {
            _ = try await administration(context.session).acknowledge(id: alert.id, codes: codes)
            return .seeOther("/admin/alerts/\(alert.id)?done=acknowledged")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not acknowledged", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }

    /// "End now": the alert's end becomes this second (a second after its
    /// start when it began this very second, since an end must follow the
    /// start), so it leaves the feed at once; an impact period past the new
    /// end is cut to it. An alert already over is left alone, so a refresh or
    /// a second click changes nothing.
    func endNow(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        if AlertFeedRules.hasEnded(alert, now: now) {
            return .seeOther("/admin/alerts/\(alert.id)?done=ended")
        }
        let end = max(now, alert.startsAt.adding(seconds: 1))
        var fields = ["end": Timestamp.format(end)]
        if let impactEnd = alert.impactEndsAt, impactEnd > end {
            if let impactStart = alert.impactStartsAt, impactStart < end {
                fields["impact_end"] = Timestamp.format(end)
            } else {
                fields["impact_start"] = "none"
                fields["impact_end"] = "none"
            }
        }
        do {
            _ = try await administration(context.session).edit(id: alert.id, fields: fields)
            return .seeOther("/admin/alerts/\(alert.id)?done=ended")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not ended", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }
}
