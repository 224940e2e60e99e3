import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// A Stripe stand-in that records every request (method, path, form fields,
/// headers) and answers like Stripe's API.
final class FakeStripe: Sendable {
    struct Call: Sendable {
        var method: String
        var path: String
        var fields: [String: String]
        var authorization: String
        var stripeVersion: String?
    }
    let calls = Locked<[Call]>([])
    let existingCustomers = Locked<[String: String]>([:])
    let failPath = Locked<String?>(nil)
    let server: HTTPServer

    init() throws {
        var router = Router()
        let calls = self.calls
        let customers = self.existingCustomers
        let failPath = self.failPath
        @Sendable func record(_ request: Request) -> Call {
            var fields: [String: String] = [:]
            for (name, value) in (try? Parameters.parseURLEncoded(request.body.isEmpty ? Array(request.rawQuery.utf8) : request.body, limit: 100))
                ?? []
            {
                fields[name] = value
            }
            let call = Call(
                method: request.method, path: request.rawPath, fields: fields, authorization: request.header("authorization") ?? "",
                stripeVersion: request.header("stripe-version"))
            calls.withLock { $0.append(call) }
            return call
        }
        @Sendable func answer(_ call: Call, _ json: String) -> Response {
            if failPath.value == call.path { return .json(402, ["error": ["message": "Your card was declined."]]) }
            return .bytes(200, contentType: "application/json", Array(json.utf8))
        }
        router.add(
            Route("GET", "/v1/customers", parsesParameters: false) { request in
                let call = record(request)
                let id = customers.value[call.fields["email"] ?? ""]
                return answer(call, id.map { #"{"object":"list","data":[{"id":"\#($0)"}]}"# } ?? #"{"object":"list","data":[]}"#)
            })
        router.add(Route("POST", "/v1/customers", parsesParameters: false) { request in answer(record(request), #"{"id":"cus_new"}"#) })
        router.add(Route("POST", "/v1/products", parsesParameters: false) { request in answer(record(request), #"{"id":"prod_made"}"#) })
        router.add(
            Route("POST", "/v1/payment_intents", parsesParameters: false) { request in
                answer(record(request), #"{"id":"pi_1","client_secret":"pi_1_secret_abc"}"#)
            })
        router.add(
            Route("POST", "/v1/subscriptions", parsesParameters: false) { request in
                answer(
                    record(request),
                    #"{"id":"sub_1","latest_invoice":{"id":"in_1","payment_intent":{"id":"pi_2","client_secret":"pi_2_secret_def"}}}"#)
            })
        router.add(
            Route("POST", "/v1/ephemeral_keys", parsesParameters: false) { request in
                answer(record(request), #"{"id":"ephkey_1","secret":"ek_secret"}"#)
            })
        server = try startLocalServer(router)
    }

    var url: String { "http://127.0.0.1:\(server.port)" }
}

@Suite("Donations: payment intents (spec §11)")
struct DonationTests {
    static let path = "/api/v1/payment_intents"

    static func run(keys: Bool = true, _ body: (TestSidecar, FakeStripe) async throws -> Void) async throws {
        let stripe = try FakeStripe()
        try await TestSidecar.run({
            $0.stripeURL = stripe.url
            if keys {
                $0.stripeSecretKey = "sk_live_x"
                $0.stripeTestSecretKey = "sk_test_y"
            }
        }) { app in try await body(app, stripe) }
        await stripe.server.shutdown()
    }

    /// The iOS app sends the JSON body with no Content-Type at all.
    static func donate(_ app: TestSidecar, _ json: String) async throws -> RawResponse {
        try await app.send("POST", path, body: Array(json.utf8))
    }

    @Test func oneTimeDonationFindsOrCreatesTheCustomer() async throws {
        try await Self.run { (app: TestSidecar, stripe: FakeStripe) async throws in
            let response = try await Self.donate(
                app,
                #"{"donation_amount_in_cents": 500, "donation_frequency": "onetime", "name": "Jane Rider", "email": "jane@example.com", "test_mode": "0"}"#
            )
            #expect(response.status == 200)
            #expect(response.json?["client_secret"] as? String == "pi_1_secret_abc")
            let id = try #require(response.json?["id"] as? String)
            #expect(UUID(uuidString: id) != nil)
            #expect(Set(response.json?.keys.map { $0 } ?? []) == ["client_secret", "id"])
            let calls = stripe.calls.value
            #expect(calls.map { "\($0.method) \($0.path)" } == ["GET /v1/customers", "POST /v1/customers", "POST /v1/payment_intents"])
            #expect(calls.allSatisfy { $0.authorization == "Bearer sk_live_x" })
            #expect(calls[0].fields["email"] == "jane@example.com")
            #expect(calls[1].fields == ["email": "jane@example.com", "name": "Jane Rider"])
            #expect(
                calls[2].fields == [
                    "amount": "500", "currency": "usd", "automatic_payment_methods[enabled]": "true",
                    "receipt_email": "jane@example.com", "customer": "cus_new",
                ])
            stripe.existingCustomers.withLock { $0["jane@example.com"] = "cus_known" }
            _ = try await Self.donate(app, #"{"donation_amount_in_cents": 1000, "email": "jane@example.com"}"#)
            #expect(stripe.calls.value.suffix(2).map(\.path) == ["/v1/customers", "/v1/payment_intents"], "found, not created")
            #expect(stripe.calls.value.last?.fields["customer"] == "cus_known")
            #expect(!app.log.lines.contains { $0.contains("jane@example.com") || $0.contains("sk_live") })
        }
    }

    @Test func recurringDonationIsAMonthlySubscriptionWithAnEphemeralKey() async throws {
        try await Self.run { (app: TestSidecar, stripe: FakeStripe) async throws in
            let response = try await app.send(
                "POST", Self.path, headers: ["Content-Type": "application/json"],
                body: Array(
                    #"{"donation_amount_in_cents": "1500", "donation_frequency": "recurring", "email": "sam@example.com", "test_mode": "1"}"#.utf8))
            #expect(response.status == 200)
            #expect(Set(response.json?.keys.map { $0 } ?? []) == ["client_secret", "customer_id", "ephemeral_key", "id"])
            #expect(response.json?["client_secret"] as? String == "pi_2_secret_def")
            #expect(response.json?["customer_id"] as? String == "cus_new")
            #expect(response.json?["ephemeral_key"] as? String == "ek_secret")
            let calls = stripe.calls.value
            #expect(calls.allSatisfy { $0.authorization == "Bearer sk_test_y" }, "test_mode 1 uses the test key")
            let subscription = try #require(calls.first { $0.path == "/v1/subscriptions" })
            #expect(subscription.fields["customer"] == "cus_new")
            #expect(subscription.fields["items[0][price_data][unit_amount]"] == "1500")
            #expect(subscription.fields["items[0][price_data][recurring][interval]"] == "month")
            #expect(subscription.fields["items[0][price_data][product]"] == "prod_made")
            #expect(subscription.fields["payment_behavior"] == "default_incomplete")
            #expect(subscription.fields["expand[0]"] == "latest_invoice.payment_intent")
            let ephemeral = try #require(calls.first { $0.path == "/v1/ephemeral_keys" })
            #expect(ephemeral.fields == ["customer": "cus_new"])
            #expect(ephemeral.stripeVersion == DonationRoutes.ephemeralKeyVersion)
        }
    }

    @Test func stripeErrorsAreABodyless500AndBadBodiesA400() async throws {
        try await Self.run { (app: TestSidecar, stripe: FakeStripe) async throws in
            stripe.failPath.withLock { $0 = "/v1/payment_intents" }
            let failed = try await Self.donate(app, #"{"donation_amount_in_cents": 500, "email": "a@example.com"}"#)
            #expect(failed.status == 500)
            #expect(failed.body.isEmpty)
            #expect(try await Self.donate(app, "{not json").status == 400)
            #expect(try await Self.donate(app, #"{"donation_amount_in_cents": 0, "email": "a@example.com"}"#).status == 400)
            #expect(try await Self.donate(app, #"{"donation_amount_in_cents": 100}"#).status == 400)
        }
    }

    @Test func withoutAKeyTheRouteIs404() async throws {
        try await Self.run(keys: false) { (app: TestSidecar, stripe: FakeStripe) async throws in
            #expect(try await Self.donate(app, #"{"donation_amount_in_cents": 500, "email": "a@example.com"}"#).status == 404)
            #expect(stripe.calls.value.isEmpty)
        }
    }
}
