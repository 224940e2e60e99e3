import HTTPServer

/// The console's send pages: the confirmation that says who gets what (and
/// in which language), starting a send once per confirmation, and the
/// progress an alert's page polls.
struct AlertSendConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [
            alertRoute("GET", "/admin/alerts/:alert/send", .sendToTestDevices) { request, context, alert in await confirmSend(request, context, alert)
            },
            alertRoute("POST", "/admin/alerts/:alert/sends", .sendToTestDevices) { request, context, alert in await startSend(request, context, alert)
            },
            alertRoute("GET", "/admin/alerts/:alert/sends.json", .read) { _, context, alert in await sendsJSON(alert, context.session) },
        ]
    }
}

extension AlertSendConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
