import Database
import FoundationEssentials
import HTTPServer

/// Everything `sidecar serve` can be told. Each field has a flag and an
/// environment variable (see `CommandLineInterface.flags`).
struct SidecarConfiguration: Sendable {
    /// The HTTP server's own settings (address, threads, connection and
    /// body limits, timeouts), with the defaults `HTTPServer` declares;
    /// `serverConfiguration` adds the trusted proxies.
    var server = ServerConfiguration()
    /// SQLite database file (created if missing).
    var database = "sidecar.sqlite3"
    /// `--regions`: a path or an http(s) URL of regions-v3.json; nil = the bundled sample.
    var regions: String?
    /// How often a URL directory is re-read.
    var regionsRefreshSeconds = 3600
    /// Base of the URLs the server hands out (alarm and Live Activity URLs).
    var publicURL: String?
    var logLevel = LogLevel.info
    /// `--log-format`: text for people, json (one object a line) for collectors.
    var logFormat = LogFormat.text
    /// Push-registration requests per minute per client; 0 disables.
    var pushRegistrationLimit = 30
    /// Alarm creations and deletions (v1 and v2) per minute per client; 0 disables.
    var alarmLimit = 30
    /// Live Activity registrations and deletions per minute per client; 0 disables.
    var liveActivityLimit = 30
    /// OneBusAway lookups a client's requests may cause per minute; 0 disables.
    var upstreamLookupLimit = 60
    /// Alarms waiting to fire per device (`user_push_id`); 0 = no cap.
    var maxAlarmsPerDevice = 20
    /// Live Activities per push token; 0 = no cap.
    var maxLiveActivitiesPerPushToken = 10
    /// gorush feedback posts per minute per client; 0 disables.
    var webhookLimit = 600
    var sqliteSynchronous = SQLiteDatabase.Synchronous.normal
    /// `--trusted-proxies`: proxies whose forwarding headers name the client.
    var trustedProxies: TrustedProxies?
    /// `--client-ip-header`: a header naming the client (e.g. `CF-Connecting-IP`)
    /// to read instead of `X-Forwarded-For` from a trusted proxy.
    var clientIPHeader: String?
    /// `--demo`: add a simulated region (served by this process) with
    /// sample content, and push through the log unless told otherwise.
    var demo = false
    /// Site association, store links and the share-page redirect (issue 16).
    var links = LinkSettings()
    /// `--relay-url`: the signed push relay `--push-transport relay` sends through.
    var relayURL: String?
    /// `--relay-key-file`: this server's P-256 key for the relay (created on first use).
    var relayKeyFile = "sidecar-relay-key.pem"
    /// `sidecar relay --relay-allowed-servers FILE`: serverIds it serves (nil: any).
    var relayAllowedServersFile: String?
    /// `--database-timeout`: seconds a PostgreSQL statement may wait for
    /// the server before the call fails as unavailable (503).
    var databaseTimeoutSeconds = 5
    /// `sidecar relay`: sends per minute per server, and requests per minute per client address.
    var relaySendLimit = 6000
    var relayClientLimit = 12000
    /// `sidecar relay`: bindings kept per server key and per client address (0: no bound).
    var relayMaxBindingsPerServer = RelayStore.defaultMaxBindings
    var relayMaxBindingsPerClient = RelayStore.defaultMaxBindings
    /// Console changes (form posts) per minute per signed-in user.
    var consoleWriteLimit = 120
    /// `--metrics-listen`: where Prometheus scrapes `/metrics` (a listener
    /// of its own, so it never faces the internet with the rider API); nil
    /// = no metrics, and nothing is counted.
    var metricsListen: ListenAddress?
    /// Seconds to let running requests finish on SIGTERM/SIGINT.
    var shutdownTimeoutSeconds = 10
    /// Languages alert pushes can be localized into (locale normalization target).
    var locales = LocaleCatalog.standard
    /// OneBusAway REST API key for every region (`key=` on each request).
    var obaAPIKey: String?
    /// Per-region API keys overriding `obaAPIKey`.
    var obaRegionAPIKeys: [Int: String] = [:]
    /// Seconds between alarm checker cycles (spec §5.3: once a minute).
    var alarmCheckIntervalSeconds = 60
    /// Seconds between Live Activity update cycles (spec §6.3: once a minute).
    var liveActivityIntervalSeconds = 60
    /// Whether `start()` runs the Live Activity updater (tests drive it by hand).
    var runsLiveActivityUpdater = true
    /// How pushes are delivered.
    var pushTransport = PushTransportChoice.automatic
    /// gorush's base URL, e.g. http://127.0.0.1:8088.
    var gorushURL: String?
    /// The iOS app's bundle id: the APNs topic.
    var apnsTopic = "org.onebusaway.iphone"
    /// Survey-response writes per minute per TCP peer; 0 disables.
    var surveyResponseLimit = 60
    /// Ghost-bus reports per hour per TCP peer; 0 disables.
    var ghostBusPeerLimit = 10
    /// Admin API requests per minute per key (and failed sign-ins per client address).
    var adminAPILimit = 600
    /// Ghost-bus reports per day per `user_identifier`; 0 disables.
    var ghostBusUserLimit = 20
    /// Donation requests per minute per TCP peer; 0 disables.
    var donationLimit = 10
    /// Stripe secret keys; without them the donation route answers 404.
    var stripeSecretKey: String?
    var stripeTestSecretKey: String?
    var stripeURL = "https://api.stripe.com"
    /// The Stripe product monthly donations are priced against (created on first use when unset).
    var stripeProduct: String?
    /// Pirate Weather API key; without one the weather route answers 403.
    var pirateWeatherKey: String?
    var pirateWeatherURL = "https://api.pirateweather.net"
    /// Seconds a send stays claimed by a runner that stopped recording
    /// progress (it died); then any running server resumes it.
    var sendLeaseSeconds = Int(AlertSendStore.defaultSendLeaseSeconds)
    /// PostgreSQL connections this instance may open (nil: four per thread,
    /// at least four). Each is opened when first needed.
    var postgresConnections: Int?
    /// Seconds a `/healthz` verdict is reused (tests set 0).
    var healthCacheSeconds = 1.0
    /// How alert sends retry passing push failures (tests shorten it).
    var sendRetry = SendRetryPolicy()
    /// Whether `start()` runs the loop that resumes lapsed alert sends
    /// (tests that drive sends by hand turn it off; there is no flag).
    var runsSendResumer = true
    /// Whether `start()` runs the alarm checker on its clock (tests that
    /// drive cycles by hand turn it off; there is no flag).
    var runsAlarmChecker = true
    /// Whether this process polls alert sources in the background (tests
    /// that poll by hand turn it off).
    var runsSourcePoller = true
    /// `--source-proxy`: the proxy alert-source polls go through (nil: none,
    /// whatever the environment says).
    var sourceProxy: String?

    /// Direct APNs: the `.p8` key file, its key id and the team id.
    var apnsKeyFile: String?
    var apnsKeyID: String?
    var apnsTeamID: String?
    var apnsURL = "https://api.push.apple.com"
    var apnsSandboxURL = "https://api.sandbox.push.apple.com"
    /// A CA bundle to trust for APNs instead of the system's (tests).
    var apnsCAFile: String?
    /// HTTP/2 connections to each APNs host, each driven by its own thread
    /// (docs/benchmarks.md: with libcurl 7.88 a Live Activity minute costs a
    /// quarter less CPU on 4 connections of 50 streams than on 2 of 100).
    var apnsConnections = 4
    /// Direct FCM: the service-account JSON file.
    var fcmServiceAccount: String?
    var fcmURL = "https://fcm.googleapis.com"
    /// Bearer secret gorush's feedback hook must present at /webhooks/gorush.
    var gorushWebhookSecret: String?

    /// A host and port to listen on, as `HOST:PORT` or `[IPv6]:PORT`.
    struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
        var host: String
        var port: Int

        init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Parses `127.0.0.1:9464`, `[::1]:9464` or `0.0.0.0:9464`.
        init?(_ text: String) {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
                return nil
            }
            var host = String(text[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) } else if host.contains(":") { return nil }
            guard !host.isEmpty, !host.contains(" ") else { return nil }
            self.init(host: host, port: port)
        }

        var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Which push transport to build.
    enum PushTransportChoice: String, Sendable, CaseIterable {
        /// gorush when `--gorush-url` is set, else direct when an APNs key or
        /// an FCM service account is set, else none.
        case automatic = "auto"
        case gorush, direct, log, none
        /// Through a signed push relay (`--relay-url`, `--relay-key-file`).
        case relay
    }

    init() {}

    /// The logger these settings ask for, writing to standard error.
    func makeLogger() -> Logger { Logger(level: logLevel, format: logFormat) }

    /// `--public-url` without a trailing slash, or one derived from host and port.
    func effectivePublicURL(boundPort: Int? = nil) -> String {
        if let publicURL, !publicURL.isEmpty {
            return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
        }
        let host = server.host
        let shownHost = (host == "0.0.0.0" || host == "::" || host.isEmpty) ? "localhost" : (host.contains(":") ? "[\(host)]" : host)
        return "http://\(shownHost):\(boundPort ?? server.port)"
    }

    /// The HTTP server's settings with the trusted proxies (and the header
    /// naming the client) applied.
    var serverConfiguration: ServerConfiguration {
        var configured = server
        configured.trustedProxies = trustedProxies?.readingClient(from: clientIPHeader)
        return configured
    }
}
