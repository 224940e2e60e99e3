import Core
import Crypto
import Database
import FoundationEssentials
import HTTPClient
import Push
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A sidecar's identity at the relay: its P-256 key (a PEM file created with
/// mode 0600 on first use) and what the relay calls it.
struct RelayIdentity: Sendable {
    let key: PrivateKey
    let jwk: RelayProtocol.PublicJWK
    var serverID: String { jwk.serverID }

    /// Loads the key, creating it when the file does not exist (a server
    /// configured for the relay gets its identity at its first start).
    static func loadOrCreate(path: String) throws(StartupError) -> RelayIdentity {
        if let existing = try load(path: path) { return existing }
        return try create(path: path)
    }

    /// The key in the file; nil when there is no file.
    static func load(path: String) throws(StartupError) -> RelayIdentity? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            let key = try PrivateKey(pem: String(decoding: data, as: UTF8.self))
            guard key.algorithm == .es256 else { throw CryptoError("not a P-256 key") }
            return RelayIdentity(key: key, jwk: RelayProtocol.PublicJWK(try key.publicKey()))
        } catch {
            throw StartupError(description: "relay key \(path): \(error)", exitCode: 2)
        }
    }

    /// A new key written to a new file (mode 0600); an existing file is
    /// never replaced.
    static func create(path: String) throws(StartupError) -> RelayIdentity {
        do {
            let key = try PrivateKey.generateP256()
            let pem = Array(try key.pem().utf8)
            // Created 0600 before anything is written: never readable by others.
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard descriptor >= 0 else { throw CryptoError("cannot create \(path): \(String(cString: strerror(errno)))") }
            defer { close(descriptor) }
            guard pem.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == pem.count, fsync(descriptor) == 0 else {
                throw CryptoError("cannot write \(path)")
            }
            return RelayIdentity(key: key, jwk: RelayProtocol.PublicJWK(try key.publicKey()))
        } catch {
            throw StartupError(description: "relay key \(path): \(error)", exitCode: 2)
        }
    }

    /// Version 2 headers for a request (the signature covers method, path,
    /// time and the body's digest).
    func headers(method: String, path: String, body: [UInt8], nowMillis: EpochMillis) throws -> [(name: String, value: String)] {
        let digest = RelayProtocol.digest(body)
        let signature = try key.sign(Array(RelayProtocol.requestString(method: method, path: path, ts: nowMillis.value, bodyDigest: digest).utf8))
        return [
            ("Content-Type", "application/json"), ("X-Relay-Signature-Version", "2"), ("X-Relay-Timestamp", String(nowMillis.value)),
            ("X-Relay-Content-SHA256", digest), ("X-Relay-Signature", Base64URL.encode(signature)),
        ]
    }
}

/// How many tokens a server puts in one send: the seed's 100, which every
/// relay takes, until the relay's answers say it takes more
/// (`X-Relay-Max-Tokens`), and never more than this build sends.
final class RelaySendSize: Sendable {
    private let tokens = Atomic<Int>(RelayProtocol.maxTokensPerSeedSend)

    var current: Int { tokens.load(ordering: .relaxed) }

    /// Reads a send's answer header; a missing or unreadable one changes nothing.
    func learn(_ header: String?) {
        guard let header, let advertised = Int(header) else { return }
        let size = min(max(advertised, RelayProtocol.maxTokensPerSeedSend), RelayProtocol.maxTokensPerSend)
        tokens.store(size, ordering: .relaxed)
    }

    /// Back to 100: a relay refused a larger send (it was replaced by an
    /// older one, say).
    func reset() { tokens.store(RelayProtocol.maxTokensPerSeedSend, ordering: .relaxed) }
}

/// `--push-transport relay`: every push goes through a signed relay, which
/// holds the APNs key and FCM project this server does not.
struct RelayTransport: PushTransport {
    let name = "relay"
    let baseURL: String
    let identity: RelayIdentity
    let http: HTTPClient
    let clock: any WallClock
    let logger: Logger
    /// Shared by every copy of the transport: what the relay said it takes.
    let sendSize = RelaySendSize()

    var root: String { baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL }

    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        // Messages with the same content travel together, as many tokens a
        // request as the relay takes. A fan-out's messages differ only in
        // their tokens, so the content is compared (with the token left out)
        // against the few distinct contents seen, and each group's payload
        // encoded once.
        let perSend = sendSize.current
        var groups: [(payload: JSONValue, indices: [Int])] = []
        var contents: [(content: PushMessage, group: Int)] = []
        for (index, message) in messages.enumerated() {
            var content = message
            content.token = ""
            content.platform = .ios  // the relay reads the platform from its binding
            if let known = contents.firstIndex(where: { $0.content == content }) {
                let group = contents[known].group
                if groups[group].indices.count < perSend {
                    groups[group].indices.append(index)
                } else {
                    contents[known].group = groups.count
                    groups.append((groups[group].payload, [index]))
                }
            } else {
                contents.append((content, groups.count))
                groups.append((RelayProtocol.encode(content), [index]))
            }
        }
        var outcomes = [PushOutcome](repeating: .transient(reason: "not sent"), count: messages.count)
        await withTaskGroup(of: [(Int, PushOutcome)].self) { tasks in
            for group in groups {
                tasks.addTask {
                    let tokens = group.indices.map { messages[$0].token }
                    let results = await sendGroup(tokens: tokens, payload: group.payload)
                    return zip(group.indices, results).map { ($0, $1) }
                }
            }
            for await finished in tasks { for (index, outcome) in finished { outcomes[index] = outcome } }
        }
        return outcomes
    }

    func sendGroup(tokens: [String], payload: JSONValue) async -> [PushOutcome] {
        let body = JSONValue.object(["tokens": .array(tokens.map(JSONValue.string)), "push": payload, "publicKeyJwk": identity.jwk.json]).encoded()
        let response: HTTPClientResponse
        do {
            // Only the tokens not delivered come back (a relay that does not
            // know the header answers in full, which reads the same).
            let headers =
                try identity.headers(method: "POST", path: "/v1/push/send", body: body, nowMillis: clock.nowMillis) + [
                    ("X-Relay-Answer", RelayProtocol.failuresAnswer)
                ]
            response = try await http.send(
                HTTPClientRequest(method: "POST", url: root + "/v1/push/send", headers: headers, body: body, upstream: "relay"))
        } catch {
            return Array(repeating: .transient(reason: "relay unreachable: \(error)"), count: tokens.count)
        }
        guard response.status == 200 else {
            let code = Self.errorCode(response.body) ?? "HTTP \(response.status)"
            if response.status == 400, tokens.count > RelayProtocol.maxTokensPerSeedSend {
                // The relay took more once and no longer does: these go
                // again, 100 at a time, rather than being refused for good.
                sendSize.reset()
                logger.warning("the relay refused a send of more than 100 tokens; sending 100 at a time", [("code", code)])
                return Array(repeating: .transient(reason: "relay: \(code) for a send of \(tokens.count) tokens"), count: tokens.count)
            }
            // 400 means the message itself is refused; everything else may pass.
            let outcome: PushOutcome = response.status == 400 ? .rejected(reason: "relay: \(code)") : .transient(reason: "relay: \(code)")
            if response.status == 401 || response.status == 403 {
                logger.error("the relay refused this server", [("code", code), ("server", identity.serverID)])
            }
            return Array(repeating: outcome, count: tokens.count)
        }
        sendSize.learn(response.header(RelayProtocol.Header.maxTokens))
        return Self.outcomes(tokens: tokens, answer: response.body)
    }

    /// Each token's outcome from a 200 answer, in the tokens' order. A
    /// failures-only answer's missing tokens were delivered only if the
    /// relay's count of them agrees; otherwise (a relay answering in full, or
    /// an answer that does not add up) a token without a result is retried.
    static func outcomes(tokens: [String], answer body: [UInt8]) -> [PushOutcome] {
        let answer = RelayProtocol.SendAnswer.read(body)
        var byToken: [String: PushOutcome] = [:]
        for result in answer.results {
            guard let token = result.token else { continue }
            if result.ok == true {
                byToken[token] = .delivered
            } else if result.error == "invalid_token" {
                // Never a token a provider would take: the registration goes.
                byToken[token] = .terminal(reason: "the relay refused it: not a push token (\(PushToken.rule))")
            } else if result.drop == true {
                byToken[token] = .terminal(reason: "Unregistered (the relay dropped the token)")
            } else {
                byToken[token] = .transient(reason: "not delivered by the relay (not bound yet, or the provider refused)")
            }
        }
        var missing: PushOutcome = .transient(reason: "the relay gave no result")
        if let delivered = answer.delivered {
            let unlisted = tokens.count { byToken[$0] == nil }
            missing = unlisted == delivered ? .delivered : .transient(reason: "the relay's answer does not account for every token")
        }
        return tokens.map { byToken[$0] ?? missing }
    }

    /// What the relay said to a register-token.
    enum Registration: Equatable, Sendable {
        case bound
        /// Never bindable (the relay refused the token itself, 400): not asked again.
        case refused(String)
        /// This server is refused (unknown to the relay, a bad signature, a
        /// limit): no token can be bound now; the round stops.
        case serverRefused(String)
        /// May pass (5xx, the network, a binding cap): the token is asked again later.
        case failed(String)
    }

    /// Binds a token to this server at the relay.
    func register(token: String, platform: PushPlatform) async -> Registration {
        let body = JSONValue.object(["token": .string(token), "platform": .string(platform.rawValue), "publicKeyJwk": identity.jwk.json]).encoded()
        do {
            let headers = try identity.headers(method: "POST", path: "/v1/push/register-token", body: body, nowMillis: clock.nowMillis)
            let response = try await http.send(
                HTTPClientRequest(
                    method: "POST", url: root + "/v1/push/register-token", headers: headers, body: body,
                    upstream: "relay"))
            let code = Self.errorCode(response.body) ?? "HTTP \(response.status)"
            switch response.status {
            case 200: return .bound
            case 400: return .refused("the relay refused the token (\(code))")
            case 403 where code == RelayProtocol.Failure.bindingLimit.rawValue: return .failed("the relay's binding cap (\(code))")
            case 401, 403, 429: return .serverRefused(code)
            default: return .failed("the relay answered \(code)")
            }
        } catch {
            return .failed("the relay is unreachable")
        }
    }

    static func errorCode(_ body: [UInt8]) -> String? {
        guard case .object(let members)? = try? JSONValue(parsing: body), case .string(let code)? = members["error"]
        else {
            return nil
        }
        return code
    }
}
