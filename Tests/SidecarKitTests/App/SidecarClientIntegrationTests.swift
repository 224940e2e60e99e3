import Core
import Foundation
import HTTPServer
import SidecarClient
import TestSupport
import Testing

@testable import SidecarKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 18: the client library against the real server.
@Suite("App: SidecarClient against the server")
struct SidecarClientIntegrationTests {
    /// Counts what reaches the server.
    final class Counting: RegistrationTransport, @unchecked Sendable {
        let inner: SidecarRegistrationTransport
        let lock = NSLock()
        var posts = 0
        init(_ inner: SidecarRegistrationTransport) { self.inner = inner }
        func register(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
            lock.withLock { posts += 1 }
            return await inner.register(registration)
        }
        func unregister(_ registration: RegistrationPolicy.Registration) async -> (status: Int?, retryAfter: String?) {
            await inner.unregister(registration)
        }
    }

    final class Storage: RegistrationStorage, @unchecked Sendable {
        let lock = NSLock()
        var value: (RegistrationPolicy.Registration, Date)?
        func load() -> (registration: RegistrationPolicy.Registration, date: Date)? { lock.withLock { value.map { ($0.0, $0.1) } } }
        func save(_ registration: RegistrationPolicy.Registration, date: Date) { lock.withLock { value = (registration, date) } }
        func clear() { lock.withLock { value = nil } }
    }

    @Test func aCorrectClientRegistersOnceAndNeverMeetsTheThrottle() async throws {
        try await TestSidecar.run({ $0.pushRegistrationLimit = 3 }) { app in
            let base = URL(string: "http://127.0.0.1:\(app.port)")!
            let transport = Counting(SidecarRegistrationTransport { SidecarAPI(baseURL: $0.sidecarURL, regionID: $0.regionID, appVersion: "test") })
            let queue = RegistrationQueue(transport: transport, storage: Storage())
            let desired = RegistrationPolicy.desired(
                .init(
                    authorization: .authorized, deviceToken: "01abff007f", regionID: 1, sidecarURL: base,
                    clientRegionID: 1, locale: "es-MX"))
            // Every trigger fires, many times: one POST reaches the server.
            for stamp in 1...10 { await queue.submit(desired, stamp: UInt64(stamp)) }
            #expect(transport.posts == 1)
            guard case .registered = await queue.status else {
                Issue.record("\(await queue.status)")
                return
            }
            let stored = try await app.pushStore.find(regionID: 1, token: "01abff007f")
            #expect(stored?.locale == "es")
            #expect(stored?.rawLocale == "es-MX")
        }
    }

    @Test func liveActivitiesAndTypedErrors() async throws {
        try await TestSidecar.run { app in
            let api = SidecarAPI(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, regionID: 1)
            let first = try await api.registerLiveActivity(
                activityID: "act-1", pushToken: "aa11bb22", stopID: "1_75403", routeShortName: "44",
                tripHeadsign: "Ballard")
            let rotated = try await api.registerLiveActivity(
                activityID: "act-1", pushToken: "cc33dd44", stopID: "1_75403", routeShortName: "44",
                tripHeadsign: "Ballard")
            #expect(rotated == first, "a rotated token keeps the subscription's URL")
            try await api.delete(first)
            try await api.delete(first)  // already gone: still fine
            let unknown = SidecarAPI(baseURL: api.baseURL, regionID: 4242)
            await #expect(throws: SidecarAPI.Failure.unknownRegion) {
                try await unknown.register(
                    RegistrationPolicy.Registration(
                        regionID: 4242, sidecarURL: api.baseURL, token: "01ab", operatingSystem: "ios",
                        locale: "en", testDevice: false, description: nil, sessionEpoch: 0))
            }
            do {
                try await api.register(
                    RegistrationPolicy.Registration(
                        regionID: 1, sidecarURL: api.baseURL, token: "01ab", operatingSystem: "ios",
                        locale: "en", testDevice: true, description: nil, sessionEpoch: 0))
                Issue.record("a test device without a description was accepted")
            } catch {
                guard case .invalid(let messages)? = error as? SidecarAPI.Failure else {
                    Issue.record("\(error)")
                    return
                }
                #expect(!messages.isEmpty)
            }
        }
    }
}
