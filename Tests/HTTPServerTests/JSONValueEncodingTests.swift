import Core
import Foundation
import TestSupport
import Testing

/// `JSONValue.encoded()` writes JSON itself (push payloads and Live Activity
/// states are encoded on every push); it must give the bytes Foundation's
/// encoder gives with sorted keys and unescaped slashes, which payloads,
/// ETags and tests were built on.
@Suite("JSONValue encoding")
struct JSONValueEncodingTests {
    static func foundation(_ value: JSONValue) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array("null".utf8)
    }

    static let cases: [JSONValue] = [
        .null, .bool(true), .bool(false), .integer(0), .integer(-42), .integer(Int64.max), .integer(Int64.min),
        .double(1.0), .double(0.1), .double(1e20), .double(1.5e-7), .double(-0.0), .double(123456789.125), .double(1e15),
        .double(1e16), .double(5e-324), .double(0.30000000000000004), .double(-2.5), .double(.infinity), .double(.nan),
        .string(""), .string("plain"), .string("\u{1}\n\t\r\u{8}\u{c}\"\\/é\u{7f}\u{2028}😀"), .string("\u{0}\u{1f}"),
        .array([]), .object([:]),
        .object(["b": .integer(1), "a": .integer(2), "B": .integer(3), "é": .integer(4), "aa": .integer(5), "a_b": .null, "a-b": .bool(true)]),
        .object(["aps": .object(["alert": .object(["title": .string("Route 44"), "body": .string("Detour")]), "sound": .string("default")])]),
        .array([.double(.infinity), .integer(1)]),
        .object(["x": .array([.object(["y": .double(.nan)])])]),
    ]

    @Test(arguments: cases)
    func givesFoundationsBytes(_ value: JSONValue) {
        #expect(value.encoded() == Self.foundation(value), "\(value)")
    }

    /// Random trees (a fixed seed, so a failure repeats).
    @Test func randomTreesGiveFoundationsBytes() async {
        let mismatches = await RandomJSON.mismatches(seed: 0x5eed, count: 2_000) { value in
            value.encoded() == Self.foundation(value) ? [] : ["\(value)"]
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
    }
}
