import Foundation
import HTTPServer
import TestSupport
import Testing

/// A fixture that is not there fails the test that needs it, naming the
/// file, rather than reaching a fake server as an empty body.
@Suite("Support: shared fixtures")
struct SharedFixtureTests {
    static let absent = "ios/no-such-fixture.json"

    @Test func aMissingFixtureThrowsNamingItsFullPath() throws {
        let missing = SharedFixtures.path(Self.absent)
        #expect(missing.hasPrefix("/") && missing.hasSuffix("/Tests/Fixtures/ios/no-such-fixture.json"))
        #expect(throws: MissingFixture(path: missing)) { try SharedFixtures.bytes(Self.absent) }
        #expect(throws: MissingFixture(path: missing)) { try SharedFixtures.requirePath(Self.absent) }
        #expect(throws: MissingFixture(path: missing), "a fake built with it fails at setup") {
            try LoadedFixtures(["ios/regions-v3.json", Self.absent])
        }
        #expect(MissingFixture(path: missing).description.contains(missing))
        #expect(try SharedFixtures.requirePath("ios/regions-v3.json") == SharedFixtures.path("ios/regions-v3.json"))
    }

    @Test func aFakeAskedForAFixtureItWasNotBuiltWithAnswersA500NamingIt() throws {
        let fixtures = try LoadedFixtures(["ios/regions-v3.json"])
        let served = fixtures.response("ios/regions-v3.json")
        #expect(served.status == 200)
        #expect(served.body == (try SharedFixtures.bytes("ios/regions-v3.json")))
        let refused = fixtures.response(Self.absent)
        #expect(refused.status == 500)
        #expect(String(decoding: refused.body, as: UTF8.self).contains(SharedFixtures.path(Self.absent)), "the body names the missing file")
    }
}
