import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// `--trusted-proxies` and `--client-ip-header`: which address a request
/// counts under when it arrives through load balancers, and that nobody
/// else's headers are believed.
@Suite("Client address behind trusted proxies")
struct TrustedProxiesTests {
    static let proxies = try! TrustedProxies("10.0.0.0/8, 192.0.2.1, 2001:db8:aa::/48, 127.0.0.1")

    static let cases: [(name: String, peer: String, forwardedFor: [String], client: String)] = [
        ("an untrusted peer's header is ignored", "198.51.100.9", ["203.0.113.7"], "198.51.100.9"),
        ("an untrusted peer cannot pick an address either", "198.51.100.9", ["10.1.1.1"], "198.51.100.9"),
        ("a trusted peer without the header is the client", "10.0.0.5", [], "10.0.0.5"),
        ("one trusted proxy", "10.0.0.5", ["203.0.113.7"], "203.0.113.7"),
        ("a chain of trusted proxies", "10.0.0.5", ["203.0.113.7, 10.2.0.1, 192.0.2.1"], "203.0.113.7"),
        ("a spoofed entry left of the real client is ignored", "10.0.0.5", ["1.1.1.1, 203.0.113.7"], "203.0.113.7"),
        ("a spoofed trusted address left of the client is ignored", "10.0.0.5", ["10.9.9.9, 203.0.113.7"], "203.0.113.7"),
        ("several header lines read as one list", "10.0.0.5", ["1.1.1.1", "203.0.113.7, 10.2.0.1"], "203.0.113.7"),
        ("every entry trusted: the left-most proxy", "10.0.0.5", ["10.3.0.1, 10.2.0.1"], "10.3.0.1"),
        ("IPv6 client through IPv6 proxies", "2001:db8:aa::1", ["2001:db8:ff::7, 2001:db8:aa::2"], "2001:db8:ff::7"),
        ("IPv6 written in full is normalized", "10.0.0.5", ["2001:0db8:00ff:0000:0000:0000:0000:0007"], "2001:db8:ff::7"),
        ("an IPv4-mapped peer matches an IPv4 range", "::ffff:10.0.0.5", ["203.0.113.7"], "203.0.113.7"),
        ("an IPv4-mapped entry is read as IPv4", "10.0.0.5", ["::ffff:203.0.113.7"], "203.0.113.7"),
        ("a port after IPv4 is dropped", "10.0.0.5", ["203.0.113.7:4711"], "203.0.113.7"),
        ("a bracketed IPv6 with a port", "10.0.0.5", ["[2001:db8:ff::7]:443"], "2001:db8:ff::7"),
        ("whitespace around entries", "10.0.0.5", ["  203.0.113.7 ,\t10.2.0.1 "], "203.0.113.7"),
        ("a host name is malformed: the peer", "10.0.0.5", ["evil.example"], "10.0.0.5"),
        ("garbage right of the client: the peer", "10.0.0.5", ["203.0.113.7, <script>"], "10.0.0.5"),
        ("an empty entry: the peer", "10.0.0.5", ["203.0.113.7, "], "10.0.0.5"),
        ("an empty header: the peer", "10.0.0.5", [""], "10.0.0.5"),
        ("an address out of range: the peer", "10.0.0.5", ["256.1.1.1"], "10.0.0.5"),
        ("a zone id is malformed: the peer", "10.0.0.5", ["fe80::1%eth0"], "10.0.0.5"),
        ("the unknown peer stays unknown", "unknown", ["203.0.113.7"], "unknown"),
    ]

    @Test(arguments: cases)
    func clientAddressFromXForwardedFor(_ example: (name: String, peer: String, forwardedFor: [String], client: String)) {
        let headers = example.forwardedFor.map { (name: "x-forwarded-for", value: $0) } + [(name: "host", value: "x")]
        #expect(Self.proxies.clientAddress(peer: example.peer, headers: headers) == example.client, "\(example.name)")
    }

    @Test func aLongForgedChainIsReadOnlyFromTheRight() {
        let forged = Array(repeating: "10.1.1.1", count: 1000).joined(separator: ",")
        let headers = [(name: "x-forwarded-for", value: "203.0.113.7," + forged)]
        // Past the examined chain every entry was trusted: the left-most examined.
        #expect(Self.proxies.clientAddress(peer: "10.0.0.5", headers: headers) == "10.1.1.1")
        let honest = [(name: "x-forwarded-for", value: forged + ",203.0.113.7")]
        #expect(Self.proxies.clientAddress(peer: "10.0.0.5", headers: honest) == "203.0.113.7")
    }

    static let headerCases: [(name: String, peer: String, values: [String], client: String)] = [
        ("the header's single value", "10.0.0.5", ["203.0.113.7"], "203.0.113.7"),
        ("IPv6 value", "10.0.0.5", ["2001:db8:ff::7"], "2001:db8:ff::7"),
        ("from an untrusted peer it is ignored", "198.51.100.9", ["203.0.113.7"], "198.51.100.9"),
        ("two header lines are refused", "10.0.0.5", ["203.0.113.7", "203.0.113.8"], "10.0.0.5"),
        ("a list is refused", "10.0.0.5", ["203.0.113.7, 203.0.113.8"], "10.0.0.5"),
        ("garbage is refused", "10.0.0.5", ["not an address"], "10.0.0.5"),
        ("missing: the peer", "10.0.0.5", [], "10.0.0.5"),
    ]

    @Test(arguments: headerCases)
    func clientAddressFromAClientIPHeader(_ example: (name: String, peer: String, values: [String], client: String)) {
        let proxies = Self.proxies.readingClient(from: "CF-Connecting-IP")
        // X-Forwarded-For is not read once a client-IP header is configured.
        let headers = example.values.map { (name: "cf-connecting-ip", value: $0) } + [(name: "x-forwarded-for", value: "192.0.2.200")]
        #expect(proxies.clientAddress(peer: example.peer, headers: headers) == example.client, "\(example.name)")
    }

    @Test(arguments: ["", " , ", "10.0.0.0/33", "2001:db8::/129", "10.0.0.0/-1", "10.0.0.0/x", "example.org", "10.0.0", "10.0.0.0/8/8"])
    func listsThatCannotBeUsedAreRefused(_ list: String) {
        #expect(throws: TrustedProxies.ParseError.self) { try TrustedProxies(list) }
    }

    @Test func rangesMatchOnTheirPrefixOnly() throws {
        let proxies = try TrustedProxies("172.16.0.0/12,::1,2001:db8::/127")
        #expect(proxies.contains("172.31.255.255") && !proxies.contains("172.32.0.0") && !proxies.contains("172.15.255.255"))
        #expect(proxies.contains("::1") && !proxies.contains("::2"))
        #expect(proxies.contains("2001:db8::1") && !proxies.contains("2001:db8::2"))
        #expect(!proxies.contains("not-an-address"))
        let everything = try TrustedProxies("0.0.0.0/0")
        #expect(everything.contains("203.0.113.7") && everything.contains("::ffff:1.2.3.4") && !everything.contains("2001:db8::1"))
    }

    @Test func overRealSocketsOnlyTheTrustedPeerIsBelieved() async throws {
        var router = Router()
        router.add(Route("GET", "/who") { request in .json(200, ["client": request.clientAddress, "key": request.clientKey]) })
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.trustedProxies = try TrustedProxies("127.0.0.1")
        configuration.connectionsPerClient = 2
        let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error, sink: MemorySink()))
        let port = try server.start()
        func who(from source: String, _ forwardedFor: String) async throws -> String {
            let response = try await RawHTTPClient.send(
                port: port, RawHTTPClient.request("GET", "/who", headers: ["X-Forwarded-For": forwardedFor]),
                source: source)
            return String(decoding: response.body, as: UTF8.self)
        }
        #expect(try await who(from: "127.0.0.1", "2001:db8:1:2:3:4:5:6").contains("\"key\":\"2001:db8:1:2::/64\""))
        #expect(try await who(from: "127.0.0.1", "203.0.113.7").contains("\"client\":\"203.0.113.7\""))
        #expect(try await who(from: "127.0.0.2", "203.0.113.7").contains("\"client\":\"127.0.0.2\""))
        // The proxy carries many clients: the per-client connection cap
        // does not apply to it, but still applies to everyone else.
        let proxySockets = try (0..<5).map { _ in try RawSocket(port: port, source: "127.0.0.1") }
        let proxied = try await who(from: "127.0.0.1", "203.0.113.8")
        #expect(proxied.contains("203.0.113.8"))
        _ = proxySockets
        await server.shutdown(grace: .seconds(2))
    }
}
