import Core
import Database
import HTTPServer

/// What every console page of an alert is built with: the kit's pages plus
/// the alert the path's `:alert` names, found and checked against the
/// user's regions before the page runs.
protocol AlertPages: ConsolePages {
    /// What the alert pages read and change: the alert store, the sends,
    /// the shared administration, the sources (for a mirrored alert).
    var services: FeatureContext { get }
}

extension AlertPages {
    var alerts: AlertStore { services.stores.alerts }
    var sends: AlertSendRunner { services.alertSends }
    var administration: AlertAdministration { services.administration }
    var sources: AlertSourceAdministration { services.alertSources().administration }
    var database: any Database { services.database }

    /// The send pages, for the progress table an alert's page shows.
    var sendPages: AlertSendConsolePages { AlertSendConsolePages(console: console, services: services) }

    /// The operations as this user: changes are audited under their email.
    func administration(_ session: ConsoleStore.Session) -> AlertAdministration { administration.acting(as: "user:" + session.user.email) }

    /// The alert sources' management as this user, audited under their email.
    func sourceAdministration(_ session: ConsoleStore.Session) -> AlertSourceAdministration {
        sources.acting(as: "user:" + session.user.email)
    }

    /// A page of the alert in `:alert`, for a user allowed `action` in its region.
    func alertRoute(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleLayout.Context, ServiceAlert) async -> Response
    ) -> Route {
        route(method, path, .session("\(action)")) { request in await withAlert(request, action, handler) }
    }

    /// An authoring page of the alert in `:alert`: an alert from a source is
    /// changed at its source, and the page says so instead.
    func authoredAlertRoute(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleLayout.Context, ServiceAlert) async -> Response
    ) -> Route {
        alertRoute(method, path, action) { request, context, alert in
            alert.sourceID == nil ? await handler(request, context, alert) : MirroredAlertConsolePages.mirroredRefusal(alert)
        }
    }

    /// Runs `handler` with the alert the path names; one of a region the
    /// user may not see is answered as missing.
    func withAlert(
        _ request: Request, _ action: ConsoleAction,
        _ handler: @escaping (Request, ConsoleLayout.Context, ServiceAlert) async -> Response
    ) async -> Response {
        let alerts = alerts
        return await withObject(
            request, action, parameter: "alert", section: .alerts, find: { try await alerts.find(id: $0) }, regionOf: \.regionID, handler)
    }
}

/// The console's alert pages: a region's alerts, an alert's page,
/// publishing, ending and deleting. The form (`AlertFormConsolePages`),
/// translations (`AlertTranslationConsolePages`), sends
/// (`AlertSendConsolePages`) and a mirrored alert's page
/// (`MirroredAlertConsolePages`, in `AlertSources/`) are pages structs of
/// their own, whose parts an alert's page shows.
struct AlertConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/alerts", .read) { request, context in await alertList(request, context) },
            alertRoute("GET", "/admin/alerts/:alert", .read) { request, context, alert in await alertPage(request, context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/publish", .author) { _, context, alert in await setPublished(context, alert, true) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/end", .author) { _, context, alert in await endNow(context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/acknowledge", .author) { request, context, alert in
                await acknowledge(request, context, alert)
            },
            authoredAlertRoute("GET", "/admin/alerts/:alert/unpublish", .author) { _, context, alert in confirmUnpublish(context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/unpublish", .author) { _, context, alert in await setPublished(context, alert, false) },
            authoredAlertRoute("GET", "/admin/alerts/:alert/delete", .author) { _, context, alert in confirmDeleteDraft(context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/delete", .author) { _, context, alert in await deleteDraft(context, alert) },
        ]
    }
}

extension AlertConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
