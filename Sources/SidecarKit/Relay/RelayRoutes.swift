import Core
import Crypto
import Database
import FoundationEssentials
import HTTPServer
import Push

/// `sidecar relay`: `POST /v1/push/register-token`, `POST /v1/push/send`,
/// `GET /healthz`, `GET /readyz`.
struct RelayRoutes: Sendable {
    let store: RelayStore
    let apns: (any PushTransport)?
    let fcm: (any PushTransport)?
    /// serverIds allowed to use this relay (nil: any).
    let allowedServers: Set<String>?
    let clientLimiter: FixedWindowRateLimiter
    let serverLimiter: FixedWindowRateLimiter
    let clock: any WallClock
    let logger: Logger
    let database: any Database
    /// Servers' keys, parsed once each.
    let keys = RelayKeyCache()

    var nowMillis: EpochMillis { clock.nowMillis }

    /// Errors in the relay's shape: `{"error": code}`.
    static let errorStyle = ErrorStyle.custom { status, _, _ in
        let code: RelayProtocol.Failure = status == 413 ? .payloadTooLarge : status == 429 ? .rateLimited : .invalidRequest
        return refusal(code)
    }

    static func refusal(_ failure: RelayProtocol.Failure) -> Response {
        Response.json(failure.status, ["error": failure.rawValue]).adding(header: "Cache-Control", "no-store")
    }

    var routes: [Route] {
        [
            Route("POST", "/v1/push/register-token", bodyLimit: RelayProtocol.maxRegisterBytes, errorStyle: Self.errorStyle, parsesParameters: false)
            { request in
                await answer { () async throws(RelayProtocol.Failure) -> Response in try await register(request) }
            },
            Route("POST", "/v1/push/send", bodyLimit: RelayProtocol.maxSendBytes, errorStyle: Self.errorStyle, parsesParameters: false) { request in
                await answer { () async throws(RelayProtocol.Failure) -> Response in try await send(request) }
                    .adding(header: "X-Relay-Max-Tokens", String(RelayProtocol.maxTokensPerSend))
            },
            Route("GET", "/healthz", parsesParameters: false) { _ in
                let problems = await database.healthProblems()
                return Response.json(problems.isEmpty ? 200 : 503, problems.isEmpty ? ["status": "ok"] : ["status": "unavailable"])
                    .adding(header: "Cache-Control", "no-store")
            },
            Route("GET", "/readyz", parsesParameters: false) { _ in
                let ready = apns != nil || fcm != nil
                return Response.json(ready ? 200 : 503, ["status": ready ? "ready" : "no push credentials"]).adding(
                    header: "Cache-Control", "no-store")
            },
        ]
    }

    func answer(_ work: () async throws(RelayProtocol.Failure) -> Response) async -> Response {
        do { return try await work() } catch { return Self.refusal(error) }
    }

    /// A request's JSON body, its key and its server, with the limits applied.
    struct Signed {
        var body: [String: JSONValue]
        var jwk: RelayProtocol.PublicJWK
        var key: PublicKeyP256
        var serverID: String
        var version: Int
        var ts: Int64
        /// Version 2: the signed request string (version 1 signs fields,
        /// checked by each route).
        var signedString: String?
    }

    func open(_ request: Request) async throws(RelayProtocol.Failure) -> Signed {
        if case .limited = await clientLimiter.check(request.clientKey) { throw .rateLimited }
        guard case .object(let body)? = try? JSONValue(parsing: request.body) else { throw .invalidRequest }
        let jwk = try RelayProtocol.PublicJWK.parse(body["publicKeyJwk"])
        let serverID = jwk.serverID
        if let allowedServers, !allowedServers.contains(serverID) { throw .unknownServer }
        let key = try keys.key(for: jwk)
        if let version = request.header(RelayProtocol.Header.version) {
            guard version == "2", let tsText = request.header(RelayProtocol.Header.timestamp), let ts = Int64(tsText),
                let digest = request.header(RelayProtocol.Header.digest), let signature = request.header(RelayProtocol.Header.signature)
            else {
                throw .invalidRequest
            }
            try RelayProtocol.checkTimestamp(ts, now: nowMillis)
            guard digest == RelayProtocol.digest(request.body) else { throw .invalidSignature }
            let signedString = RelayProtocol.requestString(method: request.method, path: request.rawPath, ts: ts, bodyDigest: digest)
            try RelayProtocol.verify(key, signedString, signature: signature)
            return Signed(body: body, jwk: jwk, key: key, serverID: serverID, version: 2, ts: ts, signedString: signedString)
        }
        guard case .integer(let ts)? = body["ts"] else { throw .invalidRequest }
        try RelayProtocol.checkTimestamp(ts, now: nowMillis)
        return Signed(body: body, jwk: jwk, key: key, serverID: serverID, version: 1, ts: ts)
    }

    func platform(_ value: JSONValue?) throws(RelayProtocol.Failure) -> PushPlatform {
        guard let value, value != .null else { return .ios }
        guard case .string(let name) = value, let platform = PushPlatform(rawValue: name) else { throw .unsupportedPlatform }
        if platform == .android && fcm == nil { throw .unsupportedPlatform }
        if platform == .ios && apns == nil { throw .unsupportedPlatform }
        return platform
    }

    func register(_ request: Request) async throws(RelayProtocol.Failure) -> Response {
        let signed = try await open(request)
        guard Set(signed.body.keys).isSubset(of: ["token", "platform", "publicKeyJwk", "ts", "sig"]),
            case .string(let token)? = signed.body["token"], RelayProtocol.isToken(token)
        else { throw .invalidRequest }
        let platform = try platform(signed.body["platform"])
        if signed.version == 1 {
            guard case .string(let signature)? = signed.body["sig"] else { throw .invalidRequest }
            let platformName: String? = if case .string(let name)? = signed.body["platform"] { name } else { nil }
            try RelayProtocol.verify(
                signed.key, RelayProtocol.registerString(ts: signed.ts, token: token, platform: platformName), signature: signature)
        }
        do {
            try await store.bind(token: token, serverID: signed.serverID, platform: platform, clientKey: request.clientKey, nowMillis: nowMillis)
        } catch RelayStore.Refusal.bindingLimit {
            throw .bindingLimit
        } catch {
            logger.error("relay binding not stored", [("error", "\(error)")])
            return Response.json(503, ["error": "unavailable"])
        }
        return Response.json(200, ["ok": true]).adding(header: "Cache-Control", "no-store")
    }

    /// The body members of a seed-shaped (version 1) send.
    static let seedSendKeys: Set<String> = ["tokens", "title", "body", "badge", "collapseId", "env", "data", "publicKeyJwk", "ts", "sig"]

    func send(_ request: Request) async throws(RelayProtocol.Failure) -> Response {
        let signed = try await open(request)
        let maxTokens = signed.version == 1 ? RelayProtocol.maxTokensPerSeedSend : RelayProtocol.maxTokensPerSend
        guard case .array(let items)? = signed.body["tokens"], (1...maxTokens).contains(items.count) else {
            throw .invalidRequest
        }
        // A token outside the rule is refused alone (its result says so):
        // one rider's bad token must not fail the batch of the others. A
        // token listed twice is pushed once and answered at each place.
        var tokens: [String] = []
        tokens.reserveCapacity(items.count)
        var refused: [Bool] = []
        refused.reserveCapacity(items.count)
        var firstPlace: [String: Int] = Dictionary(minimumCapacity: items.count)
        var repeatOf: [Int: Int] = [:]
        for item in items {
            guard case .string(let token) = item, token.utf8.count <= PushToken.lengths.upperBound else { throw .invalidRequest }
            refused.append(!RelayProtocol.isToken(token))
            if let first = firstPlace.updateValue(tokens.count, forKey: token) {
                firstPlace[token] = first
                repeatOf[tokens.count] = first
            }
            tokens.append(token)
        }
        // Build the message for a token and its platform (validated first,
        // before anything is remembered or sent).
        let make: (String, PushPlatform) throws(RelayProtocol.Failure) -> PushMessage
        let signedContent: String
        if signed.version == 1 {
            guard Set(signed.body.keys).isSubset(of: Self.seedSendKeys) else { throw .versionRequired }
            guard case .string(let sig)? = signed.body["sig"], case .string(let title)? = signed.body["title"], title.count <= 256 else {
                throw .invalidRequest
            }
            signedContent = RelayProtocol.sendString(ts: signed.ts, tokens: tokens, title: title)
            try RelayProtocol.verify(signed.key, signedContent, signature: sig)
            let body: String? = if case .string(let text)? = signed.body["body"] { text } else { nil }
            guard (body?.count ?? 0) <= 2048 else { throw .invalidRequest }
            var data: [String: JSONValue] = [:]
            if let raw = signed.body["data"], raw != .null {
                // The seed's data: a flat map of strings, at most 2 KB.
                guard case .object(let members) = raw, members.values.allSatisfy({ if case .string = $0 { true } else { false } }),
                    raw.encoded().count <= 2048
                else { throw .invalidRequest }
                data = members
            }
            var sandbox = false
            if let env = signed.body["env"], env != .null {
                guard case .string(let name) = env, name == "sandbox" || name == "production" else { throw .invalidRequest }
                sandbox = name == "sandbox"
            }
            var collapse: String?
            if case .string(let text)? = signed.body["collapseId"] { collapse = String(text.prefix(64)) }
            let badge = try RelayProtocol.badge(signed.body["badge"])
            make = { token, platform throws(RelayProtocol.Failure) in
                var message = PushMessage(token: token, platform: platform, apnsSandbox: sandbox, title: title, body: body, data: data)
                message.collapseID = collapse
                message.badge = badge
                return message
            }
        } else {
            guard Set(signed.body.keys).isSubset(of: ["tokens", "push", "publicKeyJwk"]), let push = signed.body["push"] else {
                throw .invalidRequest
            }
            signedContent = signed.signedString ?? ""
            // Decoded once per platform (the iOS form validates the request);
            // each token's message is a copy with its token.
            let ios = try RelayProtocol.decode(push, token: "", platform: .ios)
            let android = Result { () throws(RelayProtocol.Failure) in try RelayProtocol.decode(push, token: "", platform: .android) }
            make = { token, platform throws(RelayProtocol.Failure) in
                var message = platform == .ios ? ios : try android.get()
                message.token = token
                return message
            }
        }
        // Counted against the server's limit only once its signature holds:
        // a server's key is public, so a forged send naming it must not spend
        // its budget.
        let cost = RelayProtocol.countedSends(tokens: tokens.count)
        if case .limited = await serverLimiter.check(signed.serverID, cost: cost) { throw .rateLimited }
        let now = nowMillis
        // Each token's place, once: the bindings of the others are looked up.
        let lookedUp = tokens.indices.filter { !refused[$0] && repeatOf[$0] == nil }
        var bound = [PushPlatform?](repeating: nil, count: tokens.count)
        do {
            if let window = store.replayWindow, !window.covers(signedAt: EpochMillis(signed.ts)) { throw RelayProtocol.Failure.timestamp }
            let replayKey = RelayProtocol.replayKey(serverID: signed.serverID, signed: signedContent, version: signed.version)
            guard try await store.remember(replayKey, nowMillis: now) else { throw RelayProtocol.Failure.replay }
            let platforms = try await store.bindings(tokens: lookedUp.map { tokens[$0] }, serverID: signed.serverID, nowMillis: now)
            for (place, platform) in zip(lookedUp, platforms) { bound[place] = platform }
        } catch let failure as RelayProtocol.Failure {
            throw failure
        } catch RelayStore.Refusal.replayWindowFull {
            // Refused rather than forgetting a send early (which would let a replay through).
            logger.warning("relay replay window full: send refused until entries expire")
            return Response.json(503, ["error": "unavailable"]).adding(header: "Retry-After", "60")
        } catch {
            logger.error("relay storage failed", [("error", "\(error)")])
            return Response.json(503, ["error": "unavailable"])
        }
        var outcomes = [PushOutcome?](repeating: nil, count: tokens.count)
        for platform in [PushPlatform.ios, .android] {
            guard let transport = platform == .ios ? apns : fcm else { continue }
            var places: [Int] = []
            var messages: [PushMessage] = []
            for place in lookedUp where bound[place] == platform {
                // An Android token cannot take a Live Activity: answered ok: false.
                if let message = try? make(tokens[place], platform) {
                    places.append(place)
                    messages.append(message)
                }
            }
            guard !messages.isEmpty else { continue }
            for (place, outcome) in zip(places, await transport.send(messages)) { outcomes[place] = outcome }
        }
        var results = RelayProtocol.SendResults(
            capacity: tokens.count, failuresOnly: request.header(RelayProtocol.Header.answer) == RelayProtocol.failuresAnswer)
        for (place, token) in tokens.enumerated() {
            if refused[place] {
                results.append(token: token, .invalidToken)
                continue
            }
            let first = repeatOf[place]
            switch outcomes[first ?? place] {
            case .delivered?:
                results.append(token: token, .delivered)
            case .terminal?:
                // Only this server's binding: another server's binding is not
                // its to end, and the environment it chose (sandbox) can make
                // a live token look dead.
                if first == nil { try? await store.forget(token: token, serverID: signed.serverID) }
                results.append(token: token, .dropped)
            default:
                results.append(token: token, .notDelivered)
            }
        }
        logger.info(
            "relay send",
            [
                ("server", String(signed.serverID.prefix(12))), ("version", String(signed.version)),
                ("tokens", String(tokens.count)), ("bound", String(bound.count { $0 != nil })), ("delivered", String(results.delivered)),
            ])
        return Response.bytes(200, contentType: "application/json; charset=utf-8", results.encoded()).adding(header: "Cache-Control", "no-store")
    }
}
