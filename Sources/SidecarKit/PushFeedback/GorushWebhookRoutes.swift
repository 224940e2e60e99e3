import Core
import FoundationEssentials
import HTTPServer
import Push

/// `POST /webhooks/gorush`: gorush's asynchronous delivery feedback (spec
/// §6.5). A token the provider calls dead leaves the alert audience at once.
/// Authenticated by `--gorush-webhook-secret` (Bearer); without a secret
/// the hook is rate limited instead.
struct GorushWebhookRoutes: Sendable {
    let registrations: PushRegistrationStore
    let liveActivities: LiveActivityStore
    let secret: String?
    let limiter: FixedWindowRateLimiter
    let logger: Logger

    var routes: [Route] {
        var middleware: [Middleware] = []
        if secret == nil { middleware.append(limiter.middleware(errorStyle: .simple)) }
        return [Route("POST", "/webhooks/gorush", bodyLimit: 4 << 20, middleware: middleware, parsesParameters: false, handler: feedback)]
    }

    /// The failed tokens in a gorush feedback body: one log entry, a list of
    /// them, or `{"logs": [...]}`.
    static func failures(_ body: [UInt8]) -> [(token: String, reason: String)] {
        guard let decoded = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else { return [] }
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
        if let secret {
            let presented = request.header("authorization").map { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : "" } ?? ""
            guard presented == secret else { return Response.json(401, ["error": "Unauthorized"]).adding(header: "WWW-Authenticate", "Bearer") }
        }
        var deleted = 0
        for failure in Self.failures(request.body) {
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
