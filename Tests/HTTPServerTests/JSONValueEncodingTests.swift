import Core
import Foundation
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
    @Test func randomTreesGiveFoundationsBytes() {
        var generator = SplitMix(seed: 0x5eed)
        func scalar() -> JSONValue {
            switch generator.next() % 6 {
            case 0: return .null
            case 1: return .bool(generator.next() % 2 == 0)
            case 2: return .integer(Int64(bitPattern: generator.next()) >> Int64(generator.next() % 60))
            case 3: return .double(Double(bitPattern: generator.next() & 0x7FEF_FFFF_FFFF_FFFF) * (generator.next() % 2 == 0 ? 1 : -1))
            case 4: return .double(Double(Int64(generator.next() % 100_000)) / 8)
            default:
                let alphabet = Array("aZ09 _-\"\\/\n\t\u{1}é€😀".unicodeScalars)
                return .string(
                    String(
                        String.UnicodeScalarView((0..<(generator.next() % 12)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }))
                )
            }
        }
        func tree(_ depth: Int) -> JSONValue {
            guard depth > 0, generator.next() % 3 != 0 else { return scalar() }
            let count = Int(generator.next() % 5)
            if generator.next() % 2 == 0 { return .array((0..<count).map { _ in tree(depth - 1) }) }
            var members: [String: JSONValue] = [:]
            for _ in 0..<count {
                guard case .string(let key) = scalar() else { continue }
                members[key] = tree(depth - 1)
            }
            return .object(members)
        }
        for _ in 0..<2_000 {
            let value = tree(4)
            #expect(value.encoded() == Self.foundation(value), "\(value)")
        }
    }
}

/// A small deterministic generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
