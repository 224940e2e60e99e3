import Core
import Foundation
import Testing

/// Request bodies decode into `JSONValue`; the order the decoder tries the
/// kinds in is a cost, and must never change what a value becomes.
@Suite("JSONValue decoding")
struct JSONValueDecodingTests {
    static let cases: [(String, JSONValue)] = [
        ("null", .null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .integer(0)),
        ("-42", .integer(-42)),
        ("9223372036854775807", .integer(Int64.max)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        ("1.5", .double(1.5)),
        ("-0.25", .double(-0.25)),
        ("\"\"", .string("")),
        ("\"true\"", .string("true")),
        ("\"12\"", .string("12")),
        ("\"caf\\u00e9 \\ud83d\\ude8c\"", .string("café 🚌")),
        ("[]", .array([])),
        ("{}", .object([:])),
        ("[1, \"1\", true, null, 1.5, [], {}]", .array([.integer(1), .string("1"), .bool(true), .null, .double(1.5), .array([]), .object([:])])),
        (
            "{\"tokens\": [\"ab\", \"cd\"], \"push\": {\"aps\": {\"badge\": 3, \"sound\": null}}}",
            .object([
                "tokens": .array([.string("ab"), .string("cd")]),
                "push": .object(["aps": .object(["badge": .integer(3), "sound": .null])]),
            ])
        ),
    ]

    @Test(arguments: cases)
    func eachKindDecodesAsItself(_ text: String, _ expected: JSONValue) throws {
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) == expected)
    }

    @Test(arguments: ["", "{", "{\"a\" 1}", "tru", "\"unterminated", "01"])
    func malformedTextIsRefused(_ text: String) {
        #expect(throws: (any Error).self) { try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }
    }
}
