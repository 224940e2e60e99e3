import Foundation
import TestSupport
import Testing

@testable import Core

/// `JSONValue(parsing:)` reads documents with Jansson and must give exactly
/// what Foundation's decoder gives: the same value, or a refusal where it
/// refuses. Every body, feed and answer the server reads goes through it.
@Suite("JSON parsing")
struct JSONParsingTests {
    static func foundation(_ bytes: [UInt8]) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) }
    static func parsed(_ bytes: [UInt8]) -> JSONValue? { try? JSONValue(parsing: bytes) }

    static func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    /// Documents where two readers of JSON are known to part ways.
    static let edgeCases: [String] = [
        "", " ", "null", " true ", "false", "0", "-0", "-0.0", "0.0", "1.0", "1e2", "1E2", "1.5e1", "2.5", "-2.5", "0.1",
        "1e400", "-1e400", "1e-400", "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "0.30000000000000004",
        "9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "123456789012345678901234567890", "100000000000000000000.5", "12345678901234567.0", "1e15", "1e16", "-1.5E-7",
        "01", "+1", ".5", "1.", "-", "1e", "NaN", "Infinity", "-Infinity", "0x10", "tru", "nul", "True",
        #""""#, #""a""#, #""\u0000""#, #""a\u0000b""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\ud83d\ude8c""#,
        #""\uD83D\uDE8C""#, #""\u00e9""#, #""\u00E9""#, #""\/\b\f\n\r\t\"\\""#, #""\x""#, #""\u12""#, #""\'""#, "\"\u{1}\"", "\"\t\"",
        "\"\u{7f}\"", "\"é😀\"", "\"unterminated", #""a"b"#,
        "[]", "{}", "[1,]", "[1 2]", "[,1]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{1:2}", "{'a':1}", "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"b\":{\"a\":2,\"a\":3}}", "{\"a\\u0000\":1}", "{\"\":1}", "{\"é\":1,\"e\\u0301\":2}", "// c\n{}", "/* c */{}",
        "{} {}", "{}x", "{}\u{0}", "[1]]", "\n\r\t {\"a\" : [ 1 , 2.5 , \"x\" , null , true ] }\n", "\u{c}{}", "\u{a0}{}",
        nested(510), nested(511), nested(512), nested(513), nested(600), nested(3000),
        "{\"tokens\":[\"ab\",\"cd\"],\"push\":{\"aps\":{\"alert\":{\"title\":\"Route 44\"},\"badge\":3,\"sound\":null}},\"n\":-1.25}",
    ]

    /// Byte sequences that are not valid UTF-8, or are only in a BOM.
    static let byteCases: [[UInt8]] = [
        [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x28, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22], [0xEF, 0xBB, 0xBF, 0x7B, 0x7D], [0xFE, 0xFF, 0x00, 0x31],
        [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], [0x00], [0x31, 0x00],
    ]

    @Test(arguments: edgeCases)
    func givesFoundationsAnswer(_ text: String) {
        let bytes = Array(text.utf8)
        #expect(Self.parsed(bytes) == Self.foundation(bytes), "\(text.prefix(80))")
    }

    @Test(arguments: byteCases)
    func givesFoundationsAnswerForBytes(_ bytes: [UInt8]) {
        #expect(Self.parsed(bytes) == Self.foundation(bytes), "\(bytes)")
    }

    /// A refused document throws Foundation's error, which request
    /// validation turns into its message.
    @Test func refusalCarriesFoundationsError() {
        #expect(throws: DecodingError.self) { try JSONValue(parsing: Array("{\"a\" 1}".utf8)) }
    }

    /// The documents the server reads every second are read by Jansson
    /// alone (if they fell back to Foundation, parsing would cost what it did).
    @Test(arguments: [
        #"{"results":[{"ok":true,"token":"00ab"},{"drop":true,"ok":false,"token":"00ac"},{"error":"invalid_token","ok":false,"token":"x"}]}"#,
        #"{"tokens":["ab","cd"],"push":{"aps":{"alert":{"title":"Route 44"},"badge":3}},"publicKeyJwk":{"kty":"EC","crv":"P-256"}}"#,
        #"{"user_push_id":"abc","push_provider":"fcm","lat":47.6062,"lon":-122.3321,"n":-7}"#, "[]", "\"text\"", "12",
    ])
    func commonDocumentsNeedNoFallback(_ text: String) throws {
        let decided = Array(text.utf8).withUnsafeBytes { JSONValue.parsedByJansson($0) }
        #expect(decided != nil)
        #expect(decided == Self.foundation(Array(text.utf8)))
    }

    /// Random documents, compact and spaced out (a fixed seed, so a failure repeats).
    @Test func randomDocumentsGiveFoundationsValues() async {
        let mismatches = await RandomJSON.mismatches(seed: 0x0DEC_0DE5, count: 2_000) { value in
            [value.encoded(), value.prettyEncoded()].compactMap { bytes in
                let expected = Self.foundation(bytes)
                return expected == nil || Self.parsed(bytes) != expected ? String(decoding: bytes, as: UTF8.self) : nil
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
    }
}
