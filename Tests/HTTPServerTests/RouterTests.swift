import Testing

@testable import HTTPServer

@Suite("Router")
struct RouterTests {
    func router() -> Router {
        var router = Router()
        router.add(
            Route("GET", "/api/v1/regions/:region/alerts", suffixes: [".pb", ".pbtext"]) { request in
                .json(200, ["region": request.pathParameters["region"] ?? "", "format": request.pathParameters["format"] ?? ""])
            })
        router.add(
            Route("POST", "/api/v1/survey_responses", errorStyle: .legacy) { request in
                .json(201, ["user": request.parameters["user_identifier"] ?? ""])
            })
        router.add(
            Route("DELETE", "/api/v2/regions/:region/alarms/:token") { request in
                .json(200, ["token": request.pathParameters["token"] ?? ""])
            })
        return router
    }

    func body(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test(
        "paths, suffixes and trailing slashes",
        arguments: [
            ("GET", "/api/v1/regions/1/alerts", 200, #"{"format":"","region":"1"}"#),
            ("GET", "/api/v1/regions/1-puget-sound/alerts.pb", 200, #"{"format":".pb","region":"1-puget-sound"}"#),
            ("GET", "/api/v1/regions/1/alerts.pbtext", 200, #"{"format":".pbtext","region":"1"}"#),
            ("GET", "/api/v1/regions/1/alerts/", 200, #"{"format":"","region":"1"}"#),
            ("GET", "/api/v1/regions/1/alerts.xml", 404, #"{"error":"Not Found"}"#),
            ("POST", "/api/v1/survey_responses/", 201, #"{"user":""}"#),
            ("DELETE", "/api/v2/regions/1/alarms/abc", 200, #"{"token":"abc"}"#),
            ("GET", "/nope", 404, #"{"error":"Not Found"}"#),
            ("GET", "/", 404, #"{"error":"Not Found"}"#),
            ("PUT", "/api/v1/survey_responses", 405, #"{"error":"Method Not Allowed"}"#),
        ])
    func routes(method: String, path: String, status: Int, expected: String) async {
        let response = await router().respond(to: Request(method: method, rawPath: path))
        #expect(response.status == status)
        #expect(body(response) == expected)
    }

    @Test func percentEncodedSegmentsAreDecodedStrictly() async {
        let ok = await router().respond(to: Request(method: "DELETE", rawPath: "/api/v2/regions/1/alarms/a%2Fb"))
        #expect(body(ok) == #"{"token":"a/b"}"#)
        let bad = await router().respond(to: Request(method: "DELETE", rawPath: "/api/v2/regions/1/alarms/%zz"))
        #expect(bad.status == 400)
        let badUTF8 = await router().respond(to: Request(method: "DELETE", rawPath: "/api/v2/regions/1/alarms/%FF"))
        #expect(badUTF8.status == 400)
    }

    @Test func parameterErrorsUseTheRoutesErrorShape() async {
        let response = await router().respond(
            to: Request(
                method: "POST", rawPath: "/api/v1/survey_responses",
                headers: [("content-type", "application/json")], body: Array("{".utf8)))
        #expect(response.status == 422)
        #expect(body(response).hasPrefix(#"{"errors":["#))
    }

    @Test func errorStyles() {
        #expect(
            String(decoding: ErrorStyle.messages.response(status: 422, error: "E", messages: ["m"]).body, as: UTF8.self)
                == #"{"error":"E","messages":["m"]}"#)
        #expect(
            String(decoding: ErrorStyle.legacy.response(status: 422, error: "E", messages: ["m"]).body, as: UTF8.self)
                == #"{"errors":["m"]}"#)
        #expect(
            String(decoding: ErrorStyle.simple.response(status: 400, error: "E", messages: []).body, as: UTF8.self)
                == #"{"error":"E"}"#)
    }
}

@Suite("Fixed-window rate limiter")
struct RateLimiterTests {
    final class TestTime: @unchecked Sendable {
        // Only mutated by the test between calls.
        var seconds: Double = 1_000_020
    }

    @Test func countsPerKeyPerWindowAndSaysWhenToRetry() {
        let time = TestTime()
        let limiter = FixedWindowRateLimiter(limit: 3, windowSeconds: 60) { time.seconds }
        #expect((1...3).map { _ in limiter.hit("a") } == [.allowed, .allowed, .allowed])
        // 1_000_020 is a multiple of 60: the window has just begun.
        #expect(limiter.hit("a") == .limited(retryAfter: 60))
        #expect(limiter.hit("b") == .allowed)
        time.seconds += 59.5
        #expect(limiter.hit("a") == .limited(retryAfter: 1))
        time.seconds += 0.5
        #expect(limiter.hit("a") == .allowed, "a new window starts at the next multiple of 60 s")
    }

    @Test func aHeavierRequestCountsAsSeveralHits() {
        let time = TestTime()
        let limiter = FixedWindowRateLimiter(limit: 5, windowSeconds: 60) { time.seconds }
        #expect(limiter.hit("a", cost: 3) == .allowed)
        #expect(limiter.hit("a", cost: 2) == .allowed, "3 + 2 is the limit")
        #expect(limiter.hit("a", cost: 1) == .limited(retryAfter: 60))
        #expect(limiter.hit("b", cost: 6) == .limited(retryAfter: 60), "one request over the limit alone")
        #expect(limiter.hit("c", cost: 0) == .allowed, "a request always counts at least once")
        #expect(limiter.hit("c", cost: 4) == .allowed)
        #expect(limiter.hit("c") == .limited(retryAfter: 60))
        time.seconds += 60
        #expect(limiter.hit("a", cost: 5) == .allowed, "a new window")
    }

    @Test func retryAfterCountsToTheEndOfTheWindow() {
        let time = TestTime()
        time.seconds = 120 + 45.2
        let limiter = FixedWindowRateLimiter(limit: 1, windowSeconds: 60) { time.seconds }
        #expect(limiter.hit("x") == .allowed)
        #expect(limiter.hit("x") == .limited(retryAfter: 15))
    }

    @Test func zeroDisables() {
        let limiter = FixedWindowRateLimiter(limit: 0, windowSeconds: 60) { 0 }
        #expect((1...100).allSatisfy { _ in limiter.hit("a") == .allowed })
    }
}
