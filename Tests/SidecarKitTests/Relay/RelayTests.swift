import Core
import Crypto
import Foundation
import HTTPClient
import HTTPServer
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// The relay over HTTP: bindings, signatures, replays and limits.
@Suite("Relay: over HTTP", .enabled(if: TestBackend.isSQLite, "a relay database of its own: once, on the SQLite run"))
struct RelayTests {
    /// A client patient enough for a machine busy with every other suite.
    static func client() -> HTTPClient { HTTPClient.patient() }

    static let nowMillis: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A seed-shaped (version 1) body signed by `identity`.
    static func v1Send(_ identity: RelayIdentity, tokens: [String], title: String, ts: Int64 = nowMillis(), extra: [String: JSONValue] = [:]) throws
        -> [UInt8]
    {
        let signature = try identity.key.sign(Array(RelayProtocol.sendString(ts: ts, tokens: tokens, title: title).utf8))
        var body: [String: JSONValue] = [
            "tokens": .array(tokens.map(JSONValue.string)), "title": .string(title), "body": .string("Body"),
            "publicKeyJwk": identity.jwk.json, "ts": .integer(ts), "sig": .string(Base64URL.encode(signature)),
        ]
        for (key, value) in extra { body[key] = value }
        return JSONValue.object(body).encoded()
    }

    static func error(_ response: RawResponse) -> String? { response.json?["error"] as? String }

    @Test func tokensReachOnlyTheServersTheyAreBoundTo() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let a = try relay.client("a", http: http), b = try relay.client("b", http: http)
            #expect(a.identity.serverID != b.identity.serverID)
            for token in ["a0000001", "shared01", "a0000dead"] { #expect(await a.register(token: token, platform: .ios) == .bound) }
            for token in ["b0000001", "shared01"] { #expect(await b.register(token: token, platform: .ios) == .bound) }

            let fromA = await a.send(
                ["a0000001", "b0000001", "shared01"].map { PushMessage(token: $0, platform: .ios, title: "Detour", body: "Route 44") })
            #expect(fromA == [.delivered, .transient(reason: "not delivered by the relay (not bound yet, or the provider refused)"), .delivered])
            #expect(relay.apns.sent.value.map(\.token).sorted() == ["a0000001", "shared01"])
            let fromB = await b.send([PushMessage(token: "shared01", platform: .ios, title: "Hello")])
            #expect(fromB == [.delivered], "a token bound to both servers is reachable from both")

            // A client that does not ask for failures only (the seed's, an
            // older sidecar) gets every token's result; one that asks gets the
            // failures and a count of the rest.
            let tokens = ["a0000001", "b0000001", "shared01"]
            let full = try await relay.post("/v1/push/send", try Self.v1Send(a.identity, tokens: tokens, title: "Full"))
            #expect(
                try JSONValue(parsing: full.body)
                    == .object([
                        "results": .array([
                            .object(["ok": .bool(true), "token": .string("a0000001")]), .object(["ok": .bool(false), "token": .string("b0000001")]),
                            .object(["ok": .bool(true), "token": .string("shared01")]),
                        ])
                    ]))
            let failures = try await relay.post(
                "/v1/push/send", try Self.v1Send(a.identity, tokens: tokens, title: "Failures"), headers: ["X-Relay-Answer": "failures"])
            #expect(
                try JSONValue(parsing: failures.body)
                    == .object(["delivered": .integer(2), "results": .array([.object(["ok": .bool(false), "token": .string("b0000001")])])]))

            // A dead token comes back as dropped, and the relay forgets it.
            let dead = await a.send([PushMessage(token: "a0000dead", platform: .ios, title: "x")])
            guard case .terminal = dead[0] else {
                Issue.record("not dropped: \(dead)")
                return
            }
            let again = await a.send([PushMessage(token: "a0000dead", platform: .ios, title: "y")])
            guard case .transient = again[0] else {
                Issue.record("the dead token is still bound: \(again)")
                return
            }

            // A Live Activity keeps every field through the relay.
            var activity = PushMessage(token: "a0000001", platform: .ios)
            activity.kind = .liveActivity
            activity.liveActivity = ["event": .string("update"), "timestamp": .integer(1), "content-state": .object(["minutes": .integer(4)])]
            #expect(await a.send([activity]) == [.delivered])
            #expect(relay.apns.sent.value.last == activity)
        }
    }

    @Test func aTokenListedTwiceIsPushedOnceAndAnsweredAtEachPlace() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let a = try relay.client("a", http: http)
            for token in ["a0000001", "a0000dead"] { #expect(await a.register(token: token, platform: .ios) == .bound) }
            let tokens = ["a0000001", "a0000dead", "a0000001", "unbound1", "a0000dead"]
            let answer = try await relay.post("/v1/push/send", try Self.v1Send(a.identity, tokens: tokens, title: "Twice"))
            let ok = JSONValue.object(["ok": .bool(true), "token": .string("a0000001")])
            let dropped = JSONValue.object(["drop": .bool(true), "ok": .bool(false), "token": .string("a0000dead")])
            #expect(
                try JSONValue(parsing: answer.body)
                    == .object(["results": .array([ok, dropped, ok, .object(["ok": .bool(false), "token": .string("unbound1")]), dropped])]))
            #expect(relay.apns.sent.value.map(\.token).sorted() == ["a0000001", "a0000dead"], "each token pushed once")
            let bindings = try await relay.store.bindings(tokens: tokens, serverID: a.identity.serverID, nowMillis: EpochMillis(Self.nowMillis()))
            #expect(bindings == [.ios, nil, .ios, nil, nil], "the dead token's binding is gone, the live one's kept")
        }
    }

    @Test(arguments: [false, true])
    func forgeriesReplaysAndStaleRequestsAreRefusedWith401(replaysInDatabase: Bool) async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run(replaysInDatabase: replaysInDatabase) { relay in
            let a = try relay.client("a", http: http)
            #expect(await a.register(token: "a0000001", platform: .ios) == .bound)
            let body = try Self.v1Send(a.identity, tokens: ["a0000001"], title: "Detour")
            let first = try await relay.post("/v1/push/send", body)
            #expect(first.status == 200)
            #expect((first.json?["results"] as? [[String: Any]])?.first?["ok"] as? Bool == true)
            let replay = try await relay.post("/v1/push/send", body)
            #expect(replay.status == 401 && Self.error(replay) == "replay")

            var tampered =
                try JSONSerialization.jsonObject(with: Data(Self.v1Send(a.identity, tokens: ["a0000001"], title: "Detour"))) as! [String: Any]
            tampered["title"] = "Tampered"
            let forged = try await relay.post("/v1/push/send", Array(try JSONSerialization.data(withJSONObject: tampered)))
            #expect(forged.status == 401 && Self.error(forged) == "invalid_signature")

            let stale = try await relay.post(
                "/v1/push/send", Self.v1Send(a.identity, tokens: ["a0000001"], title: "x", ts: Self.nowMillis() - 600_000))
            #expect(stale.status == 401 && Self.error(stale) == "timestamp")
            let seconds = try await relay.post(
                "/v1/push/send", Self.v1Send(a.identity, tokens: ["a0000001"], title: "x", ts: Self.nowMillis() / 1000))
            #expect(seconds.status == 401 && Self.error(seconds) == "timestamp", "a ts in seconds is refused")

            // Version 2: the body is signed; changing it after signing fails.
            let push = JSONValue.object([
                "tokens": .array([.string("a0000001")]), "push": RelayProtocol.encode(PushMessage(token: "a0000001", platform: .ios, title: "v2")),
                "publicKeyJwk": a.identity.jwk.json,
            ]).encoded()
            let headers = try a.identity.headers(method: "POST", path: "/v1/push/send", body: push, nowMillis: EpochMillis(Self.nowMillis()))
            let signed = Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            let changed = Array(String(decoding: push, as: UTF8.self).replacingOccurrences(of: "\"v2\"", with: "\"w2\"").utf8)
            #expect(changed != push)
            let tamperedBody = try await relay.post("/v1/push/send", changed, headers: signed)
            #expect(tamperedBody.status == 401 && Self.error(tamperedBody) == "invalid_signature")
            let honest = try await relay.post("/v1/push/send", push, headers: signed)
            #expect(honest.status == 200)
            #expect(relay.apns.sent.value.count == 2, "only the two genuine sends pushed")
        }
    }

    /// `(r, n − s)`: the other valid form of a raw r||s signature.
    static func otherForm(_ raw: [UInt8]) -> [UInt8] {
        var s = Array(raw[32...])
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var difference = Int(PublicKeyP256.order[index]) - Int(s[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        s = result
        return Array(raw[..<32]) + s
    }

    static func withSignature(_ body: [UInt8], _ signature: String) throws -> [UInt8] {
        var object = try JSONSerialization.jsonObject(with: Data(body)) as! [String: Any]
        object["sig"] = signature
        return Array(try JSONSerialization.data(withJSONObject: object))
    }

    @Test(arguments: [false, true])
    func aReplayIsRefusedHoweverItsSignatureIsSpelledOrWhateverBodyItCarries(replaysInDatabase: Bool) async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run(replaysInDatabase: replaysInDatabase) { relay in
            let a = try relay.client("a", http: http)
            #expect(await a.register(token: "a0000001", platform: .ios) == .bound)
            let body = try Self.v1Send(a.identity, tokens: ["a0000001"], title: "Detour")
            let signature = try #require((try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["sig"] as? String)
            let raw = try #require(Base64URL.decode(signature))
            #expect(try await relay.post("/v1/push/send", body).status == 200)
            // Other spellings of the same 64 bytes are not canonical base64url: refused before anything else.
            let last = signature.last!
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let lastIndex = alphabet.firstIndex(of: last)!
            let sameBytes = String(signature.dropLast()) + String(alphabet[lastIndex ^ 1])  // the 2 unused low bits differ
            #expect(Base64URL.decode(sameBytes) == raw, "decodes to the same bytes")
            for spelling in [signature + "==", sameBytes] {
                let response = try await relay.post("/v1/push/send", try Self.withSignature(body, spelling))
                #expect(response.status == 401 && Self.error(response) == "invalid_signature", "\(spelling): \(response.text)")
            }
            // The other valid form verifies, but it is the same send: a replay.
            let malleated = Base64URL.encode(Self.otherForm(raw))
            #expect(a.identity.jwk.canonical.isEmpty == false)
            let other = try await relay.post("/v1/push/send", try Self.withSignature(body, malleated))
            #expect(other.status == 401 && Self.error(other) == "replay", "\(other.text)")
            // Version 1 does not sign the body: a new body under the genuine signature is the same send.
            var swapped = try JSONSerialization.jsonObject(with: Data(body)) as! [String: Any]
            swapped["body"] = "ATTACKER TEXT: tap evil.example"
            let swap = try await relay.post("/v1/push/send", Array(try JSONSerialization.data(withJSONObject: swapped)))
            #expect(swap.status == 401 && Self.error(swap) == "replay")
            #expect(relay.apns.sent.value.count == 1, "one signed send reached the phone once")
            #expect(relay.apns.sent.value.first?.body == "Body")

            // A fresh send signed in the high-S form is accepted (the seed's clients make one half the time).
            for title in ["High S 1", "High S 2"] {
                let fresh = try Self.v1Send(a.identity, tokens: ["a0000001"], title: title)
                let freshRaw = try #require(
                    Base64URL.decode((try JSONSerialization.jsonObject(with: Data(fresh)) as! [String: Any])["sig"] as! String))
                let low = try #require(PublicKeyP256.lowS(freshRaw))
                let high = low == freshRaw ? Self.otherForm(freshRaw) : freshRaw
                #expect(PublicKeyP256.lowS(high) == low && high != low)
                #expect(try await relay.post("/v1/push/send", try Self.withSignature(fresh, Base64URL.encode(high))).status == 200)
            }
        }
    }

    @Test func aDropEndsOnlyTheSendingServersBinding() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let victim = try relay.client("victim", http: http), attacker = try relay.client("attacker", http: http)
            // The token answers "dead" to whoever sends (RecordingTransport), as APNs does for a sandbox send to a production token.
            #expect(await victim.register(token: "shared0dead", platform: .ios) == .bound)
            #expect(await attacker.register(token: "shared0dead", platform: .ios) == .bound)
            var push = PushMessage(token: "shared0dead", platform: .ios, apnsSandbox: true, title: "x")
            push.apnsSandbox = true
            let outcome = await attacker.send([push])
            guard case .terminal = outcome[0] else {
                Issue.record("the attacker's send is told to drop: \(outcome)")
                return
            }
            let now = Self.nowMillis()
            #expect(
                try await relay.store.bindings(tokens: ["shared0dead"], serverID: attacker.identity.serverID, nowMillis: EpochMillis(now)) == [nil])
            #expect(
                try await relay.store.bindings(tokens: ["shared0dead"], serverID: victim.identity.serverID, nowMillis: EpochMillis(now)) == [.ios],
                "another server's binding survives")
        }
    }

    @Test func bindingsAreBoundedPerServerKeyAndPerClientAddress() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run(maxBindingsPerServer: 3, maxBindingsPerClient: 5) { relay in
            let a = try relay.client("a", http: http)
            for n in 0..<3 { #expect(await a.register(token: "a000000\(n)", platform: .ios) == .bound) }
            #expect(await a.register(token: "a0000009", platform: .ios) != .bound, "a fourth binding for one key is refused")
            #expect(await a.register(token: "a0000001", platform: .ios) == .bound, "refreshing a binding it holds is not a new one")
            // Fresh keys from the same address: the per-client bound holds.
            let b = try relay.client("b", http: http), c = try relay.client("c", http: http)
            #expect(await b.register(token: "b0000001", platform: .ios) == .bound)
            #expect(await b.register(token: "b0000002", platform: .ios) == .bound)
            #expect(await c.register(token: "c0000001", platform: .ios) != .bound, "five bindings from this address already")
            let ts = Self.nowMillis()
            let raw = JSONValue.object([
                "token": .string("c0000002"), "platform": .string("ios"), "publicKeyJwk": c.identity.jwk.json,
                "ts": .integer(ts), "sig": .string(Base64URL.encode(try c.identity.key.sign(Array("\(ts).c0000002.ios".utf8)))),
            ])
            let refused = try await relay.post("/v1/push/register-token", raw.encoded())
            #expect(refused.status == 403 && Self.error(refused) == "binding_limit")
            // A dropped binding frees its place.
            #expect(try await relay.store.held(owner: "server:" + a.identity.serverID) == 3)
            try await relay.store.forget(token: "a0000000", serverID: a.identity.serverID)
            #expect(try await relay.store.held(owner: "server:" + a.identity.serverID) == 2)
            #expect(await c.register(token: "c0000001", platform: .ios) == .bound)
        }
    }

    @Test func badInputIsAClear4xxAndNeverAPush() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let a = try relay.client("a", http: http)
            #expect(await a.register(token: "a0000001", platform: .ios) == .bound)
            func expect(_ body: [UInt8], _ status: Int, _ code: String, path: String = "/v1/push/send") async throws {
                let response = try await relay.post(path, body)
                #expect(response.status == status && Self.error(response) == code, "\(response.status) \(response.text)")
            }
            try await expect(Array("{not json".utf8), 400, "invalid_request")
            try await expect(Self.v1Send(a.identity, tokens: (0..<101).map { String(format: "tok%08d", $0) }, title: "x"), 400, "invalid_request")
            var p384 = try JSONSerialization.jsonObject(with: Data(Self.v1Send(a.identity, tokens: ["a0000001"], title: "x"))) as! [String: Any]
            p384["publicKeyJwk"] = ["kty": "EC", "crv": "P-384", "x": "AAAA", "y": "BBBB"]
            try await expect(Array(try JSONSerialization.data(withJSONObject: p384)), 400, "invalid_request")
            var shortSignature =
                try JSONSerialization.jsonObject(with: Data(Self.v1Send(a.identity, tokens: ["a0000001"], title: "x"))) as! [String: Any]
            shortSignature["sig"] = Base64URL.encode(Array(repeating: 1, count: 63))
            try await expect(Array(try JSONSerialization.data(withJSONObject: shortSignature)), 401, "invalid_signature")
            try await expect(
                Self.v1Send(a.identity, tokens: ["a0000001"], title: "x", extra: ["push": .object([:])]), 400, "signature_version_2_required")
            try await expect(Array(repeating: UInt8(ascii: " "), count: 1_048_576), 413, "payload_too_large")
            let ts = Self.nowMillis()
            let android = JSONValue.object([
                "token": .string("android01"), "platform": .string("android"), "publicKeyJwk": a.identity.jwk.json,
                "ts": .integer(ts), "sig": .string(Base64URL.encode(try a.identity.key.sign(Array("\(ts).android01.android".utf8)))),
            ])
            try await expect(android.encoded(), 400, "unsupported_platform", path: "/v1/push/register-token")
            #expect(relay.apns.sent.value.isEmpty)
        }
    }

    @Test func sendsAreLimitedPerServer() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run(sendLimit: 2) { relay in
            let a = try relay.client("a", http: http), b = try relay.client("b", http: http)
            #expect(await a.register(token: "a0000001", platform: .ios) == .bound)
            var statuses: [Int] = []
            for n in 0..<3 {
                statuses.append(try await relay.post("/v1/push/send", Self.v1Send(a.identity, tokens: ["a0000001"], title: "n\(n)")).status)
            }
            #expect(statuses == [200, 200, 429])
            #expect(
                try await relay.post("/v1/push/send", Self.v1Send(b.identity, tokens: ["a0000001"], title: "b")).status == 200,
                "another server has its own budget")
        }
        // A server's key is public: sends naming it without its signature
        // are refused and spend nothing of its budget.
        try await TestRelay.run(sendLimit: 2) { relay in
            let a = try relay.client("a", http: http), mallory = try relay.client("mallory", http: http)
            #expect(await a.register(token: "a0000001", platform: .ios) == .bound)
            for n in 0..<5 {
                let ts = Self.nowMillis()
                let forged = try Self.withSignature(
                    try Self.v1Send(a.identity, tokens: ["a0000001"], title: "forged \(n)", ts: ts),
                    Base64URL.encode(
                        try mallory.identity.key.sign(Array(RelayProtocol.sendString(ts: ts, tokens: ["a0000001"], title: "forged \(n)").utf8))))
                let answer = try await relay.post("/v1/push/send", forged)
                #expect(answer.status == 401 && Self.error(answer) == "invalid_signature")
            }
            var statuses: [Int] = []
            for n in 0..<3 {
                statuses.append(try await relay.post("/v1/push/send", Self.v1Send(a.identity, tokens: ["a0000001"], title: "n\(n)")).status)
            }
            #expect(statuses == [200, 200, 429], "the forgeries spent none of the budget")
            #expect(relay.apns.sent.value.count == 2)
        }
    }

    static func tokens(_ prefix: String, _ count: Int) -> [String] { (0..<count).map { String(format: "\(prefix)%07d", $0) } }

    @Test func aSignedSendCarriesUpToAThousandTokensAndTheAnswerSaysSo() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let a = try relay.client("a", http: http)
            for token in ["a0000001", "a0000002"] { #expect(await a.register(token: token, platform: .ios) == .bound) }
            let thousand = ["a0000001"] + Self.tokens("c", 998) + ["a0000002"]
            let taken = try await relay.signedSend(a.identity, tokens: thousand)
            #expect(taken.status == 200)
            #expect(taken.header("X-Relay-Max-Tokens") == "1000")
            #expect(relay.apns.batches.value == [2], "the two bound tokens, in one call")
            guard case .object(let answer) = try JSONValue(parsing: taken.body), case .array(let results)? = answer["results"] else {
                Issue.record("not an answer: \(taken.text)")
                return
            }
            #expect(results.count == 1000)

            let tooMany = try await relay.signedSend(a.identity, tokens: Self.tokens("d", 1001))
            #expect(tooMany.status == 400)
            #expect(Self.error(tooMany) == "invalid_request")
            #expect(tooMany.header("X-Relay-Max-Tokens") == "1000", "a refused send also learns the limit")
            let seedShaped = try await relay.post("/v1/push/send", try Self.v1Send(a.identity, tokens: Self.tokens("e", 101), title: "x"))
            #expect(seedShaped.status == 400, "version 1 keeps the seed's 100")
        }
    }

    @Test func aLargerSendCountsOncePerHundredTokensAgainstTheServersLimit() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run(sendLimit: 5) { relay in
            let a = try relay.client("a", http: http)
            var statuses: [Int] = []
            for (prefix, count) in [("f", 250), ("g", 200), ("h", 1)] {
                statuses.append(try await relay.signedSend(a.identity, tokens: Self.tokens(prefix, count)).status)
            }
            #expect(statuses == [200, 200, 429], "3 + 2 of 5, then over")
        }
    }

    @Test func theClientSends100AtATimeUntilTheRelaySaysItTakesMore() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        try await TestRelay.run { relay in
            let a = try relay.client("a", http: http)
            let tokens = Self.tokens("a", 150)
            for token in tokens { #expect(await a.register(token: token, platform: .ios) == .bound) }
            let messages = tokens.map { PushMessage(token: $0, platform: .ios, title: "Detour") }
            #expect(a.sendSize.current == 100)
            #expect(await a.send(messages) == Array(repeating: .delivered, count: 150))
            #expect(relay.apns.batches.value.sorted() == [50, 100], "two sends of at most 100 before the relay has said more")
            #expect(a.sendSize.current == 1000)
            #expect(await a.send(messages) == Array(repeating: .delivered, count: 150))
            #expect(relay.apns.batches.value.last == 150, "then one send")
        }
    }

    @Test func aRelayThatRefusesALargerSendGetsItAgainAHundredAtATime() async throws {
        let http = Self.client()
        defer { http.shutdown() }
        // An older relay: 100 tokens at most, no X-Relay-Max-Tokens, answers
        // in full (every token delivered).
        let sizes = Locked<[Int]>([])
        var router = Router()
        router.add(
            Route("POST", "/v1/push/send", bodyLimit: 1 << 20, parsesParameters: false) { request in
                guard case .object(let body)? = try? JSONValue(parsing: request.body), case .array(let tokens)? = body["tokens"] else {
                    return Response.json(400, ["error": "invalid_request"])
                }
                sizes.withLock { $0.append(tokens.count) }
                guard tokens.count <= 100 else { return Response.json(400, ["error": "invalid_request"]) }
                let results = tokens.map { JSONValue.object(["ok": .bool(true), "token": $0]) }
                return Response.bytes(200, contentType: "application/json", JSONValue.object(["results": .array(results)]).encoded())
            })
        let server = try startLocalServer(router)
        let keyPath = FileManager.default.temporaryDirectory.appendingPathComponent("relay-old-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: keyPath) }
        let identity = try RelayIdentity.loadOrCreate(path: keyPath)
        let client = RelayTransport(
            baseURL: "http://127.0.0.1:\(server.port)", identity: identity, http: http, clock: SystemClock(),
            logger: Logger(level: .error, sink: MemorySink()))
        client.sendSize.learn("1000")  // as if the relay had said so before it was replaced
        let messages = Self.tokens("a", 150).map { PushMessage(token: $0, platform: .ios, title: "Detour") }
        let refused = await client.send(messages)
        #expect(refused.allSatisfy { if case .transient = $0 { true } else { false } }, "to be sent again, not dropped: \(refused[0])")
        #expect(client.sendSize.current == 100)
        #expect(await client.send(messages) == Array(repeating: .delivered, count: 150))
        #expect(sizes.value.sorted() == [50, 100, 150])
        _ = await server.shutdown()
    }

    @Test func theKeyFileIsPrivateAndStable() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("key.pem").path
        let first = try RelayIdentity.loadOrCreate(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try RelayIdentity.loadOrCreate(path: path).serverID == first.serverID)
    }
}
