import FoundationEssentials
import HTTPServer

/// The flags of what the server reaches (OneBusAway, weather, Stripe), how
/// it pushes, the limits on riders' requests, and the relay's own.
enum PushFlags {
    /// OneBusAway, weather and donations upstream.
    static let upstreamsFlags: [Flag] = [
        Flag(
            name: "oba-api-key", valueName: "KEY", help: "OneBusAway REST API key sent to every region's server (prefer --oba-api-key-file)",
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.obaAPIKey = value.presence
        },
        Flag(
            name: "oba-region-api-keys", valueName: "ID=KEY,...",
            help: "Per-region OneBusAway API keys, e.g. 1=KEY1,3=KEY3, overriding --oba-api-key (prefer --oba-region-api-keys-file)",
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            var keys: [Int: String] = [:]
            for pair in value.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingWhitespace() }
                guard parts.count == 2, let id = Int(parts[0]), id >= 0, !parts[1].isEmpty else {
                    throw CommandLineError("--oba-region-api-keys wants ID=KEY pairs separated by commas, got '\(pair)'")
                }
                keys[id] = parts[1]
            }
            config.obaRegionAPIKeys = keys
        },
        Flag(
            name: "pirate-weather-key", valueName: "KEY",
            help: "Pirate Weather API key; without it, weather answers 403 (prefer --pirate-weather-key-file)", commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.pirateWeatherKey = value.presence
        },
        Flag(name: "pirate-weather-url", valueName: "URL", help: "Pirate Weather base URL", shown: { $0.pirateWeatherURL }, commands: ["serve"]) {
            config, value throws(CommandLineError) in
            config.pirateWeatherURL = try Flag.httpURL(value, flag: "pirate-weather-url")
        },
        Flag(
            name: "stripe-secret-key", valueName: "KEY",
            help: "Stripe secret key for donations; without one, donations answer 404 (prefer --stripe-secret-key-file)", commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.stripeSecretKey = value.presence
        },
        Flag(
            name: "stripe-test-secret-key", valueName: "KEY",
            help: "Stripe test-mode secret key, used when an app sends test_mode \"1\" (prefer --stripe-test-secret-key-file)", commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.stripeTestSecretKey = value.presence
        },
        Flag(name: "stripe-url", valueName: "URL", help: "Stripe API base URL", shown: { $0.stripeURL }, commands: ["serve"]) {
            config, value throws(CommandLineError) in
            config.stripeURL = try Flag.httpURL(value, flag: "stripe-url")
        },
        Flag(
            name: "stripe-product", valueName: "ID", help: "Stripe product for monthly donations",
            shown: { $0.stripeProduct ?? "created on first use" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.stripeProduct = value.presence
        },
    ]

    /// Push delivery and the background loops that push.
    static let pushFlags: [Flag] = [
        Flag(
            name: "push-transport", valueName: "NAME",
            help: "auto (gorush with --gorush-url, else direct with an APNs key or FCM account, else none), gorush, direct, relay, log or none",
            shown: { $0.pushTransport.rawValue }, commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            guard let choice = SidecarConfiguration.PushTransportChoice(rawValue: value.lowercased()) else {
                throw CommandLineError("--push-transport must be auto, gorush, direct, relay, log or none, got \(value)")
            }
            config.pushTransport = choice
        },
        Flag(
            name: "gorush-url", valueName: "URL", help: "Base URL of a gorush push gateway, e.g. http://127.0.0.1:8088",
            commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.gorushURL = try Flag.httpURL(value, flag: "gorush-url")
        },
        Flag(
            name: "gorush-webhook-secret", valueName: "SECRET",
            help:
                "Bearer secret gorush's feedback hook sends to /webhooks/gorush; without it the route does not exist (prefer --gorush-webhook-secret-file)",
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.gorushWebhookSecret = value.presence
        },
        Flag(
            name: "apns-key-file", valueName: "PATH", help: "APNs auth key (.p8) for direct delivery", commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.apnsKeyFile = value.presence
        },
        Flag(name: "apns-key-id", valueName: "ID", help: "The .p8 key's id (10 characters)", commands: ["serve", "alert send", "push test"]) {
            config, value throws(CommandLineError) in
            config.apnsKeyID = value.presence
        },
        Flag(name: "apns-team-id", valueName: "ID", help: "The Apple developer team id", commands: ["serve", "alert send", "push test"]) {
            config, value throws(CommandLineError) in
            config.apnsTeamID = value.presence
        },
        Flag(
            name: "apns-url", valueName: "URL", help: "APNs production base URL", shown: { $0.apnsURL },
            commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.apnsURL = try Flag.httpURL(value, flag: "apns-url")
        },
        Flag(
            name: "apns-sandbox-url", valueName: "URL", help: "APNs sandbox base URL", shown: { $0.apnsSandboxURL },
            commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.apnsSandboxURL = try Flag.httpURL(value, flag: "apns-sandbox-url")
        },
        Flag(
            name: "apns-ca-file", valueName: "PATH", help: "CA bundle to trust for APNs instead of the system's (testing)",
            shown: { $0.apnsCAFile ?? "the system CAs" }, commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.apnsCAFile = value.presence
        },
        Flag(
            name: "apns-connections", valueName: "N",
            help: "HTTP/2 connections to APNs per host, each with its own thread (200 pushes in flight, shared among them)",
            shown: { "\($0.apnsConnections)" }, commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.apnsConnections = try Flag.integer(value, flag: "apns-connections", range: 1...16)
        },
        Flag(
            name: "apns-topic", valueName: "BUNDLE_ID", help: "The iOS app's bundle id, the APNs topic", shown: { $0.apnsTopic },
            commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--apns-topic must not be empty") }
            config.apnsTopic = value
        },
        Flag(
            name: "fcm-service-account", valueName: "PATH", help: "Firebase service-account JSON for direct FCM delivery",
            commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.fcmServiceAccount = value.presence
        },
        Flag(name: "fcm-url", valueName: "URL", help: "FCM base URL", shown: { $0.fcmURL }, commands: ["serve", "alert send", "push test"]) {
            config, value throws(CommandLineError) in
            config.fcmURL = try Flag.httpURL(value, flag: "fcm-url")
        },
        Flag(
            name: "relay-url", valueName: "URL", help: "The signed push relay --push-transport relay sends through, e.g. https://relay.example.org",
            commands: ["serve", "alert send", "push test"]
        ) { config, value throws(CommandLineError) in
            config.relayURL = try Flag.httpURL(value, flag: "relay-url")
        },
        Flag(
            name: "relay-key-file", valueName: "PATH", help: "This server's P-256 key for the relay, created with mode 0600 when missing",
            shown: { $0.relayKeyFile }, commands: ["serve", "alert send", "push test", "relay-key"]
        ) { config, value throws(CommandLineError) in
            guard !value.isEmpty else { throw CommandLineError("--relay-key-file needs a path") }
            config.relayKeyFile = value
        },
        Flag(
            name: "send-lease-seconds", valueName: "SECONDS",
            help: "How long an alert send stays claimed by a server that stopped making progress before another resumes it",
            shown: { "\($0.sendLeaseSeconds)" }, commands: ["serve", "alert send"]
        ) { config, value throws(CommandLineError) in
            config.sendLeaseSeconds = try Flag.integer(value, flag: "send-lease-seconds", range: 5...3600)
        },
        Flag(
            name: "alarm-check-interval", valueName: "SECONDS", help: "Seconds between alarm checks", shown: { "\($0.alarmCheckIntervalSeconds)" },
            commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.alarmCheckIntervalSeconds = try Flag.integer(value, flag: "alarm-check-interval", range: 1...3600)
        },
        Flag(
            name: "live-activity-interval", valueName: "SECONDS", help: "Seconds between Live Activity updates",
            shown: { "\($0.liveActivityIntervalSeconds)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.liveActivityIntervalSeconds = try Flag.integer(value, flag: "live-activity-interval", range: 1...3600)
        },
    ]

    /// Per-client limits on riders' requests.
    static let limitsFlags: [Flag] = [
        Flag(
            name: "push-registration-limit", valueName: "N", help: "Push registration requests per minute per client address, 0 disables",
            shown: { "\($0.pushRegistrationLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.pushRegistrationLimit = try Flag.integer(value, flag: "push-registration-limit", range: 0...1_000_000)
        },
        Flag(
            name: "alarm-limit", valueName: "N", help: "Alarm creations and deletions per minute per client address, 0 disables",
            shown: { "\($0.alarmLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.alarmLimit = try Flag.integer(value, flag: "alarm-limit", range: 0...1_000_000)
        },
        Flag(
            name: "live-activity-limit", valueName: "N", help: "Live Activity registrations and deletions per minute per client address, 0 disables",
            shown: { "\($0.liveActivityLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.liveActivityLimit = try Flag.integer(value, flag: "live-activity-limit", range: 0...1_000_000)
        },
        Flag(
            name: "upstream-lookup-limit", valueName: "N", help: "OneBusAway lookups one client's requests may cause per minute, 0 disables",
            shown: { "\($0.upstreamLookupLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.upstreamLookupLimit = try Flag.integer(value, flag: "upstream-lookup-limit", range: 0...1_000_000)
        },
        Flag(
            name: "max-alarms-per-device", valueName: "N", help: "Alarms waiting to fire per device (user_push_id), 0 disables",
            shown: { "\($0.maxAlarmsPerDevice)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.maxAlarmsPerDevice = try Flag.integer(value, flag: "max-alarms-per-device", range: 0...1_000_000)
        },
        Flag(
            name: "max-live-activities-per-token", valueName: "N", help: "Live Activities per push token, 0 disables",
            shown: { "\($0.maxLiveActivitiesPerPushToken)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.maxLiveActivitiesPerPushToken = try Flag.integer(value, flag: "max-live-activities-per-token", range: 0...1_000_000)
        },
        Flag(
            name: "webhook-limit", valueName: "N", help: "gorush feedback posts per minute per client address, 0 disables",
            shown: { "\($0.webhookLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.webhookLimit = try Flag.integer(value, flag: "webhook-limit", range: 0...1_000_000)
        },
        Flag(
            name: "survey-response-limit", valueName: "N", help: "Survey-response writes per minute per client address, 0 disables",
            shown: { "\($0.surveyResponseLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.surveyResponseLimit = try Flag.integer(value, flag: "survey-response-limit", range: 0...1_000_000)
        },
        Flag(
            name: "ghost-bus-ip-limit", valueName: "N", help: "Ghost-bus reports per hour per client address, 0 disables",
            shown: { "\($0.ghostBusPeerLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.ghostBusPeerLimit = try Flag.integer(value, flag: "ghost-bus-ip-limit", range: 0...1_000_000)
        },
        Flag(
            name: "ghost-bus-user-limit", valueName: "N", help: "Ghost-bus reports per day per user_identifier, 0 disables",
            shown: { "\($0.ghostBusUserLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.ghostBusUserLimit = try Flag.integer(value, flag: "ghost-bus-user-limit", range: 0...1_000_000)
        },
        Flag(
            name: "admin-api-limit", valueName: "N",
            help: "Admin API requests per minute per key, and failed sign-ins per client address, 0 disables",
            shown: { "\($0.adminAPILimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.adminAPILimit = try Flag.integer(value, flag: "admin-api-limit", range: 0...1_000_000)
        },
        Flag(
            name: "donation-limit", valueName: "N", help: "Donation requests per minute per client address, 0 disables",
            shown: { "\($0.donationLimit)" }, commands: ["serve"]
        ) { config, value throws(CommandLineError) in
            config.donationLimit = try Flag.integer(value, flag: "donation-limit", range: 0...1_000_000)
        },
    ]

    /// The push relay (`sidecar relay`).
    static let relayFlags: [Flag] = [
        Flag(
            name: "relay-allowed-servers", valueName: "FILE", help: "Serve only these serverIds (one a line, from 'sidecar relay-key show')",
            shown: { $0.relayAllowedServersFile ?? "any server" }, commands: ["relay"]
        ) { config, value throws(CommandLineError) in
            config.relayAllowedServersFile = value
        },
        Flag(
            name: "relay-send-limit", valueName: "N",
            help: "Sends per minute per server, counted per 100 tokens (a send of 1,000 counts as 10; 0 disables)",
            shown: { "\($0.relaySendLimit)" },
            commands: ["relay"]
        ) { config, value throws(CommandLineError) in
            config.relaySendLimit = try Flag.integer(value, flag: "relay-send-limit", range: 0...10_000_000)
        },
        Flag(
            name: "relay-client-limit", valueName: "N", help: "Requests per minute per client address (0 disables)",
            shown: { "\($0.relayClientLimit)" }, commands: ["relay"]
        ) { config, value throws(CommandLineError) in
            config.relayClientLimit = try Flag.integer(value, flag: "relay-client-limit", range: 0...10_000_000)
        },
        Flag(
            name: "relay-max-bindings-per-server", valueName: "N",
            help: "Token bindings kept for one server key; a new one past it is refused with binding_limit (0 disables)",
            shown: { "\($0.relayMaxBindingsPerServer)" }, commands: ["relay"]
        ) { config, value throws(CommandLineError) in
            config.relayMaxBindingsPerServer = try Flag.integer(value, flag: "relay-max-bindings-per-server", range: 0...1_000_000_000)
        },
        Flag(
            name: "relay-max-bindings-per-client", valueName: "N",
            help: "Token bindings kept for one client address, whatever keys it uses (0 disables)", shown: { "\($0.relayMaxBindingsPerClient)" },
            commands: ["relay"]
        ) { config, value throws(CommandLineError) in
            config.relayMaxBindingsPerClient = try Flag.integer(value, flag: "relay-max-bindings-per-client", range: 0...1_000_000_000)
        },
    ]
}
