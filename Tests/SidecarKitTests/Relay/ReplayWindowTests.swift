import Core
import Crypto
import Testing

@testable import SidecarKit

/// The relay's replay window in memory: a send is new once within its
/// lifetime, forgotten after it, and never forgotten early to make room.
@Suite("Relay: replay window in memory")
struct ReplayWindowTests {
    @Test func aSendIsNewOnceWithinItsLifetime() {
        let window = ReplayWindow(capacity: 10, lifetimeMillis: 600_000)
        #expect(window.remember("v2\nserver\nGET /a", nowMillis: 0) == .new)
        #expect(window.remember("v2\nserver\nGET /a", nowMillis: 599_999) == .replay)
        #expect(window.remember("v2\nother\nGET /a", nowMillis: 1) == .new, "another server's send is another send")
        #expect(window.remember("v2\nserver\nGET /a", nowMillis: 600_000) == .new, "the window has passed")
        #expect(window.count == 2)
    }

    @Test func aSendSignedBeforeTheWindowBeganIsNotTaken() {
        let window = ReplayWindow(startedAt: 1_000_000)
        #expect(!window.covers(signedAt: 999_999), "captured before a restart: the window cannot tell")
        #expect(window.covers(signedAt: 1_000_000))
    }

    @Test func aFullWindowRefusesRatherThanForgetting() {
        let window = ReplayWindow(capacity: 3, lifetimeMillis: 1000)
        for index in 0..<3 { #expect(window.remember("send \(index)", nowMillis: 0) == .new) }
        #expect(window.remember("send 3", nowMillis: 500) == .full)
        #expect(window.remember("send 0", nowMillis: 500) == .replay, "still remembered: a replay is never let through")
        #expect(window.remember("send 3", nowMillis: 1000) == .new, "the oldest expired and made room")
        #expect(window.count == 1)
    }

    @Test func expiredEntriesLeaveInOrderOverManyCycles() {
        let window = ReplayWindow(capacity: 20_000, lifetimeMillis: 100)
        for index in 0..<50_000 {
            #expect(window.remember("send \(index)", nowMillis: EpochMillis(Int64(index))) == .new)
        }
        #expect(window.count == 100, "only the last 100 ms are held")
        #expect(window.remember("send 49999", nowMillis: 50_000) == .replay)
        #expect(window.remember("send 49899", nowMillis: 50_000) == .new)
    }
}

@Suite("Relay: servers' keys parsed once")
struct RelayKeyCacheTests {
    static let jwk = RelayProtocol.PublicJWK(x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")

    @Test func aKeyIsParsedOnceAndABadOneIsNeverKept() throws {
        let cache = RelayKeyCache(capacity: 2)
        let first = try cache.key(for: Self.jwk)
        #expect(try cache.key(for: Self.jwk) === first, "the same parsed key")
        let offCurve = RelayProtocol.PublicJWK(x: Self.jwk.x, y: "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc")
        #expect(throws: RelayProtocol.Failure.invalidRequest) { try cache.key(for: offCurve) }
        #expect(cache.count == 1)
    }

    @Test func aFullCacheStartsAgainRatherThanGrowing() throws {
        let cache = RelayKeyCache(capacity: 2)
        for _ in 0..<3 {
            let key = try PrivateKey.generateP256().publicKey()
            _ = try cache.key(for: RelayProtocol.PublicJWK(key))
        }
        #expect(cache.count == 1)
    }
}
