import Core
import Crypto
import FoundationEssentials
import HTTPClient
import Push

/// The push transport `--push-transport` and the credentials name: gorush,
/// direct APNs and FCM, the signed relay, the log, or none.
extension Sidecar {
    /// Builds the configured push transport; a key or account file that
    /// cannot be read is an error the operator must fix.
    static func pushTransport(
        _ configuration: SidecarConfiguration, http: HTTPClient, logger: Logger,
        observer: HTTPClient.Observer? = nil
    ) throws(StartupError) -> (any PushTransport)? {
        let direct = configuration.apnsKeyFile != nil || configuration.fcmServiceAccount != nil
        switch configuration.pushTransport {
        case .none: return nil
        case .log: return LogTransport(logger: logger, fingerprint: SHA256.fingerprint)
        case .relay: return try relayTransport(configuration, http: http, logger: logger)
        case .gorush:
            return configuration.gorushURL.map { GorushTransport(baseURL: $0, apnsTopic: configuration.apnsTopic, http: http) }
        case .automatic where configuration.gorushURL != nil:
            return GorushTransport(baseURL: configuration.gorushURL!, apnsTopic: configuration.apnsTopic, http: http)
        case .automatic where !direct:
            return nil
        case .direct, .automatic:
            return try directTransport(configuration, observer: observer)
        }
    }

    /// `--push-transport relay`: the relay at `--relay-url`, signing with the
    /// key at `--relay-key-file` (created on first use).
    static func relayTransport(
        _ configuration: SidecarConfiguration, http: HTTPClient, logger: Logger,
        clock: any WallClock = SystemClock()
    ) throws(StartupError) -> RelayTransport {
        guard let url = configuration.relayURL else { throw StartupError(description: "--push-transport relay needs --relay-url", exitCode: 2) }
        let identity = try RelayIdentity.loadOrCreate(path: configuration.relayKeyFile)
        return RelayTransport(baseURL: url, identity: identity, http: http, clock: clock, logger: logger)
    }

    /// APNs for iOS and FCM for Android, each over its own HTTP/2 client.
    static func directTransport(_ configuration: SidecarConfiguration, observer: HTTPClient.Observer? = nil) throws(StartupError) -> any PushTransport
    {
        let ios: any PushTransport = try apnsTransport(configuration, observer: observer) ?? UnavailableTransport(name: "APNs")
        let android: any PushTransport = try fcmTransport(configuration, observer: observer) ?? UnavailableTransport(name: "FCM")
        return PlatformRouter(ios: ios, android: android)
    }

    /// Direct APNs from `--apns-key-file` (nil without one). `boundAcrossCalls`
    /// for the relay: its concurrent sends share one bound of pushes in flight.
    static func apnsTransport(
        _ configuration: SidecarConfiguration, observer: HTTPClient.Observer? = nil, boundAcrossCalls: Bool = false
    ) throws(StartupError) -> APNsTransport? {
        guard let path = configuration.apnsKeyFile else { return nil }
        guard let keyID = configuration.apnsKeyID, let teamID = configuration.apnsTeamID else {
            throw StartupError(description: "--apns-key-file needs --apns-key-id and --apns-team-id", exitCode: 2)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StartupError(description: "cannot read the APNs key \(path)", exitCode: 2)
        }
        let key: PrivateKey
        do { key = try PrivateKey(pem: String(decoding: data, as: UTF8.self)) } catch {
            throw StartupError(description: "APNs key \(path): \(error)", exitCode: 2)
        }
        // One connection per client: each client's thread multiplexes its
        // streams over it, and a fan-out deals pushes out to every client.
        var http = HTTPClient.Configuration()
        http.http2 = true
        http.maxConcurrentTransfers = 1000
        http.maxConnectionsPerHost = 1
        http.caFile = configuration.apnsCAFile
        var apns = APNsTransport.Configuration(keyID: keyID, teamID: teamID, topic: configuration.apnsTopic)
        apns.productionURL = configuration.apnsURL
        apns.sandboxURL = configuration.apnsSandboxURL
        let clients = (0..<configuration.apnsConnections).map { _ in
            let client = HTTPClient(configuration: http)
            client.observe(observer)
            return client
        }
        return APNsTransport(configuration: apns, key: key, connections: clients, boundAcrossCalls: boundAcrossCalls)
    }

    /// Direct FCM from `--fcm-service-account` (nil without one).
    static func fcmTransport(_ configuration: SidecarConfiguration, observer: HTTPClient.Observer? = nil) throws(StartupError) -> FCMTransport? {
        guard let path = configuration.fcmServiceAccount else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StartupError(description: "cannot read the FCM service account \(path)", exitCode: 2)
        }
        let account: FCMTransport.ServiceAccount
        do { account = try FCMTransport.ServiceAccount(json: [UInt8](data)) } catch {
            throw StartupError(description: "FCM service account \(path): \(error)", exitCode: 2)
        }
        var http = HTTPClient.Configuration()
        http.http2 = true
        http.maxConcurrentTransfers = 200
        let client = HTTPClient(configuration: http)
        client.observe(observer)
        return FCMTransport(account: account, http: client, baseURL: configuration.fcmURL)
    }
}
