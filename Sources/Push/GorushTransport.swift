import Core
import FoundationEssentials
import HTTPClient

/// Delivers through a gorush gateway (`POST /api/push`), the transport of
/// the reference deployments. Each message is one notification in the
/// batch so every message keeps its own payload.
public struct GorushTransport: PushTransport {
    public let name = "gorush"
    let endpoint: String
    let apnsTopic: String?
    let http: HTTPClient
    /// Notifications per request to gorush.
    let batchSize: Int
    /// Epoch seconds, for an Android time to live (injected in tests).
    let now: @Sendable () -> Int64

    /// - Parameters:
    ///   - baseURL: gorush's base URL (`--gorush-url`).
    ///   - apnsTopic: the iOS app's bundle id (`--apns-topic`).
    public init(
        baseURL: String, apnsTopic: String?, http: HTTPClient, batchSize: Int = 100,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.now = now
        endpoint = (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + "/api/push"
        self.apnsTopic = apnsTopic
        self.http = http
        self.batchSize = max(batchSize, 1)
    }

    /// The gorush request body for a batch.
    public func requestBody(_ messages: [PushMessage]) -> [UInt8] {
        let notifications = messages.map { message -> JSONValue in
            var fields: [String: JSONValue] = [
                "tokens": .array([.string(message.token)]),
                "platform": .integer(message.platform == .ios ? 1 : 2),
            ]
            if let title = message.title { fields["title"] = .string(title) }
            if let body = message.body { fields["message"] = .string(body) }
            if !message.data.isEmpty { fields["data"] = .object(message.data) }
            let shown = message.title != nil || message.body != nil
            if shown && message.platform == .ios {
                // gorush sends `sound` as aps.sound.
                fields["sound"] = .string("default")
                if message.attention == .timeSensitive {
                    fields["priority"] = .string("high")
                    fields["interruption_level"] = .string(PushMessage.Attention.timeSensitive.rawValue)
                }
            }
            if message.expiration > 0 && message.platform == .ios { fields["expiration"] = .integer(message.expiration) }
            if message.platform == .android { fields["android"] = androidConfig(message, shown: shown) }
            if message.platform == .ios {
                fields["development"] = .bool(message.apnsSandbox)
                if let apnsTopic {
                    fields["topic"] = .string(message.kind == .liveActivity ? apnsTopic + ".push-type.liveactivity" : apnsTopic)
                }
                if let collapseID = message.collapseID { fields["collapse_id"] = .string(collapseID) }
                if message.kind == .liveActivity, let liveActivity = message.liveActivity {
                    // gorush reads these hyphenated keys at the top level (and
                    // drops snake_case spellings silently).
                    fields["push_type"] = .string("liveactivity")
                    fields["priority"] = .string(message.priority >= 10 ? "high" : "normal")
                    fields.removeValue(forKey: "title")
                    fields.removeValue(forKey: "message")
                    for (key, value) in liveActivity { fields[key] = value }
                }
            }
            return .object(fields)
        }
        return JSONValue.object(["notifications": .array(notifications)]).encoded()
    }

    /// The `android` object: gorush passes it to FCM v1 as the message's
    /// `AndroidConfig` (appleboy/gorush `notify/notification.go`,
    /// `PushNotification.Android *messaging.AndroidConfig`, sent on by
    /// `notify/notification_fcm.go` `GetAndroidNotification`). Its own
    /// top-level `time_to_live` and `notification.android_channel_id` are gone,
    /// and it fills in a sound only when no `android` object is sent, so the
    /// time to live (a duration string, `"600s"`), the channel and the sound
    /// all go here. Title and body stay at the top level, where gorush reads them.
    func androidConfig(_ message: PushMessage, shown: Bool) -> JSONValue {
        var android: [String: JSONValue] = ["priority": .string("high")]
        if message.expiration > 0 { android["ttl"] = .string("\(max(message.expiration - now(), 0))s") }
        if shown {
            var notification: [String: JSONValue] = ["sound": .string("default")]
            if let channel = message.androidChannel { notification["channel_id"] = .string(channel) }
            android["notification"] = .object(notification)
        }
        return .object(android)
    }

    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        let batches = messages.pages(of: batchSize).map(Array.init)
        if batches.count <= 1 {
            guard let only = batches.first else { return [] }
            return await sendBatch(only)
        }
        // A few batches in flight at once; outcomes keep the messages' order.
        return await boundedMap(batches, limit: 4) { await self.sendBatch($0) }.flatMap { $0 }
    }

    private func sendBatch(_ batch: [PushMessage]) async -> [PushOutcome] {
        let response: HTTPClientResponse
        do {
            response = try await http.send(
                HTTPClientRequest(
                    method: "POST", url: endpoint,
                    headers: [("Content-Type", "application/json")], body: requestBody(batch),
                    upstream: "gorush"))
        } catch {
            return Array(repeating: .transient(reason: "gorush unreachable: \(error)"), count: batch.count)
        }
        guard (200..<300).contains(response.status) else {
            return Array(repeating: .transient(reason: "gorush answered HTTP \(response.status)"), count: batch.count)
        }
        // In sync mode gorush lists each failed token in `logs`.
        let failures = Self.failedTokens(response.body)
        return batch.map { message in
            failures[message.token].map { PushOutcome.classify(failure: $0) } ?? .delivered
        }
    }

    /// token → failure reason, from a gorush response's `logs`.
    static func failedTokens(_ body: [UInt8]) -> [String: String] {
        guard let decoded = try? JSONValue(parsing: body),
            case .object(let root) = decoded, case .array(let logs)? = root["logs"]
        else { return [:] }
        var failures: [String: String] = [:]
        for log in logs {
            guard case .object(let entry) = log, case .string(let token)? = entry["token"] else { continue }
            let type = entry["type"]?.scalarText ?? ""
            guard type.contains("fail") else { continue }
            failures[token] = entry["error"]?.scalarText ?? entry["message"]?.scalarText ?? "failed"
        }
        return failures
    }
}

/// Prints each payload instead of sending it (development). What is
/// printed is what the provider would get: the whole APNs payload (`aps`
/// with sound, interruption level and badge, and the custom keys) for iOS,
/// the FCM v1 message (notification, channel, time to live, data) for
/// Android, as JSON. Tokens are never printed; a short fingerprint stands in
/// for them, in the FCM message too.
public struct LogTransport: PushTransport {
    public let name = "log"
    let logger: Logger
    let fingerprint: @Sendable (String) -> String
    let now: @Sendable () -> Int64

    public init(
        logger: Logger, fingerprint: @escaping @Sendable (String) -> String,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.logger = logger
        self.fingerprint = fingerprint
        self.now = now
    }

    /// The provider's payload with the token replaced by its fingerprint.
    public func payload(_ message: PushMessage) -> String {
        var shown = message
        shown.token = fingerprint(message.token)
        let bytes = message.platform == .ios ? APNsTransport.payload(shown) : FCMTransport.body(shown, now: now())
        return String(decoding: bytes, as: UTF8.self)
    }

    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        for message in messages {
            var fields = [
                ("platform", message.platform.rawValue), ("sandbox", String(message.apnsSandbox)), ("kind", message.kind.rawValue),
                ("device", fingerprint(message.token)), ("title", message.title ?? ""), ("body", message.body ?? ""),
            ]
            if message.platform == .ios {
                fields.append(("priority", String(message.priority)))
                fields.append(("expiration", String(message.expiration)))
            }
            if let activity = message.liveActivity {
                // What the Lock Screen would show: the event and its content state.
                fields.append(("event", activity["event"]?.scalarText ?? ""))
                fields.append(("content_state", String(decoding: (activity["content-state"] ?? .null).encoded(), as: UTF8.self)))
            }
            fields.append(("payload", payload(message)))
            logger.info("push (log transport)", fields)
        }
        return Array(repeating: .delivered, count: messages.count)
    }
}
