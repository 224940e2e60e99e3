import Foundation
import HTTPServer
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// A send against a gateway that fails, a runner that dies, or a stop
/// between pages delivers each push once.
@Suite("Alerts: sends that survive failures and stops")
struct AlertSendTests {
    /// 250 registrations in region 1 and a published alert.
    static func audienceAndAlert(_ app: TestSidecar) async throws -> ServiceAlert {
        for index in 0..<250 {
            _ = try await app.pushStore.register(
                PushRegistrationRequest(
                    token: "device-\(index)", operatingSystem: .ios, locale: nil, testDevice: nil,
                    description: nil, apnsSandbox: false, apnsSandboxUnrecognized: false),
                regionID: 1, catalog: .standard, now: app.clock.now())
        }
        let alert = try await app.administration.create(regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start])
        return try await app.administration.setPublished(id: alert.id, true).alert
    }

    static func cli(_ app: TestSidecar, _ arguments: [String], errors: Locked<[String]>) async throws -> Int32 {
        guard
            case .admin(var invocation) = try CommandLineInterface.parse(
                arguments + ["--database", app.sidecar.configuration.database, "--regions", app.sidecar.configuration.regions ?? ""],
                environment: [:])
        else { throw CommandLineError("not an admin command") }
        invocation.configuration.sendRetry = .immediate
        return await AdminCommands.run(invocation, clock: app.clock, output: { _ in }, errors: { line in errors.withLock { $0.append(line) } })
    }

    @Test func aSendAgainstAGorushThatFailsThenRecoversDeliversEachPushOnce() async throws {
        try await AlertRouteTests.run { app, gorush, key in
            let alert = try await Self.audienceAndAlert(app)
            gorush.outage.withLock { $0 = 3 }
            let started = try await app.send("POST", "/admin/api/alerts/\(alert.id)/sends", headers: ["Authorization": "Bearer \(key)"])
            #expect(started.status == 202)
            let finished = try await app.eventually {
                try await AlertStore(database: app.sidecar.database).sends.list(alertID: alert.id).first?.status == "done"
            }
            #expect(finished)
            let send = try #require(try await AlertStore(database: app.sidecar.database).sends.list(alertID: alert.id).first)
            #expect(send.delivered == 250)
            #expect(send.pending == 0)
            #expect(gorush.tokens.count == 250, "retried after the outage, each push delivered once")
            #expect(Set(gorush.tokens).count == 250)
        }
    }

    @Test func aSendAgainstAGorushThatStaysDownEndsFailedAndResumesOnlyWhatWasNotDelivered() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            gorush.outage.withLock { $0 = -1 }
            let errors = Locked<[String]>([])
            #expect(try await Self.cli(app, ["alert", "send", String(alert.id), "--gorush-url", gorush.url], errors: errors) == 1)
            #expect(errors.value.contains { $0.contains("250 pushes were not delivered (gorush answered HTTP 500)") })
            let failed = try #require(try await AlertStore(database: app.sidecar.database).sends.list(alertID: alert.id).first)
            #expect(failed.status == "failed")
            #expect(failed.delivered == 0)
            #expect(gorush.tokens.isEmpty)
            // Sending again while it is still down changes nothing.
            #expect(try await Self.cli(app, ["alert", "send", String(alert.id), "--gorush-url", gorush.url], errors: errors) == 1)
            gorush.outage.withLock { $0 = 0 }
            #expect(try await Self.cli(app, ["alert", "send", String(alert.id), "--gorush-url", gorush.url], errors: errors) == 0)
            let sends = try await AlertStore(database: app.sidecar.database).sends.list(alertID: alert.id)
            #expect(sends.count == 1, "the failed send was resumed, not started anew")
            #expect(sends.first?.status == "done")
            #expect(sends.first?.delivered == 250)
            #expect(gorush.tokens.count == 250)
            #expect(Set(gorush.tokens).count == 250, "nobody pushed twice")
        }
    }

    @Test func aSendWhoseRunnerDiedIsResumedByARunningServer() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            let store = AlertStore(database: app.sidecar.database)
            let transport = try #require(app.sidecar.transport)
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let dying = AlertSender(
                store: store, transport: transport, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()), pageSize: 100)
            _ = try await dying.run(send, alert: alert, translations: [], stopAfterPages: 1)
            await app.sidecar.alertSends.resumeLapsed()
            #expect(try await store.sends.send(id: send.id)?.status == "running", "not while the lease holds")
            app.clock.advance(seconds: Double(AlertSendStore.defaultSendLeaseSeconds + 1))
            await app.sidecar.alertSends.resumeLapsed()
            #expect(try await app.eventually { try await store.sends.send(id: send.id)?.status == "done" })
            #expect(gorush.tokens.count == 250)
            #expect(Set(gorush.tokens).count == 250)
        }
    }

    @Test func aStopBetweenPagesFinishesThePageAndReleasesTheLease() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            let store = AlertStore(database: app.sidecar.database)
            let transport = try #require(app.sidecar.transport)
            let stop = StopSignal()
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let sender = AlertSender(
                store: store, transport: StoppingTransport(inner: transport, stop: stop), clock: app.clock,
                logger: Logger(level: .error, sink: MemorySink()), pageSize: 100, stop: stop)
            let paused = try await sender.run(send, alert: alert, translations: [])
            #expect(paused.status == "running")
            #expect(paused.targeted == 100, "the page under way was pushed and recorded")
            #expect(gorush.tokens.count == 100)
            // The lease was given back: another runner may take it at once.
            let (resumed, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let finished = try await AlertSender(
                store: store, transport: transport, clock: app.clock,
                logger: Logger(level: .error, sink: MemorySink()), pageSize: 100
            ).run(resumed, alert: alert, translations: [])
            #expect(finished.status == "done")
            #expect(gorush.tokens.count == 250)
            #expect(Set(gorush.tokens).count == 250, "no page pushed twice")
        }
    }

    /// A stop that comes while a page is being pushed (a slow gorush, a
    /// page of 250) records the chunks already sent, so the resumed send
    /// pushes only the rest: nobody gets the alert twice.
    @Test func aStopInsideAPageRecordsTheChunksSentSoNoneIsPushedAgain() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            let store = AlertStore(database: app.sidecar.database)
            let transport = try #require(app.sidecar.transport)
            let stop = StopSignal()
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            var sender = AlertSender(
                store: store, transport: StoppingTransport(inner: transport, stop: stop), clock: app.clock,
                logger: Logger(level: .error, sink: MemorySink()), pageSize: 250, stop: stop)
            sender.chunkSize = 100
            let paused = try await sender.run(send, alert: alert, translations: [])
            #expect(paused.status == "running")
            #expect(paused.targeted == 100 && paused.delivered == 100, "the chunk sent was recorded, the rest of the page left")
            #expect(gorush.tokens.count == 100)
            let (resumed, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            #expect(resumed.id == send.id && resumed.cursor == paused.cursor)
            var rest = AlertSender(
                store: store, transport: transport, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()), pageSize: 250)
            rest.chunkSize = 100
            let finished = try await rest.run(resumed, alert: alert, translations: [])
            #expect(finished.status == "done" && finished.targeted == 250 && finished.delivered == 250)
            #expect(gorush.tokens.count == 250)
            #expect(Set(gorush.tokens).count == 250, "no push sent twice")
        }
    }
}
