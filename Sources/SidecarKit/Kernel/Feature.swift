import HTTPServer

/// A part of the server: the routes it answers and the background jobs it
/// runs. Features are built from a `FeatureContext` and registered in one
/// list (`Sidecar.features`); nothing is wired after construction.
protocol Feature: Sendable {
    var routes: [Route] { get }
    var jobs: [BackgroundJob] { get }
}

extension Feature {
    var routes: [Route] { [] }
    var jobs: [BackgroundJob] { [] }
}

/// A loop the server runs in the background until its stop signal (given to
/// the loop when it was built) is raised.
struct BackgroundJob: Sendable {
    let name: String
    let run: @Sendable () async -> Void
}
