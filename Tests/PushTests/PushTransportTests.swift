import Core
import Crypto
import Foundation
import HTTPClient
import HTTPServer
import TestSupport
import Testing

@testable import Push

/// A provider stand-in whose answers the test programs, recording requests.
final class ProviderPeer: Sendable {
    struct Seen: Sendable {
        var path: String
        var headers: [String: String]
        var body: [UInt8]
    }
    let seen = Locked<[Seen]>([])
    /// Status and JSON body to answer, in order; the last repeats.
    let answers = Locked<[(Int, String)]>([(200, "{}")])
    let server: HTTPServer

    init() throws {
        var router = Router()
        let seen = self.seen
        let answers = self.answers
        let handler: Handler = { request in
            seen.withLock {
                $0.append(
                    Seen(
                        path: request.rawPath, headers: Dictionary(request.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a }),
                        body: request.body))
            }
            let (status, body) = answers.withLock { list -> (Int, String) in list.count > 1 ? list.removeFirst() : list[0] }
            return .bytes(status, contentType: "application/json", Array(body.utf8))
        }
        router.add(Route("POST", "/3/device/:token", parsesParameters: false, handler: handler))
        router.add(Route("POST", "/sandbox/3/device/:token", parsesParameters: false, handler: handler))
        router.add(
            Route("POST", "/token", parsesParameters: false) { request in
                seen.withLock { $0.append(Seen(path: request.rawPath, headers: [:], body: request.body)) }
                return .json(200, ["access_token": "ya29.test", "expires_in": "3600", "token_type": "Bearer"])
            })
        router.add(Route("POST", "/v1/projects/:project/messages:send", parsesParameters: false, handler: handler))
        server = try startLocalServer(router)
    }

    var url: String { "http://127.0.0.1:\(server.port)" }
}

final class FakeTime: @unchecked Sendable {
    // Only the test thread moves it, between sends.
    var seconds: Double = 1_800_000_000
}

@Suite("Direct APNs and FCM transports")
struct PushTransportTests {
    static func claims(_ jwt: String) throws -> (header: [String: Any], claims: [String: Any], signature: [UInt8]) {
        let parts = jwt.split(separator: ".").map(String.init)
        func decode(_ text: String) -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return Data(base64Encoded: base64) ?? Data()
        }
        let header = try JSONSerialization.jsonObject(with: decode(parts[0])) as? [String: Any] ?? [:]
        let claims = try JSONSerialization.jsonObject(with: decode(parts[1])) as? [String: Any] ?? [:]
        return (header, claims, [UInt8](decode(parts[2])))
    }

    static func apns(_ peer: ProviderPeer, time: FakeTime) throws -> APNsTransport {
        var configuration = APNsTransport.Configuration(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "org.onebusaway.iphone")
        configuration.productionURL = peer.url
        configuration.sandboxURL = peer.url + "/sandbox"
        return APNsTransport(
            configuration: configuration, key: try PrivateKey(pem: TestKeys.ecPrivate), http: HTTPClient.patient(),
            now: { time.seconds }, sleep: { _ in })
    }

    @Test func apnsSendsTheHeadersAndPayloadAppleExpects() async throws {
        let peer = try ProviderPeer()
        let time = FakeTime()
        let transport = try Self.apns(peer, time: time)
        let message = PushMessage(
            token: "01abff", platform: .ios, title: "OneBusAway", body: "The 44 leaves in 5 minutes",
            data: ["arrival_and_departure": .object(["region_id": .integer(1)])])
        #expect(await transport.send([message]) == [.delivered])
        let seen = try #require(peer.seen.value.first)
        #expect(seen.path == "/3/device/01abff")
        #expect(seen.headers["apns-topic"] == "org.onebusaway.iphone")
        #expect(seen.headers["apns-push-type"] == "alert")
        #expect(seen.headers["apns-priority"] == "10")
        let authorization = try #require(seen.headers["authorization"])
        #expect(authorization.hasPrefix("bearer "))
        let jwt = try Self.claims(String(authorization.dropFirst(7)))
        #expect(jwt.header["alg"] as? String == "ES256")
        #expect(jwt.header["kid"] as? String == "ABC123DEFG")
        #expect(jwt.claims["iss"] as? String == "TEAM123456")
        #expect(jwt.claims["iat"] as? Int == 1_800_000_000)
        #expect(jwt.signature.count == 64, "raw r||s")
        let payload = try JSONSerialization.jsonObject(with: Data(seen.body)) as? [String: Any]
        #expect(Set(payload?.keys.map { $0 } ?? []) == ["aps", "arrival_and_departure"])
        #expect(((payload?["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String == "The 44 leaves in 5 minutes")

        // Sandbox tokens go to the sandbox host; the provider token is reused, then re-signed when old.
        #expect(await transport.send([PushMessage(token: "debug", platform: .ios, apnsSandbox: true, body: "x")]) == [.delivered])
        #expect(peer.seen.value.last?.path == "/sandbox/3/device/debug")
        #expect(peer.seen.value.last?.headers["authorization"] == authorization, "the provider token is reused")
        time.seconds += 41 * 60
        _ = await transport.send([message])
        let later = try Self.claims(String(try #require(peer.seen.value.last?.headers["authorization"]).dropFirst(7)))
        #expect(later.claims["iat"] as? Int == 1_800_000_000 + 41 * 60)
        await peer.server.shutdown()
    }

    @Test func liveActivityPushesUseTheirTopicTypeAndPayload() async throws {
        let peer = try ProviderPeer()
        let transport = try Self.apns(peer, time: FakeTime())
        var message = PushMessage(token: "activity-token", platform: .ios)
        message.kind = .liveActivity
        message.collapseID = "stop-1_570"
        message.liveActivity = [
            "event": .string("update"), "timestamp": .integer(1_800_000_000),
            "content-state": .object(["arrivals": .array([])]), "stale-date": .integer(1_800_000_600),
        ]
        #expect(await transport.send([message]) == [.delivered])
        let seen = try #require(peer.seen.value.first)
        #expect(seen.headers["apns-topic"] == "org.onebusaway.iphone.push-type.liveactivity")
        #expect(seen.headers["apns-push-type"] == "liveactivity")
        #expect(seen.headers["apns-priority"] == "10")
        #expect(seen.headers["apns-collapse-id"] == "stop-1_570")
        let payload = try JSONSerialization.jsonObject(with: Data(seen.body)) as? [String: Any]
        let aps = try #require(payload?["aps"] as? [String: Any])
        #expect(Set(aps.keys) == ["event", "timestamp", "content-state", "stale-date"])
        await peer.server.shutdown()
    }

    @Test(
        "APNs answers",
        arguments: [
            (410, #"{"reason":"Unregistered"}"#, "terminal"), (400, #"{"reason":"BadDeviceToken"}"#, "terminal"),
            (400, #"{"reason":"DeviceTokenNotForTopic"}"#, "terminal"), (400, #"{"reason":"TopicDisallowed"}"#, "terminal"),
            (429, #"{"reason":"TooManyRequests"}"#, "transient"), (500, #"{"reason":"InternalServerError"}"#, "transient"),
            (503, #"{"reason":"ServiceUnavailable"}"#, "transient"), (503, #"{"reason":"Shutdown"}"#, "transient"),
            (403, #"{"reason":"ExpiredProviderToken"}"#, "transient"), (413, #"{"reason":"PayloadTooLarge"}"#, "rejected"),
            (400, #"{"reason":"BadCollapseId"}"#, "rejected"), (200, "", "delivered"),
        ])
    func apnsOutcomes(status: Int, body: String, kind: String) {
        let outcome = APNsTransport.outcome(status: status, body: Array(body.utf8))
        switch outcome {
        case .delivered: #expect(kind == "delivered")
        case .terminal: #expect(kind == "terminal")
        case .transient: #expect(kind == "transient")
        case .rejected: #expect(kind == "rejected")
        }
    }

    @Test func apnsRefreshesARejectedProviderTokenAndRetriesTransientFailures() async throws {
        let peer = try ProviderPeer()
        let time = FakeTime()
        let transport = try Self.apns(peer, time: time)
        peer.answers.withLock { $0 = [(403, #"{"reason":"ExpiredProviderToken"}"#), (200, "{}")] }
        #expect(await transport.send([PushMessage(token: "t", platform: .ios, body: "x")]) == [.delivered])
        #expect(peer.seen.value.count == 2, "re-signed and retried once")
        peer.answers.withLock { $0 = [(429, #"{"reason":"TooManyRequests"}"#), (503, #"{"reason":"ServiceUnavailable"}"#), (200, "{}")] }
        #expect(await transport.send([PushMessage(token: "t", platform: .ios, body: "x")]) == [.delivered])
        peer.answers.withLock { $0 = [(503, #"{"reason":"ServiceUnavailable"}"#)] }
        let before = peer.seen.value.count
        #expect(await transport.send([PushMessage(token: "t", platform: .ios, body: "x")]) == [.transient(reason: "ServiceUnavailable")])
        #expect(peer.seen.value.count - before == 3, "bounded attempts")
        let huge = PushMessage(token: "t", platform: .ios, body: String(repeating: "x", count: 5000))
        let count = peer.seen.value.count
        #expect(await transport.send([huge]) == [.rejected(reason: "PayloadTooLarge")])
        #expect(peer.seen.value.count == count, "refused before sending")
        await peer.server.shutdown()
    }

    @Test func fcmAuthenticatesWithTheServiceAccountAndMapsErrors() async throws {
        let peer = try ProviderPeer()
        let account = try FCMTransport.ServiceAccount(
            json: JSONValue.object([
                "type": .string("service_account"), "project_id": .string("oba-test"),
                "client_email": .string("push@oba-test.iam.gserviceaccount.com"),
                "private_key": .string(TestKeys.rsaPrivate), "token_uri": .string(peer.url + "/token"),
            ]).encoded())
        let transport = FCMTransport(account: account, http: HTTPClient.patient(), baseURL: peer.url, now: { 1_800_000_000 }, sleep: { _ in })
        let message = PushMessage(
            token: "fcm-token", platform: .android, title: "OneBusAway", body: "Leaves in 5 minutes",
            data: ["arrival_and_departure": .string(#"{"region_id":1}"#)])
        #expect(await transport.send([message, message]) == [.delivered, .delivered])
        let tokenRequests = peer.seen.value.filter { $0.path == "/token" }
        #expect(tokenRequests.count == 1, "the access token is cached")
        let form = String(decoding: tokenRequests[0].body, as: UTF8.self)
        #expect(form.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="))
        let assertion = try Self.claims(String(form.split(separator: "=").last!))
        #expect(assertion.header["alg"] as? String == "RS256")
        #expect(assertion.claims["iss"] as? String == "push@oba-test.iam.gserviceaccount.com")
        #expect(assertion.claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(assertion.signature.count == 256)
        let send = try #require(peer.seen.value.first { $0.path.hasSuffix("messages:send") })
        #expect(send.path == "/v1/projects/oba-test/messages:send")
        #expect(send.headers["authorization"] == "Bearer ya29.test")
        let body = try JSONSerialization.jsonObject(with: Data(send.body)) as? [String: Any]
        let fields = try #require(body?["message"] as? [String: Any])
        #expect(fields["token"] as? String == "fcm-token")
        #expect((fields["notification"] as? [String: Any])?["body"] as? String == "Leaves in 5 minutes")
        #expect((fields["data"] as? [String: Any])?["arrival_and_departure"] as? String == #"{"region_id":1}"#)

        peer.answers.withLock { $0 = [(404, #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#)] }
        #expect(await transport.send([message]) == [.terminal(reason: "UNREGISTERED")])
        peer.answers.withLock {
            $0 = [
                (400, #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT"}}"#)
            ]
        }
        guard case .terminal = await transport.send([message])[0] else {
            Issue.record("token-level INVALID_ARGUMENT is terminal")
            return
        }
        peer.answers.withLock { $0 = [(503, #"{"error":{"status":"UNAVAILABLE"}}"#), (200, "{}")] }
        #expect(await transport.send([message]) == [.delivered], "retried with backoff")
        await peer.server.shutdown()
    }

    @Test func theRouterSplitsPlatformsAndKeepsOrder() async {
        struct Fixed: PushTransport {
            let name: String
            let outcome: PushOutcome
            func send(_ messages: [PushMessage]) async -> [PushOutcome] { messages.map { _ in outcome } }
        }
        let router = PlatformRouter(ios: Fixed(name: "a", outcome: .delivered), android: UnavailableTransport(name: "FCM"))
        let outcomes = await router.send([PushMessage(token: "1", platform: .android), PushMessage(token: "2", platform: .ios)])
        #expect(outcomes == [.rejected(reason: "FCM is not configured"), .delivered])
    }
}
