import HTTPServer

/// The server's part of alert sources: the loop that polls each source at
/// its interval and runs the sends it decides, and the admin API's routes.
struct AlertSourcePolling: Feature {
    let poller: AlertSourcePoller
    let runs: Bool
    let api: AlertSourceRoutes

    init(_ context: FeatureContext) {
        let (poller, administration) = context.alertSources(runsInBackground: true)
        self.poller = poller
        runs = context.configuration.runsSourcePoller
        api = AlertSourceRoutes(admin: AdminAPI(context), administration: administration, store: context.stores.alertSources)
    }

    var routes: [Route] { api.routes }
    var jobs: [BackgroundJob] { runs ? [BackgroundJob(name: "alert source poller", run: poller.run)] : [] }
}
