import Core
import Crypto
import FoundationEssentials
import Push

/// Issue 17: the signed push relay's wire protocol (`docs/relay.md`).
/// Version 1 is the seed's (`../shared/seeds/apns-signed-relay.txt`):
/// the signature covers a few fields of the body. Version 2 signs the
/// method, path, timestamp and a digest of the whole body, and carries
/// every field our pushes need. Pure functions.
enum RelayProtocol {
    /// The relay's error codes (the body is `{"error": code}`).
    enum Failure: String, Error, Equatable {
        case invalidRequest = "invalid_request"
        case unsupportedPlatform = "unsupported_platform"
        case invalidSignature = "invalid_signature"
        case timestamp
        case replay
        case payloadTooLarge = "payload_too_large"
        case rateLimited = "rate_limited"
        case unknownServer = "unknown_server"
        case versionRequired = "signature_version_2_required"
        /// The server key, or the client address, holds as many bindings as
        /// the relay keeps for one.
        case bindingLimit = "binding_limit"

        var status: Int {
            switch self {
            case .invalidRequest, .unsupportedPlatform, .versionRequired: return 400
            case .invalidSignature, .timestamp, .replay: return 401
            case .unknownServer, .bindingLimit: return 403
            case .payloadTooLarge: return 413
            case .rateLimited: return 429
            }
        }
    }

    /// How far a request's `ts` may be from the relay's clock.
    static let timestampSkewMillis: Int64 = 5 * 60_000
    /// How long a send's signature is remembered to refuse its replay.
    static let replayMillis: Int64 = 10 * 60_000
    /// Tokens in a version-1 send (the seed's limit, which every relay takes).
    static let maxTokensPerSeedSend = 100
    /// Tokens in a version-2 send, which this relay advertises on each send's
    /// answer (`Header.maxTokens`): one signature, one verification and one
    /// exchange carry a page of a fan-out instead of a tenth of one.
    static let maxTokensPerSend = 1000
    /// A send counts against the per-server limit once per this many tokens
    /// started, so `--relay-send-limit` bounds pushes alike whatever size
    /// the sends are.
    static let tokensPerCountedSend = 100

    /// What a send of `tokens` tokens weighs against the per-server limit:
    /// once per `tokensPerCountedSend` started.
    static func countedSends(tokens: Int) -> Int { (max(tokens, 1) + tokensPerCountedSend - 1) / tokensPerCountedSend }
    /// Register bodies are small; sends carry up to 1,000 tokens (of at most
    /// 200 characters each) and a payload of at most 4 KB.
    static let maxRegisterBytes = 16 * 1024
    static let maxSendBytes = 256 * 1024
    /// A binding lapses this long after its last register-token.
    static let bindingLifetimeMillis: Int64 = 180 * 86_400_000

    // MARK: Keys

    /// The public key a request carries: exactly `kty: EC`, `crv: P-256`,
    /// `x`, `y` (base64url, 32 bytes each).
    struct PublicJWK: Sendable, Equatable {
        var x: String
        var y: String

        /// `{"crv":"P-256","kty":"EC","x":...,"y":...}`: members in
        /// lexicographic order, no spaces (what serverId hashes).
        var canonical: String { #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"# }

        /// base64url(SHA-256(canonical JWK)): self-certifying, so the relay
        /// keeps no secret to recognise a server.
        var serverID: String { Base64URL.encode(SHA256.digest(Array(canonical.utf8))) }

        var json: JSONValue { .object(["kty": .string("EC"), "crv": .string("P-256"), "x": .string(x), "y": .string(y)]) }

        func key() throws(Failure) -> PublicKeyP256 {
            guard let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y), let key = try? PublicKeyP256(x: xBytes, y: yBytes) else {
                throw .invalidRequest
            }
            return key
        }

        static func parse(_ value: JSONValue?) throws(Failure) -> PublicJWK {
            guard case .object(let members)? = value, Set(members.keys).isSubset(of: ["kty", "crv", "x", "y", "ext", "key_ops"]),
                members["kty"] == .string("EC"), members["crv"] == .string("P-256"),
                case .string(let x)? = members["x"], case .string(let y)? = members["y"],
                Base64URL.decode(x)?.count == 32, Base64URL.decode(y)?.count == 32
            else { throw .invalidRequest }
            return PublicJWK(x: x, y: y)
        }

        init(x: String, y: String) {
            self.x = x
            self.y = y
        }

        init(_ key: PublicKeyP256) {
            x = Base64URL.encode(key.x)
            y = Base64URL.encode(key.y)
        }
    }

    // MARK: Signed strings

    /// Version 1, register-token: `ts.token.platform` (`ts.token` when the
    /// body names no platform, as the seed's first clients did).
    static func registerString(ts: Int64, token: String, platform: String?) -> String {
        platform.map { "\(ts).\(token).\($0)" } ?? "\(ts).\(token)"
    }

    /// Version 1, send: `ts.<tokens sorted, comma-joined>.title`.
    static func sendString(ts: Int64, tokens: [String], title: String) -> String {
        "\(ts).\(tokens.sorted().joined(separator: ",")).\(title)"
    }

    /// Version 2: the request itself.
    static func requestString(method: String, path: String, ts: Int64, bodyDigest: String) -> String {
        "sidecar-relay-v2\n\(method)\n\(path)\n\(ts)\n\(bodyDigest)"
    }

    static func digest(_ body: [UInt8]) -> String { Base64URL.encode(SHA256.digest(body)) }

    /// Version 2 headers.
    enum Header {
        static let version = "x-relay-signature-version"
        static let timestamp = "x-relay-timestamp"
        static let digest = "x-relay-content-sha256"
        static let signature = "x-relay-signature"
        /// `failures`: the send's answer lists only the tokens not delivered
        /// and counts the rest (`SendResults`). Not signed: it changes only
        /// the answer's shape, and a relay that does not know it answers in full.
        static let answer = "x-relay-answer"
        /// On a send's answer: the most tokens this relay takes in one
        /// version-2 send. A client sends 100 until it has read this.
        static let maxTokens = "x-relay-max-tokens"
    }

    /// The value of `Header.answer` that asks for failures only.
    static let failuresAnswer = "failures"

    static func checkTimestamp(_ ts: Int64, now: EpochMillis) throws(Failure) {
        guard abs(now.millis(since: EpochMillis(ts))) <= timestampSkewMillis else { throw .timestamp }
    }

    /// Verifies a raw r||s signature given in canonical base64url (no
    /// padding, no other spelling of the same bytes). A high-S signature is
    /// accepted (the seed's clients make one about half the time) and checked
    /// in its low-S form, the one form anything keyed on a signature may see.
    static func verify(_ key: PublicKeyP256, _ message: String, signature: String) throws(Failure) {
        guard let raw = Base64URL.decodeCanonical(signature), raw.count == 64, let normalized = PublicKeyP256.lowS(raw) else {
            throw .invalidSignature
        }
        guard key.verify(Array(message.utf8), signature: normalized) else { throw .invalidSignature }
    }

    /// What the replay window remembers of a send: what was signed and by
    /// whom, never the signature's text (which has other spellings and a
    /// second valid form). Version 1 signs `ts`, the tokens and the title,
    /// so a replay with another body is the same send and is refused too;
    /// version 2 signs the method, path, time and the body's digest.
    static func replayKey(serverID: String, signed: String, version: Int) -> String {
        "v\(version)\n\(serverID)\n\(signed)"
    }

    /// Push tokens: the rule every front door applies (`PushToken`).
    static func isToken(_ text: String) -> Bool { PushToken.isValid(text) }

    // MARK: Payloads (version 2)

    /// A push as version 2 carries it: everything but the token and platform,
    /// which the relay takes from the request and the binding.
    static func encode(_ message: PushMessage) -> JSONValue {
        var fields: [String: JSONValue] = [
            "kind": .string(message.kind.rawValue), "data": .object(message.data), "priority": .integer(Int64(message.priority)),
            "expiration": .integer(message.expiration), "attention": .string(message.attention.rawValue), "sandbox": .bool(message.apnsSandbox),
        ]
        if let title = message.title { fields["title"] = .string(title) }
        if let body = message.body { fields["body"] = .string(body) }
        if let collapse = message.collapseID { fields["collapse_id"] = .string(collapse) }
        if let badge = message.badge { fields["badge"] = .integer(Int64(badge)) }
        if let activity = message.liveActivity { fields["live_activity"] = .object(activity) }
        if let channel = message.androidChannel { fields["android_channel"] = .string(channel) }
        return .object(fields)
    }

    /// A badge count: a whole number from 0 to 99,999 (absent or null: none).
    static func badge(_ value: JSONValue?) throws(Failure) -> Int? {
        guard let value, value != .null else { return nil }
        guard case .integer(let count) = value, (0...99_999).contains(count) else { throw .invalidRequest }
        return Int(count)
    }

    /// The members a Live Activity push may set in `aps`.
    static let liveActivityKeys: Set<String> = ["event", "content-state", "timestamp", "stale-date", "dismissal-date", "alert", "relevance-score"]

    static func decode(_ value: JSONValue?, token: String, platform: PushPlatform) throws(Failure) -> PushMessage {
        guard case .object(let fields)? = value,
            Set(fields.keys).isSubset(of: [
                "kind", "title", "body", "data", "priority", "expiration", "attention", "sandbox", "collapse_id", "live_activity",
                "badge", "android_channel",
            ])
        else { throw .invalidRequest }
        func string(_ key: String, limit: Int) throws(Failure) -> String? {
            guard let member = fields[key], member != .null else { return nil }
            guard case .string(let text) = member, text.count <= limit else { throw .invalidRequest }
            return text
        }
        let sandbox: Bool
        switch fields["sandbox"] {
        case .bool(let flag)?: sandbox = flag
        case nil: sandbox = false
        default: throw .invalidRequest
        }
        var message = PushMessage(
            token: token, platform: platform, apnsSandbox: sandbox, title: try string("title", limit: 256),
            body: try string("body", limit: 2048))
        if let kind = try string("kind", limit: 32) {
            guard let parsed = PushMessage.Kind(rawValue: kind) else { throw .invalidRequest }
            message.kind = parsed
        }
        if let data = fields["data"] {
            guard case .object(let members) = data else { throw .invalidRequest }
            message.data = members
        }
        if case .integer(let priority)? = fields["priority"] {
            guard priority == 5 || priority == 10 else { throw .invalidRequest }
            message.priority = Int(priority)
        }
        if case .integer(let expiration)? = fields["expiration"] { message.expiration = max(expiration, 0) }
        if let attention = try string("attention", limit: 32) {
            guard let parsed = PushMessage.Attention(rawValue: attention) else { throw .invalidRequest }
            message.attention = parsed
        }
        message.collapseID = try string("collapse_id", limit: 64)
        message.badge = try badge(fields["badge"])
        message.androidChannel = try string("android_channel", limit: 64)
        if let activity = fields["live_activity"] {
            guard case .object(let members) = activity, Set(members.keys).isSubset(of: liveActivityKeys), message.kind == .liveActivity else {
                throw .invalidRequest
            }
            message.liveActivity = members
        }
        if message.kind == .liveActivity && (message.liveActivity == nil || platform != .ios) { throw .invalidRequest }
        return message
    }

    /// A send's answer, `{"results":[{"ok":true,"token":"..."}, ...]}`, written
    /// straight to bytes: one object per token, so a fan-out's answer costs a
    /// few appends a token instead of a tree of values and a generic encoder.
    /// Members are in sorted order, as every other answer of the relay.
    ///
    /// Asked for failures only (`X-Relay-Answer: failures`), it leaves the
    /// delivered tokens out and counts them instead:
    /// `{"delivered":98,"results":[...the two others...]}`. A fan-out is
    /// almost all deliveries, and writing, carrying and reading a result per
    /// delivered token was a quarter of a sending server's CPU.
    struct SendResults {
        enum Outcome {
            case delivered, notDelivered, dropped, invalidToken
        }

        let failuresOnly: Bool
        private var bytes: [UInt8] = Array(#"{"results":["#.utf8)
        private var count = 0
        /// Tokens answered as delivered so far.
        private(set) var delivered = 0

        init(capacity: Int, failuresOnly: Bool = false) {
            self.failuresOnly = failuresOnly
            bytes.reserveCapacity(16 + (failuresOnly ? 4 : capacity) * 96)
        }

        mutating func append(token: String, _ outcome: Outcome) {
            if case .delivered = outcome {
                delivered += 1
                if failuresOnly { return }
            }
            if count > 0 { bytes.append(UInt8(ascii: ",")) }
            count += 1
            switch outcome {
            case .delivered: bytes += Array(#"{"ok":true,"token":"#.utf8)
            case .notDelivered: bytes += Array(#"{"ok":false,"token":"#.utf8)
            case .dropped: bytes += Array(#"{"drop":true,"ok":false,"token":"#.utf8)
            case .invalidToken: bytes += Array(#"{"error":"invalid_token","ok":false,"token":"#.utf8)
            }
            JSONValue.writeString(token, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }

        func encoded() -> [UInt8] {
            guard failuresOnly else { return bytes + Array("]}".utf8) }
            return Array(#"{"delivered":\#(delivered),"#.utf8) + bytes.dropFirst() + Array("]}".utf8)
        }
    }

    /// A send's answer as the sending server reads it: each result's four
    /// members, leniently: an entry that is not an object is skipped, and a
    /// member of another type reads as absent.
    enum SendAnswer {
        struct Result: Equatable {
            var token: String?
            var ok: Bool?
            var error: String?
            var drop: Bool?

            init(token: String?, ok: Bool? = nil, error: String? = nil, drop: Bool? = nil) {
                (self.token, self.ok, self.error, self.drop) = (token, ok, error, drop)
            }

            init(_ members: [String: JSONValue]) {
                token = if case .string(let text)? = members["token"] { text } else { nil }
                ok = if case .bool(let flag)? = members["ok"] { flag } else { nil }
                error = if case .string(let text)? = members["error"] { text } else { nil }
                drop = if case .bool(let flag)? = members["drop"] { flag } else { nil }
            }
        }

        /// The results, in the answer's order (empty when there are none or
        /// the body is not an object with a `results` array), and the count of
        /// delivered tokens a failures-only answer left out (nil in a full
        /// answer, which is what a relay that ignores the request header sends).
        static func read(_ body: [UInt8]) -> (results: [Result], delivered: Int?) {
            guard case .object(let answer)? = try? JSONValue(parsing: body) else { return ([], nil) }
            let delivered: Int? = if case .integer(let count)? = answer["delivered"], count >= 0 { Int(exactly: count) } else { nil }
            guard case .array(let entries)? = answer["results"] else { return ([], delivered) }
            let results = entries.compactMap { entry -> Result? in
                guard case .object(let members) = entry else { return nil }
                return Result(members)
            }
            return (results, delivered)
        }
    }
}
