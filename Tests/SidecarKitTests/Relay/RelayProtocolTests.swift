import Core
import Crypto
import Foundation
import HTTPClient
import HTTPServer
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 17: the signed push relay's protocol (signatures, server ids, payloads, tokens).
@Suite("Relay: protocol")
struct RelayProtocolTests {
    @Test func keysSignAndVerifyAsRawRS() throws {
        let key = try PrivateKey.generateP256()
        let publicKey = try key.publicKey()
        let message = Array("1767225600000.a1b2c3d4.ios".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 64)
        #expect(publicKey.verify(message, signature: signature))
        #expect(!publicKey.verify(Array("1767225600000.a1b2c3d4.android".utf8), signature: signature))
        #expect(!publicKey.verify(message, signature: Array(signature.dropLast())))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!publicKey.verify(message, signature: flipped))
        // The PEM reloads to the same identity.
        let reloaded = try PrivateKey(pem: key.pem())
        #expect(RelayProtocol.PublicJWK(try reloaded.publicKey()) == RelayProtocol.PublicJWK(publicKey))
    }

    @Test func serverIDHashesTheCanonicalJWK() throws {
        let jwk = RelayProtocol.PublicJWK(x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")
        #expect(
            jwk.canonical
                == #"{"crv":"P-256","kty":"EC","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#)
        #expect(jwk.serverID == Base64URL.encode(SHA256.digest(Array(jwk.canonical.utf8))))
        #expect(jwk.serverID.count == 43)
        // Member order in the request does not matter; the key must be on P-256.
        let shuffled: JSONValue = .object(["y": .string(jwk.y), "crv": .string("P-256"), "x": .string(jwk.x), "kty": .string("EC")])
        #expect(try RelayProtocol.PublicJWK.parse(shuffled) == jwk)
        #expect(throws: RelayProtocol.Failure.invalidRequest) {
            try RelayProtocol.PublicJWK.parse(.object(["kty": .string("EC"), "crv": .string("P-384"), "x": .string(jwk.x), "y": .string(jwk.y)]))
        }
        #expect(throws: RelayProtocol.Failure.invalidRequest) {
            try RelayProtocol.PublicJWK.parse(
                .object(["kty": .string("EC"), "crv": .string("P-256"), "x": .string(jwk.x), "y": .string(jwk.y), "d": .string("secret")]))
        }
        #expect(throws: RelayProtocol.Failure.invalidRequest) {
            try RelayProtocol.PublicJWK(x: jwk.x, y: Base64URL.encode(Array(repeating: 7, count: 32))).key()
        }
    }

    @Test(arguments: [
        (RelayProtocol.registerString(ts: 1, token: "abc", platform: "ios"), "1.abc.ios"),
        (RelayProtocol.registerString(ts: 1, token: "abc", platform: nil), "1.abc"),
        (RelayProtocol.sendString(ts: 5, tokens: ["bb", "aa", "cc"], title: "Hi. There"), "5.aa,bb,cc.Hi. There"),
        (RelayProtocol.requestString(method: "POST", path: "/v1/push/send", ts: 9, bodyDigest: "d"), "sidecar-relay-v2\nPOST\n/v1/push/send\n9\nd"),
    ])
    func signedStrings(actual: String, expected: String) {
        #expect(actual == expected)
    }

    @Test func payloadsRoundTripEveryFieldOurPushesUse() throws {
        var alarm = PushMessage(
            token: "t", platform: .ios, apnsSandbox: true, title: "Your bus", body: "5 minutes away",
            data: ["arrival_and_departure": .object(["stopID": .string("1_75403")])])
        alarm.attention = .timeSensitive
        alarm.collapseID = "alarm-1"
        alarm.expiration = 99
        alarm.badge = 3
        let decoded = try RelayProtocol.decode(RelayProtocol.encode(alarm), token: "t", platform: .ios)
        #expect(decoded == alarm)
        var activity = PushMessage(token: "t", platform: .ios)
        activity.kind = .liveActivity
        activity.priority = 5
        activity.liveActivity = [
            "event": .string("update"), "timestamp": .integer(1), "content-state": .object(["minutes": .integer(5)]),
            "stale-date": .integer(2), "dismissal-date": .integer(3),
        ]
        #expect(try RelayProtocol.decode(RelayProtocol.encode(activity), token: "t", platform: .ios) == activity)
        #expect(throws: RelayProtocol.Failure.invalidRequest) {
            try RelayProtocol.decode(RelayProtocol.encode(activity), token: "t", platform: .android)
        }
        #expect(throws: RelayProtocol.Failure.invalidRequest) {
            try RelayProtocol.decode(.object(["kind": .string("alert"), "surprise": .bool(true)]), token: "t", platform: .ios)
        }
    }

    @Test(arguments: [
        ("0a1b2c3d4e5f6a7b", true), ("fcm-token:APA91b_x-y", true), ("short", false), ("has space 123", false), ("<script>alert</script>", false),
    ])
    func tokens(token: String, valid: Bool) {
        #expect(RelayProtocol.isToken(token) == valid)
    }

    /// The send's answer is written byte by byte: it must read back as the
    /// tree of values the relay used to encode, whatever a refused token holds.
    @Test func sendResultsReadBackAsTheirValues() throws {
        let cases: [(String, RelayProtocol.SendResults.Outcome, JSONValue)] = [
            ("a1b2", .delivered, .object(["token": .string("a1b2"), "ok": .bool(true)])),
            ("c3", .notDelivered, .object(["token": .string("c3"), "ok": .bool(false)])),
            ("d4", .dropped, .object(["token": .string("d4"), "ok": .bool(false), "drop": .bool(true)])),
            (
                "q\"uo\\te\u{1}\nüñ", .invalidToken,
                .object(["token": .string("q\"uo\\te\u{1}\nüñ"), "ok": .bool(false), "error": .string("invalid_token")])
            ),
        ]
        var results = RelayProtocol.SendResults(capacity: cases.count)
        for (token, outcome, _) in cases { results.append(token: token, outcome) }
        let read = try JSONDecoder().decode(JSONValue.self, from: Data(results.encoded()))
        #expect(read == .object(["results": .array(cases.map(\.2))]))
        #expect(
            try JSONDecoder().decode(JSONValue.self, from: Data(RelayProtocol.SendResults(capacity: 0).encoded())) == .object(["results": .array([])])
        )
        // And the sending server reads each member back.
        #expect(
            RelayProtocol.SendAnswer.read(results.encoded()).results == [
                .init(token: "a1b2", ok: true), .init(token: "c3", ok: false), .init(token: "d4", ok: false, drop: true),
                .init(token: "q\"uo\\te\u{1}\nüñ", ok: false, error: "invalid_token"),
            ])
        #expect(RelayProtocol.SendAnswer.read(results.encoded()).delivered == nil, "a full answer carries no count")

        // Failures only: the delivered tokens counted, not listed.
        var failures = RelayProtocol.SendResults(capacity: cases.count + 1, failuresOnly: true)
        for (token, outcome, _) in cases + [("e5", .delivered, .null)] { failures.append(token: token, outcome) }
        #expect(
            try JSONValue(parsing: failures.encoded())
                == .object(["delivered": .integer(2), "results": .array(cases.filter { $0.1 != .delivered }.map(\.2))]))
        #expect(RelayProtocol.SendAnswer.read(failures.encoded()).delivered == 2)
        #expect(
            try JSONValue(parsing: RelayProtocol.SendResults(capacity: 0, failuresOnly: true).encoded())
                == .object(["delivered": .integer(0), "results": .array([])]))
    }

    @Test(
        "the sending server reads an answer as leniently as a tree of values",
        arguments: [
            (
                #"{"results":[1,"x",null,{"token":5,"ok":true},{"ok":"yes","token":"a"},{"ok":true,"token":"b","extra":[1]}]}"#,
                [RelayProtocol.SendAnswer.Result(token: nil, ok: true), .init(token: "a"), .init(token: "b", ok: true)]
            ),
            (#"{"results":{"token":"a"}}"#, []), (#"{"error":"rate_limited"}"#, []), (#"[1,2]"#, []), ("not json", []), ("", []),
            (#"{"results":[{"drop":"true","error":7,"token":"c"}]}"#, [.init(token: "c")]),
        ])
    func sendAnswerIsReadLeniently(body: String, expected: [RelayProtocol.SendAnswer.Result]) {
        #expect(RelayProtocol.SendAnswer.read(Array(body.utf8)).results == expected)
    }

    static let dropped = PushOutcome.terminal(reason: "Unregistered (the relay dropped the token)")
    static let unbound = PushOutcome.transient(reason: "not delivered by the relay (not bound yet, or the provider refused)")
    static let noResult = PushOutcome.transient(reason: "the relay gave no result")
    static let unaccounted = PushOutcome.transient(reason: "the relay's answer does not account for every token")

    @Test(
        "the sending server reads each token's outcome from a full or a failures-only answer",
        arguments: [
            // A full answer (a relay that ignores the header): a token without a result is retried.
            (#"{"results":[{"ok":true,"token":"a"},{"drop":true,"ok":false,"token":"b"}]}"#, [.delivered, dropped, noResult]),
            // Failures only: the unlisted tokens were delivered when the count agrees...
            (#"{"delivered":2,"results":[{"drop":true,"ok":false,"token":"b"}]}"#, [.delivered, dropped, .delivered]),
            (#"{"delivered":3,"results":[]}"#, [.delivered, .delivered, .delivered]),
            (
                #"{"delivered":0,"results":[{"ok":false,"token":"a"},{"ok":false,"token":"b"},{"ok":false,"token":"c"}]}"#,
                [unbound, unbound, unbound]
            ),
            // ...and are retried when it does not (never read as delivered).
            (#"{"delivered":3,"results":[{"drop":true,"ok":false,"token":"b"}]}"#, [unaccounted, dropped, unaccounted]),
            (#"{"delivered":1,"results":[]}"#, [unaccounted, unaccounted, unaccounted]),
            (#"{"delivered":-2,"results":[]}"#, [noResult, noResult, noResult]),
            (#"{"delivered":"3","results":[]}"#, [noResult, noResult, noResult]),
            (#"{"delivered":3}"#, [.delivered, .delivered, .delivered]),
            (#"{"delivered":3,"results":"none"}"#, [.delivered, .delivered, .delivered]),
            ("not json", [noResult, noResult, noResult]), ("", [noResult, noResult, noResult]),
        ])
    func outcomesFromAnAnswer(body: String, expected: [PushOutcome]) {
        #expect(RelayTransport.outcomes(tokens: ["a", "b", "c"], answer: Array(body.utf8)) == expected)
    }
}
