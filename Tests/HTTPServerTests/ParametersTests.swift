import Testing

@testable import HTTPServer

@Suite("Strict parameter parsing (spec §2.2)")
struct ParametersTests {
    @Test(
        "percent-decoding",
        arguments: [
            ("a%20b", "a b"), ("a+b", "a b"), ("%E2%9C%93", "✓"), ("plain", "plain"), ("%41%62", "Ab"), ("", ""),
        ])
    func decodes(input: String, expected: String) throws {
        #expect(try PercentEncoding.decode(input.utf8, plusAsSpace: true) == expected)
    }

    @Test(
        "bad percent-encoding and bad UTF-8 are refused",
        arguments: [
            ("%zz", ParameterError.invalidPercentEncoding), ("%4", .invalidPercentEncoding), ("abc%", .invalidPercentEncoding),
            ("%FF", .invalidUTF8), ("%C3%28", .invalidUTF8), ("%ED%A0%80", .invalidUTF8),
        ])
    func refuses(input: String, expected: ParameterError) {
        #expect(throws: expected) { try PercentEncoding.decode(input.utf8, plusAsSpace: true) }
    }

    @Test func formPairsSkipEmptyNamesAndKeepTheLastValue() throws {
        let pairs = try Parameters.parseURLEncoded("a=1&&=x&b&a=2&c=".utf8, limit: 10)
        #expect(pairs.map(\.0) == ["a", "b", "a", "c"])
        var request = Request(method: "POST", rawPath: "/", rawQuery: "a=1&&=x&b&a=2&c=")
        try request.parseParameters(limit: 10)
        #expect(request.parameters["a"] == "2")
        #expect(request.parameters["b"] == "")
        #expect(request.parameters.contains("c"))
    }

    @Test(
        "form pairs: the same read in place or from bytes that are not contiguous",
        arguments: [
            ("a=b=c", ["a=b=c"]), ("=x&&y", ["y="]), ("a+b=c%20d&", ["a b=c d"]), ("", []), ("&", []), ("&&&=", []),
            ("x=&x=2", ["x=", "x=2"]), ("%C3%A9t%C3%A9=%E2%9C%93", ["été=✓"]), ("a=1&b", ["a=1", "b="]),
        ])
    func formPairs(input: String, expected: [String]) throws {
        let inPlace = try Parameters.parseURLEncoded(Array(input.utf8), limit: 10)
        let copied = try Parameters.parseURLEncoded(input.utf8.lazy.map { $0 }, limit: 10)
        #expect(inPlace.map { "\($0.0)=\($0.1)" } == expected)
        #expect(copied.map { "\($0.0)=\($0.1)" } == expected)
    }

    @Test(
        "form refusals: the first bad pair in order, read in place or copied",
        arguments: [
            ("a=%zz", ParameterError.invalidPercentEncoding), ("%zz=1", .invalidPercentEncoding), ("a=1&b=2&c=3", .tooManyParameters(limit: 2)),
            ("a=%FF", .invalidUTF8), ("a=%00", .nulCharacter), ("a=1&b=2&%zz=3", .invalidPercentEncoding),
        ])
    func formRefusals(input: String, expected: ParameterError) {
        #expect(throws: expected) { try Parameters.parseURLEncoded(Array(input.utf8), limit: 2) }
        #expect(throws: expected) { try Parameters.parseURLEncoded(input.utf8.lazy.map { $0 }, limit: 2) }
    }

    @Test func tooManyParametersIsRefused() {
        let query = (0..<1001).map { "p\($0)=1" }.joined(separator: "&")
        var request = Request(method: "GET", rawPath: "/", rawQuery: query)
        #expect(throws: ParameterError.tooManyParameters(limit: 1000)) { try request.parseParameters(limit: 1000) }
    }

    @Test func bodyWinsOverQueryAndJSONNullIsAbsent() throws {
        var request = Request(
            method: "POST", rawPath: "/", rawQuery: "token=query&locale=fr&kept=1",
            headers: [("content-type", "application/json; charset=utf-8")],
            body: Array(#"{"token":"body","locale":null,"n":300.0,"d":300.5,"i":5,"flag":true,"nested":{"a":1}}"#.utf8))
        try request.parseParameters(limit: 100)
        #expect(request.parameters["token"] == "body")
        #expect(request.parameters["locale"] == "fr", "a JSON null does not erase the query value: it is absent")
        #expect(request.parameters["kept"] == "1")
        #expect(request.parameters["n"] == "300")
        #expect(request.parameters["d"] == "300.5")
        #expect(request.parameters["i"] == "5")
        #expect(request.parameters["flag"] == "true")
        #expect(request.parameters["nested"] == nil)
        #expect(request.parameters.value("nested") == .object(["a": .integer(1)]))
    }

    @Test(
        "content types",
        arguments: [
            ("application/x-www-form-urlencoded", "token=a%20b", "a b"),
            ("application/json", #"{"token":"j"}"#, "j"),
            ("application/vnd.api+json", #"{"token":"j"}"#, "j"),
            ("APPLICATION/JSON", #"{"token":"j"}"#, "j"),
        ])
    func readsBodies(contentType: String, body: String, expected: String) throws {
        var request = Request(method: "POST", rawPath: "/", headers: [("content-type", contentType)], body: Array(body.utf8))
        try request.parseParameters(limit: 100)
        #expect(request.parameters["token"] == expected)
    }

    @Test func bodyWithoutContentTypeIsAFormUnlessItIsAJSONObject() throws {
        var form = Request(method: "POST", rawPath: "/", body: Array("token=f".utf8))
        try form.parseParameters(limit: 10)
        #expect(form.parameters["token"] == "f")
        var json = Request(method: "POST", rawPath: "/", body: Array(#"  {"token":"j"}"#.utf8))
        try json.parseParameters(limit: 10)
        #expect(json.parameters["token"] == "j")
    }

    @Test(
        "malformed JSON bodies",
        arguments: [
            (#"{"token": "#, "invalidJSON"), ("[1,2]", "ok"), (#""text""#, "ok"),
            (String(repeating: "[", count: 100_000), "jsonTooDeep"), ("{\"a\":\"\u{FFFD}\"}", "ok"),
        ])
    func refusesMalformedJSON(body: String, kind: String) {
        var request = Request(method: "POST", rawPath: "/", headers: [("content-type", "application/json")], body: Array(body.utf8))
        do {
            try request.parseParameters(limit: 10)
            #expect(kind == "ok")
        } catch {
            switch error {
            case .invalidJSON: #expect(kind == "invalidJSON")
            case .jsonNotAnObject: #expect(kind == "jsonNotAnObject")
            case .jsonTooDeep: #expect(kind == "jsonTooDeep")
            default: Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func invalidUTF8InAJSONBodyIsRefused() {
        var request = Request(
            method: "POST", rawPath: "/", headers: [("content-type", "application/json")],
            body: Array(#"{"token":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8))
        #expect(throws: ParameterError.self) { try request.parseParameters(limit: 10) }
    }

    @Test func unsupportedContentTypeWithABodyIs415() {
        var request = Request(method: "POST", rawPath: "/", headers: [("content-type", "text/plain")], body: Array(#"{"token":"x"}"#.utf8))
        #expect(throws: ParameterError.unsupportedContentType("text/plain")) { try request.parseParameters(limit: 10) }
        #expect(ParameterError.unsupportedContentType("text/plain").status == 422)
        var empty = Request(method: "DELETE", rawPath: "/", rawQuery: "token=t", headers: [("content-type", "text/plain")])
        #expect(throws: Never.self) { try empty.parseParameters(limit: 10) }
        #expect(empty.parameters["token"] == "t")
    }
}
