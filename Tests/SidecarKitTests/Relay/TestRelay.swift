import Core
import Crypto
import Foundation
import HTTPClient
import HTTPServer
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// Records what would go to APNs; tokens ending in `dead` are unregistered.
final class RecordingTransport: PushTransport, Sendable {
    let name = "apns"
    let sent = Locked<[PushMessage]>([])
    /// How many messages each call carried (one call per relay send).
    let batches = Locked<[Int]>([])

    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        sent.withLock { $0 += messages }
        batches.withLock { $0.append(messages.count) }
        return messages.map { $0.token.hasSuffix("dead") ? .terminal(reason: "Unregistered") : .delivered }
    }
}

/// One relay, in process, on an ephemeral port, with a recording APNs.
struct TestRelay {
    let server: HTTPServer
    let apns: RecordingTransport
    let directory: URL
    let store: RelayStore
    var url: String { "http://127.0.0.1:\(server.port)" }

    static func run(
        sendLimit: Int = 0, maxBindingsPerServer: Int = 0, maxBindingsPerClient: Int = 0, replaysInDatabase: Bool = false,
        _ body: (TestRelay) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = SidecarConfiguration()
        configuration.database = directory.appendingPathComponent("relay.sqlite3").path
        let database = try configuration.openDatabase(readers: 2)
        _ = try await database.migrate(Migrations.relay)
        let apns = RecordingTransport()
        let clock = SystemClock()
        // The limiters' minute stands still: a test crossing a minute's
        // boundary must not get a fresh budget halfway.
        let started = clock.now().timeIntervalSince1970
        let now: @Sendable () -> Double = { started }
        // A relay alone keeps its replay window in memory; relays sharing a
        // database keep it there (`replaysInDatabase`).
        let store = RelayStore(
            database: database, maxBindingsPerServer: maxBindingsPerServer, maxBindingsPerClient: maxBindingsPerClient,
            replayWindow: replaysInDatabase ? nil : ReplayWindow())
        let routes = RelayRoutes(
            store: store, apns: apns, fcm: nil, allowedServers: nil,
            clientLimiter: FixedWindowRateLimiter(limit: 0, windowSeconds: 60, now: now),
            serverLimiter: FixedWindowRateLimiter(limit: sendLimit, windowSeconds: 60, now: now),
            clock: clock, logger: Logger(level: .error, sink: MemorySink()), database: database)
        var router = Router()
        routes.routes.forEach { router.add($0) }
        let server = try startLocalServer(router)
        let relay = TestRelay(server: server, apns: apns, directory: directory, store: store)
        do { try await body(relay) } catch {
            _ = await server.shutdown()
            await database.close()
            throw error
        }
        _ = await server.shutdown()
        await database.close()
        try? FileManager.default.removeItem(at: directory)
    }

    func client(_ name: String, http: HTTPClient) throws -> RelayTransport {
        let identity = try RelayIdentity.loadOrCreate(path: directory.appendingPathComponent("\(name).pem").path)
        return RelayTransport(baseURL: url, identity: identity, http: http, clock: SystemClock(), logger: Logger(level: .error, sink: MemorySink()))
    }

    /// A version-2 send of `tokens`, signed by `identity`, as our client
    /// makes it (for sizes our client would not send).
    func signedSend(_ identity: RelayIdentity, tokens: [String], title: String = "Detour") async throws -> RawResponse {
        let body = JSONValue.object([
            "tokens": .array(tokens.map(JSONValue.string)),
            "push": RelayProtocol.encode(PushMessage(token: "", platform: .ios, title: title)), "publicKeyJwk": identity.jwk.json,
        ]).encoded()
        let headers = try identity.headers(method: "POST", path: "/v1/push/send", body: body, nowMillis: SystemClock().nowMillis)
        return try await post("/v1/push/send", body, headers: Dictionary(headers.map { ($0.name, $0.value) }) { $1 })
    }

    /// A raw POST (for requests our client would never make).
    func post(_ path: String, _ body: [UInt8], headers: [String: String] = [:]) async throws -> RawResponse {
        try await RawHTTPClient.send(
            port: server.port,
            RawHTTPClient.request(
                "POST", path, headers: ["Content-Type": "application/json"].merging(headers) { $1 },
                body: body))
    }
}
