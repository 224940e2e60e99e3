import Core
import Foundation
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// A transport that holds every batch until it is let go: an APNs or
/// gorush that stopped answering.
final class StalledTransport: PushTransport, Sendable {
    let name = "apns"
    private let state = Locked<(waiting: Int, released: Bool, gates: [CheckedContinuation<Void, Never>])>((0, false, []))

    var waiting: Int { state.value.waiting }

    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        await withCheckedContinuation { (gate: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if state.released { return true }
                state.waiting += 1
                state.gates.append(gate)
                return false
            }
            if open { gate.resume() }
        }
        return messages.map { _ in .delivered }
    }

    /// The transport answers again: every held batch and every later one.
    func release() {
        let gates = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.released = true
            defer { state.gates = [] }
            return state.gates
        }
        gates.forEach { $0.resume() }
    }
}

/// Issue 39: a send that cannot progress says so. With the transport
/// silent for 30 s the send reads `stalled`, with why, in the admin API and
/// `alert show`; it keeps its lease meanwhile and goes on, to `done`, when
/// the transport answers.
@Suite("Alerts: a send that cannot progress says so")
struct AlertSendStallTests {
    @Test func aSilentTransportMarksTheSendStalledUntilItAnswers() async throws {
        try await TestSidecar.run({ $0.runsSendResumer = false }) { app in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles")
            try await app.registerDevices("stalled-device", count: 5)
            var alert = try await app.administration.create(regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start])
                .alert
            alert = try await app.administration.setPublished(id: alert.id, true).alert
            let store = AlertStore(database: app.sidecar.database)
            let transport = StalledTransport()
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let sender = AlertSender(
                store: store, transport: transport, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()), retry: .immediate)
            let sleepersBefore = app.clock.sleeperCount
            let running = Task { [alert] in try await sender.run(send, alert: alert, translations: []) }
            // The page is with the transport and the watch is waiting on the clock.
            #expect(try await app.eventually { transport.waiting == 1 && app.clock.sleeperCount > sleepersBefore })
            #expect(try await store.sends.send(id: send.id)?.shownStatus == "running")

            app.clock.advance(seconds: AlertSender.stallSeconds + 1)
            #expect(try await app.eventually { try await store.sends.send(id: send.id)?.stalledSince != nil })
            let stalled = try #require(try await store.sends.send(id: send.id))
            #expect(stalled.shownStatus == "stalled" && stalled.status == "running")
            #expect(stalled.lastError?.contains("no progress for 30 s") == true, "\(stalled.lastError ?? "")")
            guard case .object(let json) = AdminJSON.send(stalled) else { throw StallTestError.notAnObject }
            #expect(json["status"] == .string("stalled"))
            #expect(json["stalled_since"] != .null)
            let now = app.clock.now().epochMillis / 1000
            let view = try await AlertFeedView.read(store, regionID: 1, now: EpochSeconds(now))
            let shown = AlertCommands.describe(alert, translations: [], sends: [stalled], zone: .utc, view: view, now: EpochSeconds(now))
            #expect(shown.contains("send \(send.id) to all: stalled"), "\(shown)")

            transport.release()
            let finished = try await running.value
            #expect(finished.status == "done")
            let done = try #require(try await store.sends.send(id: send.id))
            #expect(done.stalledSince == nil && done.shownStatus == "done" && done.delivered == 5)
        }
    }

    enum StallTestError: Error { case notAnObject }
}
