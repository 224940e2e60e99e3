import Foundation
import SidecarClient
import Testing

/// Issue 18: the coordinator turns lifecycle events into desired states, and
/// with the queue gets the server where it should be.
@Suite("SidecarClient registration coordinator")
struct RegistrationCoordinatorTests {
    static let regionOne = URL(string: "https://sidecar-one.example.org")!
    static let regionTwo = URL(string: "https://sidecar-two.example.org")!

    static func make(
        _ transport: ScriptedTransport, storage: MemoryStorage = MemoryStorage(), clock: ManualRegistrationClock = ManualRegistrationClock()
    )
        -> RegistrationCoordinator
    {
        RegistrationCoordinator(
            queue: RegistrationQueue(transport: transport, storage: storage, clock: clock),
            inputs: .init(
                authorization: .notDetermined, deviceToken: nil, regionID: 1, sidecarURL: regionOne, clientRegionID: 1,
                locale: "en-US"))
    }

    /// One lifecycle event.
    enum Event: Sendable, CustomStringConvertible {
        case active(RegistrationPolicy.Inputs.Authorization)
        case token(String)
        case region(Int?, URL?, client: Int?)
        case testDevice(Bool, String?)
        case logout, login

        func apply(to coordinator: RegistrationCoordinator) {
            switch self {
            case .active(let authorization): coordinator.appBecameActive(authorization: authorization)
            case .token(let token): coordinator.receivedDeviceToken(token)
            case .region(let id, let url, let client): coordinator.regionChanged(regionID: id, sidecarURL: url, clientRegionID: client)
            case .testDevice(let wanted, let name): coordinator.testDeviceChanged(wanted: wanted, name: name)
            case .logout: coordinator.sessionEnded()
            case .login: coordinator.sessionStarted()
            }
        }

        var description: String {
            switch self {
            case .active(let authorization): "active(\(authorization))"
            case .token(let token): "token(\(token))"
            case .region(let id, let url, let client):
                "region(\(id.map(String.init) ?? "nil"), \(url?.host ?? "no sidecar"), client \(client.map(String.init) ?? "nil"))"
            case .testDevice(let wanted, let name): "testDevice(\(wanted), \(name ?? "nil"))"
            case .logout: "logout"
            case .login: "login"
            }
        }
    }

    /// What the server sees for a sequence of events, and where the queue ends.
    @Test(
        arguments: [
            // Triggers are liberal: launch, token, repeated foregrounds and a no-op region change send one POST.
            (
                [.active(.authorized), .token("aa01"), .active(.authorized), .region(1, regionOne, client: 1), .active(.authorized)],
                ["POST aa01"], "registered"
            ),
            // Provisional authorization counts as granted; no decision yet does not.
            ([.token("aa01"), .active(.notDetermined)], [], "unresolved"),
            ([.token("aa01"), .active(.provisional)], ["POST aa01"], "registered"),
            ([.token("aa01"), .active(.ephemeral)], ["POST aa01"], "registered"),
            // Refusing in Settings sends nothing (APNs cleans the token up).
            ([.active(.authorized), .token("aa01"), .active(.denied)], ["POST aa01"], "optedOut"),
            // A token rotation registers the new token and deletes the old one.
            ([.active(.authorized), .token("aa01"), .token("bb02")], ["POST aa01", "POST bb02", "DELETE aa01"], "registered"),
            // A switch to a region without a sidecar: the client still points at the old region (stale guard) and
            // nothing is posted anywhere; the old region's registration is deleted.
            ([.active(.authorized), .token("aa01"), .region(2, nil, client: 1)], ["POST aa01", "DELETE aa01"], "noSidecar"),
            // While the client lags behind a switch, nothing is sent; once it is rebuilt the new region registers.
            ([.active(.authorized), .token("aa01"), .region(2, regionTwo, client: 1)], ["POST aa01"], "unresolved"),
            (
                [.active(.authorized), .token("aa01"), .region(2, regionTwo, client: 1), .region(2, regionTwo, client: 2)],
                ["POST aa01", "POST aa01", "DELETE aa01"], "registered"
            ),
            // A test device needs a name: without one the registration stays a regular one (no new POST).
            ([.active(.authorized), .token("aa01"), .testDevice(true, nil)], ["POST aa01"], "registered"),
            ([.active(.authorized), .token("aa01"), .testDevice(true, "Aaron's iPhone")], ["POST aa01", "POST aa01"], "registered"),
            // A logout deletes the registration; while signed out nothing registers; a login registers again.
            ([.active(.authorized), .token("aa01"), .logout, .active(.authorized)], ["POST aa01", "DELETE aa01"], "withdrawn"),
            ([.active(.authorized), .token("aa01"), .logout, .login], ["POST aa01", "DELETE aa01", "POST aa01"], "registered"),
        ] as [([Event], [String], String)])
    func eventsBecomeTheFewestRequests(events: [Event], requests: [String], status: String) async {
        let transport = ScriptedTransport()
        let coordinator = Self.make(transport)
        for event in events {
            event.apply(to: coordinator)
            await coordinator.settle()  // each event lands before the next, as lifecycle events do
        }
        #expect(transport.log() == requests, "\(events)")
        #expect(Self.name(await coordinator.status) == status, "\(events)")
    }

    @Test func aLogoutRacingALoginNeverDeletesTheNewSession() async {
        // Both fired from synchronous code: their hand-offs may reach the queue in either order.
        for _ in 0..<50 {
            let transport = ScriptedTransport()
            let coordinator = Self.make(transport)
            coordinator.appBecameActive(authorization: .authorized)
            coordinator.receivedDeviceToken("aa01")
            await coordinator.settle()
            coordinator.sessionEnded()
            coordinator.sessionStarted()
            await coordinator.settle()
            guard case .registered(let registration) = await coordinator.status else {
                Issue.record("the new session was left unregistered: \(transport.log())")
                return
            }
            #expect(registration.sessionEpoch == 1)
            #expect(transport.log().last == "POST aa01", "the login's registration is the last word: \(transport.log())")
        }
        // Delivered reversed on purpose: the logout's older stamp is ignored.
        let transport = ScriptedTransport()
        let queue = RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: ManualRegistrationClock())
        let logout = RegistrationStamp.next(), login = RegistrationStamp.next()
        await queue.submit(RegistrationQueueTests.wanted("aa01"), stamp: login)
        await queue.withdraw(stamp: logout)
        #expect(transport.log() == ["POST aa01"])
        guard case .registered = await queue.status else {
            Issue.record("\(await queue.status)")
            return
        }
    }

    @Test func aTokenRotatingWhileTheFirstPostIsInFlightEndsOnTheNewToken() async {
        let transport = ScriptedTransport(holdFirst: true)
        let coordinator = Self.make(transport)
        coordinator.appBecameActive(authorization: .authorized)
        coordinator.receivedDeviceToken(Data([0x01, 0xAB, 0xFF, 0x00, 0x7F]))
        await transport.waitUntilHeld()
        coordinator.receivedDeviceToken(Data([0xBB, 0x02]))
        transport.release()
        await coordinator.settle()
        #expect(transport.log() == ["POST 01abff007f", "POST bb02", "DELETE 01abff007f"])
        guard case .registered(let registration) = await coordinator.status else {
            Issue.record("not registered")
            return
        }
        #expect(registration.token == "bb02")
    }

    @Test func aRelaunchWithTheSameStateSendsNothingUntilADayHasPassed() async {
        let storage = MemoryStorage(), clock = ManualRegistrationClock(), transport = ScriptedTransport()
        for _ in 0..<3 {  // three launches of the app, each firing every trigger
            let coordinator = Self.make(transport, storage: storage, clock: clock)
            coordinator.appBecameActive(authorization: .authorized)
            coordinator.receivedDeviceToken("aa01")
            coordinator.regionChanged(regionID: 1, sidecarURL: Self.regionOne, clientRegionID: 1)
            await coordinator.settle()
            clock.advance(3_600)
        }
        #expect(transport.log() == ["POST aa01"])
        clock.advance(86_400)
        let coordinator = Self.make(transport, storage: storage, clock: clock)
        coordinator.receivedDeviceToken("aa01")
        coordinator.appBecameActive(authorization: .authorized)
        await coordinator.settle()
        #expect(transport.log() == ["POST aa01", "POST aa01"], "a day old: refreshed")
    }

    @Test func throttledThenSuccessThroughTheCoordinator() async {
        let clock = ManualRegistrationClock()
        let transport = ScriptedTransport(answers: [(429, "20"), (nil, nil), (204, nil)])
        let coordinator = RegistrationCoordinator(
            queue: RegistrationQueue(transport: transport, storage: MemoryStorage(), clock: clock, jitter: { 0 }),
            inputs: .init(authorization: .authorized, deviceToken: "aa01", regionID: 1, sidecarURL: Self.regionOne, clientRegionID: 1, locale: "en"))
        coordinator.appBecameActive(authorization: .authorized)
        await coordinator.settle()
        #expect(clock.recorded() == [20, 2], "Retry-After first, then backoff from 2 s (jitter 0 halves 4 s)")
        #expect(Self.name(await coordinator.status) == "registered")
    }

    static func name(_ status: RegistrationQueue.Status) -> String {
        switch status {
        case .idle: "idle"
        case .registered: "registered"
        case .rejected: "rejected"
        case .retrying: "retrying"
        case .optedOut: "optedOut"
        case .noSidecar: "noSidecar"
        case .unresolved: "unresolved"
        case .withdrawn: "withdrawn"
        }
    }
}
