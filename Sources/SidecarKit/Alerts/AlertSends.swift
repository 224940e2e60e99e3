/// The alert sends' background job: on a server that resumes sends, it
/// takes over every send whose runner died or stopped once its lease lapses
/// (sends themselves are started by the admin API, the console, the CLI and
/// the alert sources, through the one `AlertSendRunner`).
struct AlertSends: Feature {
    let runner: AlertSendRunner
    let resumesSends: Bool

    init(_ context: FeatureContext) {
        runner = context.alertSends
        resumesSends = context.configuration.runsSendResumer
    }

    var jobs: [BackgroundJob] { resumesSends ? [BackgroundJob(name: "alert send resumer", run: runner.run)] : [] }
}
