import Core
import Database
import HTTPServer

/// What every console page of an alert is built with: the kit's pages plus
/// the alert the path's `:alert` names, found and checked against the
/// user's regions before the page runs.
protocol AlertPages: ConsolePages {}

extension AlertPages {
    var alerts: AlertStore { console.alerts }
    var sends: AlertSendRunner { console.sends }
    var administration: AlertAdministration { console.administration }
    var formTokens: FormTokens { console.formTokens }
    var sources: AlertSourceAdministration { console.sources }
    var database: any Database { console.database }

    /// The operations as this user: changes are audited under their email.
    func administration(_ session: ConsoleStore.Session) -> AlertAdministration { console.administration(session) }

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
            alert.sourceID == nil ? await handler(request, context, alert) : AlertConsolePages.mirroredRefusal(alert)
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

/// The console's alert pages: a region's alerts, the alert form, an
/// alert's page with its translations, publishing, ending and deleting, and
/// (from `AlertSources/`) what a mirrored alert offers. Sends have their
/// own pages (`AlertSendConsolePages`), whose progress table the alert's
/// page shows.
struct AlertConsolePages: AlertPages {
    let console: ConsoleRoutes

    /// The send pages, for the progress table an alert's page shows.
    var sendPages: AlertSendConsolePages { AlertSendConsolePages(console: console) }

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/alerts", .read) { request, context in await alertList(request, context) },
            regionPage("GET", "/admin/regions/:region/alerts/new", .author) { _, context in
                alertForm(context, alert: nil, values: [:], problems: [], zone: await zone(regionID: context.region?.id ?? 0))
            },
            regionPage("POST", "/admin/regions/:region/alerts", .author) { request, context in await createAlert(request, context) },
            alertRoute("GET", "/admin/alerts/:alert", .read) { request, context, alert in await alertPage(request, context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert", .author) { request, context, alert in await editAlert(request, context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/publish", .author) { _, context, alert in await setPublished(context, alert, true) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/end", .author) { _, context, alert in await endNow(context, alert) },
            authoredAlertRoute("GET", "/admin/alerts/:alert/unpublish", .author) { _, context, alert in confirmUnpublish(context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/unpublish", .author) { _, context, alert in await setPublished(context, alert, false) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/translations", .author) { request, context, alert in
                await translate(request, context, alert)
            },
            authoredAlertRoute("GET", "/admin/alerts/:alert/translations/delete", .author) { request, context, alert in
                await confirmDeleteTranslation(request, context, alert)
            },
            authoredAlertRoute("GET", "/admin/alerts/:alert/delete", .author) { _, context, alert in confirmDeleteDraft(context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/delete", .author) { _, context, alert in await deleteDraft(context, alert) },
            authoredAlertRoute("POST", "/admin/alerts/:alert/translations/delete", .author) { request, context, alert in
                await deleteTranslation(request, context, alert)
            },
            alertRoute("POST", "/admin/alerts/:alert/feed", .author) { request, context, alert in await setInFeed(request, context, alert) },
        ]
    }
}

extension AlertConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console) }
}
