import Core
import Crypto
import FoundationEssentials
import HTTPClient
import Synchronization

/// Delivers Android pushes through Firebase Cloud Messaging's HTTP v1 API,
/// authenticated with an OAuth 2 access token obtained from a service
/// account (an RS256-signed assertion exchanged at the token endpoint).
public final class FCMTransport: PushTransport {
    public let name = "fcm"

    /// The parts of a Google service-account JSON file that matter here.
    public struct ServiceAccount: Sendable {
        public var projectID: String
        public var clientEmail: String
        public var tokenURI: String
        let key: PrivateKey

        /// Reads the JSON a Firebase console downloads.
        public init(json: [UInt8]) throws {
            guard case .object(let fields)? = try? JSONValue(parsing: json),
                let project = fields["project_id"]?.scalarText, let email = fields["client_email"]?.scalarText,
                let pem = fields["private_key"]?.scalarText
            else {
                throw CryptoError("not a service-account JSON file (project_id, client_email, private_key)")
            }
            projectID = project
            clientEmail = email
            tokenURI = fields["token_uri"]?.scalarText ?? "https://oauth2.googleapis.com/token"
            key = try PrivateKey(pem: pem)
            guard key.algorithm == .rs256 else { throw CryptoError("the service account key is not RSA") }
        }
    }

    public let account: ServiceAccount
    let http: HTTPClient
    /// `https://fcm.googleapis.com` (overridable for tests).
    let baseURL: String
    let now: @Sendable () -> Double
    let sleep: @Sendable (Double) async -> Void
    let maxAttempts = 3
    let backoffSeconds: Double = 0.5
    private let accessToken = Mutex<(value: String, expires: Double)?>(nil)
    /// The exchange in progress, shared by every sender waiting for a token.
    private let pendingExchange = Mutex<Task<(String, Double), any Error>?>(nil)

    public init(
        account: ServiceAccount, http: HTTPClient, baseURL: String = "https://fcm.googleapis.com",
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        sleep: @escaping @Sendable (Double) async -> Void = { try? await Task.sleep(for: .milliseconds(Int64($0 * 1000))) }
    ) {
        self.account = account
        self.http = http
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.now = now
        self.sleep = sleep
    }

    /// A cached access token, renewed five minutes before it expires; one
    /// exchange at a time, however many sends are waiting.
    /// An OAuth access token from the service account's token endpoint
    /// (cached until shortly before it expires).
    public func token(forceNew: Bool = false) async throws -> String {
        let time = now()
        if !forceNew, let cached = accessToken.withLock({ $0 }), cached.expires - 300 > time { return cached.value }
        let task = pendingExchange.withLock { pending -> Task<(String, Double), any Error> in
            if let pending { return pending }
            let task = Task { try await self.exchange(at: time) }
            pending = task
            return task
        }
        do {
            let (value, expires) = try await task.value
            accessToken.withLock { $0 = (value, expires) }
            pendingExchange.withLock { if $0 == task { $0 = nil } }
            return value
        } catch {
            pendingExchange.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    private func exchange(at time: Double) async throws -> (String, Double) {
        let assertion = try JWT.sign(
            header: [],
            claims: [
                ("iss", .string(account.clientEmail)), ("scope", .string("https://www.googleapis.com/auth/firebase.messaging")),
                ("aud", .string(account.tokenURI)), ("iat", .integer(Int64(time))), ("exp", .integer(Int64(time) + 3600)),
            ], key: account.key)
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response = try await http.send(
            HTTPClientRequest(
                method: "POST", url: account.tokenURI,
                headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(body.utf8),
                upstream: "fcm_oauth"))
        guard response.status == 200, case .object(let fields)? = try? JSONValue(parsing: response.body),
            let value = fields["access_token"]?.scalarText
        else {
            throw CryptoError("the token endpoint answered HTTP \(response.status)")
        }
        let lifetime = fields["expires_in"]?.scalarText.flatMap(Double.init) ?? 3600
        return (value, time + lifetime)
    }

    /// The v1 message: notification title and body, string data, high
    /// delivery priority, and the default sound (at the highest display
    /// priority for a time-sensitive push); the message's channel, and a
    /// time to live up to its expiration (seconds from `now`).
    public static func body(_ message: PushMessage, now: Int64 = 0) -> [UInt8] {
        var android: [String: JSONValue] = ["priority": .string("high")]
        if message.expiration > 0 { android["ttl"] = .string("\(max(message.expiration - now, 0))s") }
        var fields: [String: JSONValue] = ["token": .string(message.token)]
        var notification: [String: JSONValue] = [:]
        if let title = message.title { notification["title"] = .string(title) }
        if let body = message.body { notification["body"] = .string(body) }
        if !notification.isEmpty {
            fields["notification"] = .object(notification)
            var display: [String: JSONValue] = ["sound": .string("default")]
            if message.attention == .timeSensitive { display["notification_priority"] = .string("PRIORITY_MAX") }
            if let channel = message.androidChannel { display["channel_id"] = .string(channel) }
            android["notification"] = .object(display)
        }
        fields["android"] = .object(android)
        if !message.data.isEmpty {
            fields["data"] = .object(message.data.mapValues { .string($0.scalarText ?? String(decoding: $0.encoded(), as: UTF8.self)) })
        }
        return JSONValue.object(["message": .object(fields)]).encoded()
    }

    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        await boundedMap(messages, limit: 64) { await self.deliver($0) }
    }

    func deliver(_ message: PushMessage) async -> PushOutcome {
        guard message.platform == .android else { return .rejected(reason: "not an FCM token") }
        var refreshed = false
        var attempt = 0
        while true {
            attempt += 1
            let access: String
            do { access = try await token(forceNew: refreshed && attempt == 1) } catch { return .transient(reason: "FCM authentication failed") }
            let outcome: PushOutcome
            do {
                let response = try await http.send(
                    HTTPClientRequest(
                        method: "POST", url: "\(baseURL)/v1/projects/\(account.projectID)/messages:send",
                        headers: [("Authorization", "Bearer \(access)"), ("Content-Type", "application/json")],
                        body: Self.body(message, now: Int64(now())),
                        upstream: "fcm"))
                if response.status == 401 && !refreshed {
                    refreshed = true
                    attempt = 0
                    continue
                }
                outcome = Self.outcome(status: response.status, body: response.body)
            } catch {
                outcome = .transient(reason: "network: \(error)")
            }
            if case .transient = outcome, attempt < maxAttempts {
                await sleep(backoffSeconds * Double(1 << (attempt - 1)))
                continue
            }
            return outcome
        }
    }

    /// 200 delivered; UNREGISTERED and token-level INVALID_ARGUMENT terminal;
    /// 429 and 5xx transient; anything else rejected.
    public static func outcome(status: Int, body: [UInt8]) -> PushOutcome {
        if status == 200 { return .delivered }
        var code = "HTTP \(status)"
        var message = ""
        if case .object(let root)? = try? JSONValue(parsing: body), case .object(let error)? = root["error"] {
            code = error["status"]?.scalarText ?? code
            message = error["message"]?.scalarText ?? ""
            if case .array(let details)? = error["details"] {
                for detail in details {
                    if case .object(let fields) = detail, let errorCode = fields["errorCode"]?.scalarText { code = errorCode }
                }
            }
        }
        if code == "UNREGISTERED" || code == "NOT_FOUND" || status == 404 { return .terminal(reason: "UNREGISTERED") }
        if code == "INVALID_ARGUMENT" && message.lowercased().contains("registration token") {
            return .terminal(reason: "INVALID_ARGUMENT: \(message)")
        }
        if status == 429 || status >= 500 || code == "QUOTA_EXCEEDED" || code == "UNAVAILABLE" || code == "INTERNAL" {
            return .transient(reason: code)
        }
        return .rejected(reason: code)
    }
}

/// Sends iOS messages through one transport and Android through another.
public struct PlatformRouter: PushTransport {
    public let name: String
    let ios: any PushTransport
    let android: any PushTransport

    public init(ios: any PushTransport, android: any PushTransport) {
        self.ios = ios
        self.android = android
        name = "\(ios.name)+\(android.name)"
    }

    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        let iosIndexes = messages.indices.filter { messages[$0].platform == .ios }
        let androidIndexes = messages.indices.filter { messages[$0].platform == .android }
        async let iosOutcomes = ios.send(iosIndexes.map { messages[$0] })
        async let androidOutcomes = android.send(androidIndexes.map { messages[$0] })
        var results = [PushOutcome](repeating: .transient(reason: "not sent"), count: messages.count)
        for (index, outcome) in zip(iosIndexes, await iosOutcomes) { results[index] = outcome }
        for (index, outcome) in zip(androidIndexes, await androidOutcomes) { results[index] = outcome }
        return results
    }
}

/// A platform with no configured provider: every message is refused, so it
/// is counted as failed and the token is left alone.
public struct UnavailableTransport: PushTransport {
    public let name: String
    public init(name: String) { self.name = name }
    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        Array(repeating: .rejected(reason: "\(name) is not configured"), count: messages.count)
    }
}
