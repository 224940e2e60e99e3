import Core
import Crypto
import FoundationEssentials
import HTTPServer
import Push

/// `POST /webhooks/gorush`: gorush's asynchronous delivery feedback (spec
/// §6.5). A token the provider calls dead leaves the alert audience at once.
/// The route exists only with `--gorush-webhook-secret` (without one, anyone
/// could delete any rider's registration by naming its token): gorush must
/// send it as a Bearer token. Each client is rate limited as well.
struct GorushWebhookRoutes: Sendable {
    let registrations: PushRegistrationStore
    let liveActivities: LiveActivityStore
    let secret: String?
    let limiter: FixedWindowRateLimiter
    let logger: Logger

    var routes: [Route] {
        guard secret != nil else { return [] }
        return [
            Route(
                "POST", "/webhooks/gorush", bodyLimit: 4 << 20, access: .secret("gorush webhook"), throttle: limiter,
                parsesParameters: false, handler: feedback)
        ]
    }

    /// The failed tokens in a gorush feedback body: one log entry, a list of
    /// them, or `{"logs": [...]}`; nil when the body is not JSON.
    static func failures(_ body: [UInt8]) -> [(token: String, reason: String)]? {
        guard let decoded = try? JSONValue(parsing: body) else { return nil }
        var entries: [JSONValue] = []
        switch decoded {
        case .array(let list): entries = list
        case .object(let object):
            if case .array(let logs)? = object["logs"] { entries = logs } else { entries = [decoded] }
        default: break
        }
        return entries.compactMap { entry in
            guard case .object(let fields) = entry, let token = fields["token"]?.scalarText?.presence else { return nil }
            return (token, fields["error"]?.scalarText ?? fields["message"]?.scalarText ?? "")
        }
    }

    func feedback(_ request: Request) async -> Response {
        let presented = request.header("authorization").map { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : "" } ?? ""
        guard let secret, SecureCompare.equal(presented, secret) else {
            return Response.json(401, ["error": "Unauthorized"]).adding(header: "WWW-Authenticate", "Bearer")
        }
        guard let failures = Self.failures(request.body) else {
            return Response.json(400, ["error": "Bad Request: the body is not JSON"])
        }
        var deleted = 0
        for failure in failures.prefix(10_000) {
            guard case .terminal = PushOutcome.classify(failure: failure.reason) else { continue }
            do {
                deleted += try await registrations.deleteEverywhere(token: failure.token)
                deleted += try await liveActivities.deleteByPushToken(failure.token)
            } catch {
                logger.error("gorush feedback could not delete a registration", [("error", "\(error)")])
                return Response.storageUnavailable(.simple, summary: "Unavailable")
            }
        }
        if deleted > 0 { logger.info("push feedback removed dead tokens", [("source", "gorush"), ("deleted", String(deleted))]) }
        return .json(200, ["deleted": deleted])
    }
}

extension GorushWebhookRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            registrations: context.stores.pushRegistrations, liveActivities: context.stores.liveActivities,
            secret: context.configuration.gorushWebhookSecret, limiter: context.limiter("webhook", limit: context.configuration.webhookLimit),
            logger: context.logger)
    }
}
