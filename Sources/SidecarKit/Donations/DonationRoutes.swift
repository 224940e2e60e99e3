import Core
import FoundationEssentials
import HTTPClient
import HTTPServer
import Synchronization

/// A donation request (spec §11): the raw JSON body, whatever its content type.
struct DonationRequest: Sendable, Equatable {
    var amountInCents: Int64
    var recurring: Bool
    var name: String?
    var email: String
    var testMode: Bool

    /// Reads the body; nil with a reason when it cannot be a donation.
    static func parse(_ body: [UInt8]) -> Result<DonationRequest, ValidationFailure> {
        guard let object = try? Parameters.parseJSONObject(body) else { return .failure(ValidationFailure(["The body must be a JSON object"])) }
        let amount: Int64?
        switch object["donation_amount_in_cents"] {
        case .integer(let value)?: amount = value
        case .string(let text)?: amount = Int64(text.trimmingWhitespace())
        case .double(let value)? where value.rounded() == value && value < 1e12: amount = Int64(value)
        default: amount = nil
        }
        guard let amount, amount >= 1 else { return .failure(ValidationFailure(["donation_amount_in_cents must be a whole number of at least 1"])) }
        guard let email = object["email"]?.scalarText?.presence, email.contains("@") else {
            return .failure(ValidationFailure(["email is required"]))
        }
        let tooLong = FieldLimits.check([("email", email, FieldLimits.email), ("name", object["name"]?.scalarText, FieldLimits.name)])
        guard tooLong.isEmpty else { return .failure(ValidationFailure(tooLong)) }
        return .success(
            DonationRequest(
                amountInCents: amount, recurring: object["donation_frequency"]?.scalarText == "recurring",
                name: object["name"]?.scalarText?.presence, email: email,
                testMode: object["test_mode"]?.scalarText == "1"))
    }
}

/// Stripe's HTTP API (form-encoded requests, bearer secret key).
final class StripeClient: Sendable {
    let http: HTTPClient
    let baseURL: String
    /// Used when no `--stripe-product` is configured: created once per process.
    let createdProduct = Mutex<String?>(nil)

    struct Failure: Error { let detail: String }

    init(http: HTTPClient, baseURL: String) {
        self.http = http
        self.baseURL = baseURL
    }

    static func form(_ fields: [(String, String)]) -> [UInt8] {
        Array(fields.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&").utf8)
    }

    static func escape(_ text: String) -> String { PercentEncoding.encode(text) }

    func call(_ method: String, _ path: String, key: String, fields: [(String, String)] = [], extraHeaders: [(String, String)] = []) async throws
        -> [String: JSONValue]
    {
        var url = (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + path
        var body: [UInt8] = []
        if method == "GET" {
            if !fields.isEmpty { url += "?" + String(decoding: Self.form(fields), as: UTF8.self) }
        } else {
            body = Self.form(fields)
        }
        let response = try await http.send(
            HTTPClientRequest(
                method: method, url: url,
                headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/x-www-form-urlencoded")] + extraHeaders,
                body: body, upstream: "stripe"))
        guard (200..<300).contains(response.status), case .object(let object)? = try? JSONValue(parsing: response.body)
        else {
            throw Failure(detail: "\(method) \(path) answered HTTP \(response.status)")
        }
        return object
    }

    /// Finds the customer with this email, or creates one.
    func customer(email: String, name: String?, key: String) async throws -> String {
        let found = try await call("GET", "/v1/customers", key: key, fields: [("email", email), ("limit", "1")])
        if case .array(let list)? = found["data"], case .object(let first)? = list.first, let id = first["id"]?.scalarText { return id }
        var fields = [("email", email)]
        if let name { fields.append(("name", name)) }
        guard let id = try await call("POST", "/v1/customers", key: key, fields: fields)["id"]?.scalarText else {
            throw Failure(detail: "no customer id")
        }
        return id
    }

    func product(configured: String?, key: String) async throws -> String {
        if let configured { return configured }
        if let cached = createdProduct.withLock({ $0 }) { return cached }
        guard let id = try await call("POST", "/v1/products", key: key, fields: [("name", "OneBusAway donation")])["id"]?.scalarText else {
            throw Failure(detail: "no product id")
        }
        createdProduct.withLock { $0 = id }
        return id
    }
}

/// `POST /api/v1/payment_intents` (spec §11). Optional: without a Stripe key
/// the route answers 404, so the apps hide donations.
struct DonationRoutes: Sendable {
    let stripe: StripeClient
    let liveKey: String?
    let testKey: String?
    let product: String?
    let limiter: FixedWindowRateLimiter
    let logger: Logger

    /// The Stripe-Version ephemeral keys are created for (PaymentSheet needs one).
    static let ephemeralKeyVersion = "2024-06-20"

    var routes: [Route] {
        [Route("POST", "/api/v1/payment_intents", suffixes: [".json"], throttle: limiter, parsesParameters: false, handler: donate)]
    }

    func donate(_ request: Request) async -> Response {
        let donation: DonationRequest
        switch DonationRequest.parse(request.body) {
        case .failure(let failure):
            guard liveKey != nil || testKey != nil else { return .json(404, ["error": "Not Found"]) }
            return .json(400, ["error": failure.messages.joined(separator: "; ")])
        case .success(let value):
            donation = value
        }
        guard let key = donation.testMode ? testKey : liveKey else { return .json(404, ["error": "Not Found"]) }
        let correlation = UUID().uuidString.lowercased()
        do {
            let customer = try await stripe.customer(email: donation.email, name: donation.name, key: key)
            if donation.recurring {
                let productID = try await stripe.product(configured: product, key: key)
                let subscription = try await stripe.call(
                    "POST", "/v1/subscriptions", key: key,
                    fields: [
                        ("customer", customer), ("items[0][price_data][currency]", "usd"), ("items[0][price_data][product]", productID),
                        ("items[0][price_data][unit_amount]", String(donation.amountInCents)), ("items[0][price_data][recurring][interval]", "month"),
                        ("payment_behavior", "default_incomplete"), ("payment_settings[save_default_payment_method]", "on_subscription"),
                        ("expand[0]", "latest_invoice.payment_intent"),
                    ])
                guard case .object(let invoice)? = subscription["latest_invoice"], case .object(let intent)? = invoice["payment_intent"],
                    let secret = intent["client_secret"]?.scalarText
                else { throw StripeClient.Failure(detail: "subscription without a payment intent") }
                let ephemeral = try await stripe.call(
                    "POST", "/v1/ephemeral_keys", key: key, fields: [("customer", customer)],
                    extraHeaders: [("Stripe-Version", Self.ephemeralKeyVersion)])
                guard let ephemeralSecret = ephemeral["secret"]?.scalarText else {
                    throw StripeClient.Failure(detail: "ephemeral key without a secret")
                }
                return .json(200, ["client_secret": secret, "customer_id": customer, "ephemeral_key": ephemeralSecret, "id": correlation])
            }
            let intent = try await stripe.call(
                "POST", "/v1/payment_intents", key: key,
                fields: [
                    ("amount", String(donation.amountInCents)), ("currency", "usd"), ("automatic_payment_methods[enabled]", "true"),
                    ("receipt_email", donation.email), ("customer", customer),
                ])
            guard let secret = intent["client_secret"]?.scalarText else { throw StripeClient.Failure(detail: "payment intent without a secret") }
            return .json(200, ["client_secret": secret, "id": correlation])
        } catch {
            // Never the email or the key; the failing call is enough to diagnose.
            logger.error("donation failed at Stripe", [("reason", (error as? StripeClient.Failure)?.detail ?? "transfer failed")])
            return .empty(500)
        }
    }
}

extension DonationRoutes: Feature {
    init(_ context: FeatureContext) {
        let configuration = context.configuration
        self.init(
            stripe: StripeClient(http: context.upstream, baseURL: configuration.stripeURL), liveKey: configuration.stripeSecretKey,
            testKey: configuration.stripeTestSecretKey, product: configuration.stripeProduct,
            limiter: context.limiter("donations", limit: configuration.donationLimit), logger: context.logger)
    }
}
