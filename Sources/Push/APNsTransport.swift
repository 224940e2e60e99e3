import Core
import Crypto
import FoundationEssentials
import HTTPClient
import Synchronization

/// Delivers straight to Apple's Push Notification service over HTTP/2
/// (libcurl multiplexes the requests over a few kept-open connections per
/// host), authenticated with an ES256 provider token from a `.p8` key.
public final class APNsTransport: PushTransport {
    public let name = "apns"

    public struct Configuration: Sendable {
        public var keyID: String
        public var teamID: String
        /// The app's bundle id.
        public var topic: String
        public var productionURL = "https://api.push.apple.com"
        public var sandboxURL = "https://api.sandbox.push.apple.com"
        /// Re-sign the provider token after this long (Apple accepts 20–60 minutes).
        var tokenLifetimeSeconds: Double = 40 * 60
        /// Attempts for a transient failure (429, 500, 503, network).
        public var maxAttempts = 3
        /// First backoff; doubled per attempt.
        var backoffSeconds: Double = 0.5

        public init(keyID: String, teamID: String, topic: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.topic = topic
        }
    }

    /// Pushes in flight at once per `send` (or over every call, with
    /// `boundAcrossCalls`), over all connections: each of N connections
    /// carries about 200/N streams.
    public static let streamsInFlight = 200

    /// The largest payload APNs accepts for an alert push.
    static let maxPayloadBytes = 4096

    let configuration: Configuration
    let key: PrivateKey
    /// One client per HTTP/2 connection to each APNs host, each driven by
    /// its own thread; pushes are dealt out in turn.
    let connections: [HTTPClient]
    private let nextConnection = Atomic<UInt>(0)
    let now: @Sendable () -> Double
    let sleep: @Sendable (Double) async -> Void
    private let token = Mutex<(value: String, issuedAt: Double)?>(nil)
    /// In-flight pushes at once per call (each is a stream on a shared connection).
    let concurrency: Int
    /// With `boundAcrossCalls`: holds every call's pushes together to
    /// `concurrency` in flight.
    let inFlight: ConcurrencyGate?

    /// `connections`: one HTTP client per connection (at least one), each
    /// with its own libcurl multi handle and thread, so one fan-out can use
    /// more than one core's worth of TLS and HTTP/2 framing.
    /// `boundAcrossCalls`: `concurrency` holds over every concurrent `send`
    /// together, for a relay, which answers many servers' sends at once
    /// (beyond the streams its connections carry, libcurl only queues
    /// transfers, at a cost in CPU). A sidecar's features each send one page
    /// at a time and keep a bound each.
    public init(
        configuration: Configuration, key: PrivateKey, connections: [HTTPClient], concurrency: Int = streamsInFlight,
        boundAcrossCalls: Bool = false,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        sleep: @escaping @Sendable (Double) async -> Void = { try? await Task.sleep(for: .milliseconds(Int64($0 * 1000))) }
    ) {
        precondition(!connections.isEmpty, "APNs needs at least one connection")
        self.configuration = configuration
        self.key = key
        self.connections = connections
        self.concurrency = max(concurrency, 1)
        self.inFlight = boundAcrossCalls ? ConcurrencyGate(limit: concurrency) : nil
        self.now = now
        self.sleep = sleep
    }

    /// The signed provider token (ES256 JWT) requests carry: cached, and
    /// re-signed when old or when APNs rejected it.
    public func providerToken(forceNew: Bool = false) throws -> String {
        let time = now()
        if !forceNew, let cached = token.withLock({ $0 }), time - cached.issuedAt < configuration.tokenLifetimeSeconds { return cached.value }
        let value = try JWT.sign(
            header: [("kid", configuration.keyID)],
            claims: [("iss", .string(configuration.teamID)), ("iat", .integer(Int64(time)))], key: key)
        token.withLock { $0 = (value, time) }
        return value
    }

    /// The JSON body: `aps.alert` with title and body, the default sound and,
    /// for a time-sensitive push, `interruption-level` (or, for a Live
    /// Activity, its `aps` members), then the custom keys.
    public static func payload(_ message: PushMessage) -> [UInt8] {
        var root = message.data
        if let liveActivity = message.liveActivity {
            root["aps"] = .object(liveActivity)
        } else {
            var alert: [String: JSONValue] = [:]
            if let title = message.title { alert["title"] = .string(title) }
            if let body = message.body { alert["body"] = .string(body) }
            var aps: [String: JSONValue] = ["alert": .object(alert), "sound": .string("default")]
            if message.attention == .timeSensitive { aps["interruption-level"] = .string(PushMessage.Attention.timeSensitive.rawValue) }
            if let badge = message.badge { aps["badge"] = .integer(Int64(badge)) }
            root["aps"] = .object(aps)
        }
        return JSONValue.object(root).encoded()
    }

    /// The request headers for a message.
    func headers(_ message: PushMessage, provider: String) -> [(name: String, value: String)] {
        let topic = message.kind == .liveActivity ? configuration.topic + ".push-type.liveactivity" : configuration.topic
        var headers: [(name: String, value: String)] = [
            ("authorization", "bearer \(provider)"), ("apns-topic", topic), ("apns-push-type", message.kind.rawValue),
            ("apns-priority", String(message.priority)), ("apns-expiration", String(message.expiration)), ("content-type", "application/json"),
        ]
        if let collapseID = message.collapseID { headers.append(("apns-collapse-id", collapseID)) }
        return headers
    }

    /// One connection, one client.
    public convenience init(
        configuration: Configuration, key: PrivateKey, http: HTTPClient, concurrency: Int = streamsInFlight,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        sleep: @escaping @Sendable (Double) async -> Void = { try? await Task.sleep(for: .milliseconds(Int64($0 * 1000))) }
    ) {
        self.init(configuration: configuration, key: key, connections: [http], concurrency: concurrency, now: now, sleep: sleep)
    }

    /// The client the next push goes through (round robin).
    private var http: HTTPClient {
        connections[Int(nextConnection.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(connections.count))]
    }

    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        guard let inFlight else { return await boundedMap(messages, limit: concurrency) { await self.deliver($0) } }
        return await boundedMap(messages, limit: concurrency) { message in await inFlight.withPlace { await self.deliver(message) } }
    }

    func deliver(_ message: PushMessage) async -> PushOutcome {
        guard message.platform == .ios else { return .rejected(reason: "not an iOS token") }
        let body = Self.payload(message)
        guard body.count <= Self.maxPayloadBytes else { return .rejected(reason: "PayloadTooLarge") }
        let base = message.apnsSandbox ? configuration.sandboxURL : configuration.productionURL
        var forceNewToken = false
        var attempt = 0
        var refreshed = false
        while true {
            attempt += 1
            let provider: String
            do { provider = try providerToken(forceNew: forceNewToken) } catch { return .transient(reason: "cannot sign the provider token") }
            forceNewToken = false
            let request = HTTPClientRequest(
                method: "POST", url: "\(base)/3/device/\(message.token)",
                headers: headers(message, provider: provider), body: body, upstream: "apns")
            let outcome: PushOutcome
            do {
                let response = try await http.send(request)
                outcome = Self.outcome(status: response.status, body: response.body)
            } catch {
                outcome = .transient(reason: "network: \(error)")
            }
            switch outcome {
            case .transient(let reason) where reason.contains("ProviderToken") && !refreshed:
                // Our credentials, not the device: sign a new token and retry once.
                refreshed = true
                forceNewToken = true
                attempt -= 1
                continue
            case .transient where attempt < configuration.maxAttempts:
                await sleep(configuration.backoffSeconds * Double(1 << (attempt - 1)))
                continue
            default:
                return outcome
            }
        }
    }

    /// Reads APNs' answer: 200 delivered; 410 and dead-token reasons terminal;
    /// 429, 5xx and provider-token problems transient; other 4xx rejected.
    public static func outcome(status: Int, body: [UInt8]) -> PushOutcome {
        if status == 200 { return .delivered }
        var reason = "HTTP \(status)"
        if case .object(let object)? = try? JSONValue(parsing: body), let text = object["reason"]?.scalarText {
            reason = text
        }
        if status == 410 { return .terminal(reason: reason == "HTTP 410" ? "Unregistered" : reason) }
        switch PushOutcome.classify(failure: reason) {
        case .terminal(let text): return .terminal(reason: text)
        default: break
        }
        if status == 429 || status >= 500 || reason.contains("ProviderToken") || reason == "Shutdown" || reason == "ServiceUnavailable" {
            return .transient(reason: reason)
        }
        return .rejected(reason: reason)
    }
}
