import Core
import Testing

@testable import SidecarKit

/// Key texts in the Go reference sidecar's formats (its `internal/apikey`
/// tests and `bearer_test.go`: the prefix is cut at the first underscore
/// each time, the region is a plain decimal, anything else is refused).
@Suite("API key formats")
struct ApiKeyFormatTests {
    static let secret = String(repeating: "A", count: 43)

    @Test(arguments: [
        ("obask_1_" + secret, ApiKeyFormat.Claim.regionKey(1)),
        ("obask_0_" + secret, .regionKey(0)),
        ("obask_12_abc_def-ghi", .regionKey(12)),  // the secret may hold _ and -
        ("obasp_" + secret, .principal),
        ("obasp_x_y", .principal),
        ("sidecar_" + secret, .sidecar),
        ("sidecar_sp_" + secret, .sidecar),
    ])
    func aCredentialClaimsWhatItsPrefixSays(text: String, claim: ApiKeyFormat.Claim) {
        #expect(ApiKeyFormat.parse(text) == claim)
    }

    @Test(arguments: [
        "", "obask", "obask_", "obask_1", "obask_1_", "obask__x", "obask_01_x", "obask_-1_x", "obask_+1_x", "obask_1.0_x",
        "obask_abc_x", "obask_99999999999999999999999_x", "obasp_", "obasp", "sk_live_abc", "sidecar_", "Bearer obasp_x",
        "obask_1_" + String(repeating: "x", count: 121),
    ])
    func textThatIsNoCredentialIsRefusedBeforeItIsHashed(text: String) {
        #expect(ApiKeyFormat.parse(text) == nil, "\(text)")
    }

    @Test func aNewKeyIsWrittenInTheFormItsPowersHaveThere() {
        #expect(ApiKeyFormat.mint(secret: Self.secret, principal: false, regions: [7], isAdmin: false) == "obask_7_" + Self.secret)
        #expect(ApiKeyFormat.mint(secret: Self.secret, principal: true, regions: nil, isAdmin: false) == "obasp_" + Self.secret)
        // No form in the reference: several regions, every region, an admin key.
        #expect(ApiKeyFormat.mint(secret: Self.secret, principal: false, regions: [1, 2], isAdmin: false) == "sidecar_" + Self.secret)
        #expect(ApiKeyFormat.mint(secret: Self.secret, principal: false, regions: nil, isAdmin: false) == "sidecar_" + Self.secret)
        #expect(ApiKeyFormat.mint(secret: Self.secret, principal: false, regions: [1], isAdmin: true) == "sidecar_" + Self.secret)
        // Listings show the prefix and 6 characters of the secret, never more.
        #expect(ApiKeyFormat.listedPrefix("obask_12_abcdefghij") == "obask_12_abcdef")
        #expect(ApiKeyFormat.listedPrefix("obasp_abcdefghij") == "obasp_abcdef")
        #expect(ApiKeyFormat.listedPrefix("sidecar_sp_abcdefghij") == "sidecar_sp_abcdef")
        #expect(ApiKeyFormat.listedPrefix("sidecar_abcdefghij") == "sidecar_abcdef")
    }

    /// The reference's edge: unchanged at +59 minutes, written at exactly +60.
    static let lastUses: [(last: Int64?, now: Int64, due: Bool)] = [
        (nil, 0, true), (1000, 1000 + 59 * 60, false), (1000, 1000 + 3600, true), (1000, 1000 + 7200, true),
    ]

    @Test(arguments: lastUses)
    func aKeysLastUseIsWrittenAtMostHourly(use: (last: Int64?, now: Int64, due: Bool)) {
        #expect(ApiKeyStore.lastUseIsDue(use.last.map { EpochSeconds($0) }, now: EpochSeconds(use.now)) == use.due)
    }
}
