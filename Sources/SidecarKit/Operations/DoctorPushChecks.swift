import Core
import Database
import FoundationEssentials
import HTTPClient
import OBA
import Push

#if canImport(Glibc)
import Glibc
#endif

/// `sidecar doctor`'s push checks: the configured transport, reached or
/// its credentials loaded.
extension Doctor {
    // MARK: Push

    static func pushChecks(_ configuration: SidecarConfiguration, offline: Bool, http: HTTPClient) async -> [Check] {
        var checks: [Check] = []
        let direct = configuration.apnsKeyFile != nil || configuration.fcmServiceAccount != nil
        let gorush = configuration.gorushURL != nil && configuration.pushTransport != .direct
        switch configuration.pushTransport {
        case .none:
            checks.append(.warning("push", "--push-transport none: alarms and alerts are never pushed"))
        case .log:
            checks.append(.warning("push", "--push-transport log: pushes are written to the log, not delivered"))
        case .automatic where !gorush && !direct:
            checks.append(
                .warning(
                    "push", "no push transport: alarms never fire and alerts are not pushed",
                    fix: "--gorush-url URL, or --apns-key-file/--apns-key-id/--apns-team-id and --fcm-service-account"))
        default: break
        }
        if gorush, let base = configuration.gorushURL {
            if offline {
                checks.append(.skipped("gorush", base))
            } else {
                checks.append(await gorushCheck(base, http: http))
            }
        }
        if configuration.pushTransport == .relay {
            checks.append(await relayCheck(configuration, offline: offline, http: http))
        }
        if configuration.apnsKeyFile != nil, configuration.pushTransport != .gorush, configuration.pushTransport != .relay {
            checks.append(await apnsCheck(configuration, offline: offline))
        }
        if configuration.fcmServiceAccount != nil, configuration.pushTransport != .gorush, configuration.pushTransport != .relay {
            checks.append(await fcmCheck(configuration, offline: offline))
        }
        return checks
    }

    static func gorushCheck(_ base: String, http: HTTPClient) async -> Check {
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        do {
            var response = try await http.send(HTTPClientRequest(url: trimmed + "/healthz", upstream: "gorush"))
            if response.status == 404 { response = try await http.send(HTTPClientRequest(url: trimmed + "/api/stat/go", upstream: "gorush")) }
            guard response.status == 200 else {
                return .failed("gorush", "\(trimmed) answered HTTP \(response.status)", fix: "check --gorush-url and that gorush is running")
            }
            return .ok("gorush", "\(trimmed) is up")
        } catch {
            return .failed("gorush", "\(trimmed): \(error)", fix: "check --gorush-url and that gorush is running")
        }
    }

    /// The relay key (without creating it) and, unless offline, the relay's `/healthz`.
    static func relayCheck(_ configuration: SidecarConfiguration, offline: Bool, http: HTTPClient) async -> Check {
        guard let url = configuration.relayURL else {
            return .failed("relay", "--push-transport relay without --relay-url", fix: "--relay-url https://relay.example.org")
        }
        var identity = "key \(configuration.relayKeyFile) will be created at the first start"
        do {
            if let existing = try RelayIdentity.load(path: configuration.relayKeyFile) { identity = "serverId \(existing.serverID)" }
        } catch {
            return .failed("relay", error.description, fix: "--relay-key-file must be the PEM P-256 key this server was registered with")
        }
        if offline { return .ok("relay", "\(url) (\(identity)); not contacted (--offline)") }
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        do {
            let response = try await http.send(HTTPClientRequest(url: base + "/healthz", upstream: "relay"))
            guard response.status == 200 else {
                return .failed("relay", "\(base)/healthz answered HTTP \(response.status)", fix: "check --relay-url and the relay's status")
            }
            return .ok("relay", "\(base) is up (\(identity))")
        } catch {
            return .failed("relay", "\(base): \(error)", fix: "check --relay-url, DNS and the firewall")
        }
    }

    /// Signs a provider token; unless offline, asks APNs about a token that
    /// cannot exist: `BadDeviceToken` means the key, team and topic were
    /// accepted; `InvalidProviderToken` and the like mean they were not.
    static func apnsCheck(_ configuration: SidecarConfiguration, offline: Bool) async -> Check {
        let apns: APNsTransport
        do {
            guard let built = try Sidecar.apnsTransport(configuration) else { return .skipped("apns", "no key") }
            apns = built
            _ = try apns.providerToken()
        } catch let error as StartupError {
            return .failed(
                "apns", error.description, fix: "--apns-key-file must be the .p8 key from Apple, with its --apns-key-id and --apns-team-id")
        } catch {
            return .failed("apns", "cannot sign a provider token: \(error)", fix: "--apns-key-file must be the .p8 (ES256) key from Apple")
        }
        let signed = "signed an ES256 provider token (key \(configuration.apnsKeyID ?? "?"), team \(configuration.apnsTeamID ?? "?"))"
        if offline { return .ok("apns", signed + "; connection not tried (--offline)") }
        let probe = PushMessage(token: String(repeating: "0", count: 64), platform: .ios, title: "sidecar doctor", body: "credential check")
        let outcome = await apns.send([probe]).first ?? .transient(reason: "no answer")
        switch outcome {
        case .delivered, .terminal:
            return .ok("apns", signed + "; \(configuration.apnsURL) accepted it for topic \(configuration.apnsTopic)")
        case .transient(let reason), .rejected(let reason):
            let credentials = ["InvalidProviderToken", "ExpiredProviderToken", "MissingProviderToken", "TopicDisallowed", "BadTopic", "Forbidden"]
            let fix =
                credentials.contains(where: reason.contains)
                ? "check the key id, team id and --apns-topic (the app's bundle id) belong together in Apple's developer account"
                : "check that this host can reach \(configuration.apnsURL) on port 443"
            return .failed("apns", "\(configuration.apnsURL): \(reason)", fix: fix)
        }
    }

    /// Parses the service account; unless offline, exchanges it for an access token.
    static func fcmCheck(_ configuration: SidecarConfiguration, offline: Bool) async -> Check {
        let fcm: FCMTransport
        do {
            guard let built = try Sidecar.fcmTransport(configuration) else { return .skipped("fcm", "no service account") }
            fcm = built
        } catch {
            return .failed("fcm", error.description, fix: "--fcm-service-account must be the JSON key file of a Firebase service account")
        }
        let account = "service account \(fcm.account.clientEmail) (project \(fcm.account.projectID))"
        if offline { return .ok("fcm", account + " read; token exchange not tried (--offline)") }
        do {
            _ = try await fcm.token()
            return .ok("fcm", account + ": \(fcm.account.tokenURI) issued an access token")
        } catch {
            return .failed(
                "fcm", "\(fcm.account.tokenURI): \(error)",
                fix: "the key may be revoked or the clock wrong; create a new key for the service account in Firebase")
        }
    }
}
