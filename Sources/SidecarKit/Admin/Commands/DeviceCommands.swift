import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Push
import QRCode

/// What reaches riders' devices: `push test` and `links add-region`.
enum DeviceCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "push test", id: nil, access: .none,
            summary: "Send one test notification to a device and print the provider's answer",
            options: [
                OperatorOption("platform", "ios|android", required: true, "The device's platform"),
                OperatorOption("token", "TOKEN", required: true, "The device's push token (never logged)"),
                OperatorOption("sandbox", nil, "An iOS development build's token (APNs sandbox)"),
            ],
            notes: "Needs a push transport: the push flags below, as 'sidecar serve' takes them.",
            run: { c in try await pushTest(c) }),
        OperatorCommand(
            name: "links add-region", id: nil, access: .none,
            summary: "Print a region's onebusaway://add-region link and optionally write its QR code",
            options: [
                OperatorOption("region", "N", "A directory region: its values become the defaults"),
                OperatorOption("region-id", "N", "The id this sidecar serves the region under (iOS 26.3.0 and Android 26.2.0 read it)"),
                OperatorOption("name", "TEXT", "The region's name"),
                OperatorOption("oba-url", "URL", "Its OneBusAway server"),
                OperatorOption("sidecar-url", "URL", "This server's public https address"),
                OperatorOption("otp-url", "URL", "An OpenTripPlanner server"),
                OperatorOption("otp-graphql-url", "URL", "An OpenTripPlanner GraphQL endpoint"),
                OperatorOption("otp-graphql-bikeshare", "true|false", "Whether it plans bike share trips"),
                OperatorOption("umami-url", "URL", "An Umami analytics server"),
                OperatorOption("umami-id", "ID", "The website id at Umami"),
                OperatorOption("qr", "FILE.png|FILE.svg", "Also write the link's QR code"),
                OperatorOption(
                    "allow-http", "true|false", "Allow an http:// sidecar URL beyond loopback and 10.0.2.2 (a test rig; the apps refuse it)"),
            ],
            notes:
                "Give --region N, or --region-id N with --name, --oba-url and --sidecar-url. The sidecar URL must be https: the apps refuse cleartext except to loopback and the Android emulator's 10.0.2.2.",
            run: { c in try addRegionLink(c) }),
    ]

    static func kind(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered: return "delivered"
        case .terminal: return "the token is dead"
        case .transient: return "temporary; try again"
        case .rejected: return "the message was refused"
        }
    }

    /// `push test`: one notification through the configured transport; no database.
    static func pushTest(_ c: CommandRun) async throws -> Int32 {
        let options = c.options
        guard let transport = try Sidecar.pushTransport(c.configuration, http: c.http, logger: c.logger) else {
            throw AdministrationError.invalid([
                "no push transport: pass --gorush-url, --apns-key-file/--apns-key-id/--apns-team-id, "
                    + "--fcm-service-account or --relay-url (see sidecar push test --help)"
            ])
        }
        guard let platform = PushPlatform(rawValue: options["platform"] ?? ""), let token = options["token"]?.presence else {
            throw AdministrationError.invalid(["--platform ios|android and --token are required"])
        }
        let sandbox = ApnsSandbox.read(options["sandbox"]) == .sandbox
        let message = PushMessage(
            token: token, platform: platform, apnsSandbox: sandbox, title: "OneBusAway", body: "Test notification from your sidecar")
        let outcome = await transport.send([message]).first ?? .transient(reason: "no answer")
        let environment = platform == .ios ? (sandbox ? " (APNs sandbox)" : " (APNs production)") : ""
        switch outcome {
        case .delivered:
            c.output("delivered through \(transport.name)\(environment)")
            return 0
        case .terminal(let reason), .transient(let reason), .rejected(let reason):
            c.output("not delivered through \(transport.name)\(environment): \(reason) (\(Self.kind(outcome)))")
            return 1
        }
    }

    /// `sidecar links add-region`: needs the regions directory, not the database.
    static func addRegionLink(_ c: CommandRun) throws -> Int32 {
        let options = c.options, directory = c.regions, output = c.output, errors = c.errors
        var link = LinkRules.AddRegion(name: "", obaURL: "")
        var explicitID: Int64?
        if let text = options["region_id"] {
            guard let id = LinkRules.regionIDValue(text) else {
                throw AdministrationError.invalid(["--region-id must be a non-negative integer that fits 64 bits (got '\(text)')"])
            }
            explicitID = id
        }
        if let text = options["region"] {
            guard let id = Int(text), let region = directory.region(id: id) else {
                throw AdministrationError.notFound("No region \(text) in the regions directory (see sidecar region list)")
            }
            link = LinkRules.AddRegion(region: region, sidecarURL: nil)
        } else if let id = explicitID, id <= Int64(Int.max), let region = directory.region(id: Int(id)) {
            // The directory's values are the defaults the other flags override.
            link = LinkRules.AddRegion(region: region, sidecarURL: nil)
        }
        if let id = explicitID { link.regionID = id }
        if let name = options["name"] { link.name = name }
        if let oba = options["oba_url"] { link.obaURL = oba }
        if let sidecar = options["sidecar_url"] { link.sidecarURL = sidecar }
        if let otp = options["otp_url"] { link.otpURL = otp.presence }
        if let graphql = options["otp_graphql_url"] { link.otpGraphqlURL = graphql.presence }
        if let bikeshare = options["otp_graphql_bikeshare"] {
            guard let value = BooleanParameter.read(bikeshare) else {
                throw AdministrationError.invalid(["--otp-graphql-bikeshare must be true or false (got '\(bikeshare)')"])
            }
            link.otpGraphqlBikeshare = value
        }
        if let url = options["umami_url"] { link.umamiURL = url.presence }
        if let id = options["umami_id"] { link.umamiID = id.presence }
        var allowHTTP = false
        if let text = options["allow_http"] {
            guard let value = BooleanParameter.read(text) else {
                throw AdministrationError.invalid(["--allow-http must be true or false (got '\(text)')"])
            }
            allowHTTP = value
        }
        var problems = LinkRules.problems(link) + LinkRules.cleartextProblems(link, allowHTTP: allowHTTP)
        if link.sidecarURL?.isEmpty ?? true {
            problems.append("the sidecar URL is required: pass --sidecar-url (this server's public https address)")
        }
        if link.regionID == nil {
            problems.append(
                "the region id is required: pass --region-id N (the id this sidecar serves the region under; without it the apps invent one and every sidecar call answers 404)"
            )
        }
        guard problems.isEmpty else { throw AdministrationError.invalid(problems) }
        let text = LinkRules.addRegionLink(link)
        output(text)
        if let path = options["qr"] {
            let code: QRCode
            do { code = try QRCode(text) } catch { throw AdministrationError.invalid(["the link is too long for a QR code"]) }
            let lower = path.lowercased()
            guard lower.hasSuffix(".png") || lower.hasSuffix(".svg") else {
                throw AdministrationError.invalid(["--qr must name a .png or .svg file"])
            }
            let bytes = lower.hasSuffix(".png") ? code.png() : Array(code.svg().utf8)
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
                throw AdministrationError.invalid(["cannot write \(path)"])
            }
            errors("wrote a \(code.size)×\(code.size) QR code to \(path)")
        }
        return 0
    }
}
