import Core

/// Issue 16: the links the apps make and follow
/// (`../shared/seeds/ios-url-schemes-and-deep-links.txt`). Pure functions.
enum LinkRules {
    // MARK: Values in the apps' URLs

    /// A trip link's `service_date`: epoch seconds as the iOS app writes
    /// them (`1710273600.0`), whole seconds, or milliseconds (what OneBusAway
    /// itself uses). Returns milliseconds, or nil for anything else.
    static func serviceDateMillis(_ text: String) -> EpochMillis? {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.count <= 24,
            trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), trimmed.filter({ $0 == "." }).count <= 1,
            !trimmed.hasPrefix("."), let value = Double(trimmed), value.isFinite, value > 0
        else { return nil }
        // Below 10^11 is seconds (until the year 5138); above, milliseconds.
        let millis = trimmed.contains(".") || value < 100_000_000_000 ? value * 1000 : value
        guard millis <= 32_503_680_000_000 else { return nil }  // year 3000
        return EpochMillis(Int64(millis.rounded()))
    }

    /// Stop and trip ids as they may appear in a path or a query: 1 to 255
    /// characters, no control characters.
    static func isPlausibleIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 255 && !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    // MARK: Percent-encoding

    /// Every byte outside RFC 3986's unreserved set percent-encoded, so a
    /// value survives as one query item (`?`, `&`, `=`, `#`, spaces, UTF-8).
    static func percentEncoded(_ value: String) -> String { PercentEncoding.encode(value) }

    /// The inverse, for tests and for reading links back; nil when malformed.
    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    // MARK: Links into the apps

    /// `onebusaway://view-stop?stopID=...&regionID=...` (camelCase: what
    /// the app's decoder reads, whatever its doc comment says).
    static func viewStopLink(scheme: String = "onebusaway", stopID: String, regionID: Int) -> String {
        "\(scheme)://view-stop?stopID=\(percentEncoded(stopID))&regionID=\(regionID)"
    }

    /// What an add-region link carries: every parameter the current apps
    /// read (onebusaway-ios `URLSchemeRouter`, v26.3.0; onebusaway-android
    /// `ExternalDeepLinks`, v26.2.0).
    struct AddRegion: Sendable, Equatable {
        var name: String
        var obaURL: String
        var sidecarURL: String?
        /// `region-id`: the id the app uses in every sidecar path. Without it
        /// iOS invents `1000 + random` and Android a negative id, and every
        /// sidecar call for the region answers 404 (both apps since August 2026).
        var regionID: Int64?
        var otpURL: String?
        /// `otp-graphql-url` and `otp-graphql-bikeshare` (iOS only).
        var otpGraphqlURL: String?
        var otpGraphqlBikeshare = false
        /// `umami-url` and `umami-id`: the apps configure analytics only with both.
        var umamiURL: String?
        var umamiID: String?

        init(
            name: String, obaURL: String, sidecarURL: String? = nil, regionID: Int64? = nil, otpURL: String? = nil,
            otpGraphqlURL: String? = nil, otpGraphqlBikeshare: Bool = false, umamiURL: String? = nil, umamiID: String? = nil
        ) {
            self.name = name
            self.obaURL = obaURL
            self.sidecarURL = sidecarURL
            self.regionID = regionID
            self.otpURL = otpURL
            self.otpGraphqlURL = otpGraphqlURL
            self.otpGraphqlBikeshare = otpGraphqlBikeshare
            self.umamiURL = umamiURL
            self.umamiID = umamiID
        }

        /// The link of a directory region: its servers, trip planners and
        /// analytics, and `sidecarURL` unless the directory names another.
        init(region: Region, sidecarURL: String?) {
            self.init(
                name: region.name, obaURL: region.obaBaseURL ?? "", sidecarURL: region.sidecarBaseURL?.presence ?? sidecarURL,
                regionID: Int64(region.id), otpURL: region.tripPlanner.restURL, otpGraphqlURL: region.tripPlanner.graphqlURL,
                otpGraphqlBikeshare: region.tripPlanner.graphqlBikeshare, umamiURL: region.analytics?.url,
                umamiID: region.analytics?.siteID)
        }
    }

    /// A `region-id` as a link carries it: a non-negative decimal integer
    /// that fits 64 bits (what both apps parse); nil for `-1`, `1.5`, `abc`.
    static func regionIDValue(_ text: String) -> Int64? {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.count <= 19, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(trimmed)
    }

    /// Problems that would make the app refuse or silently drop a value:
    /// a blank name; URLs that are not absolute http(s) (the app also takes
    /// bare paths, which mean nothing outside one server); half an
    /// analytics pair, which the apps ignore.
    static func problems(_ link: AddRegion) -> [String] {
        var problems: [String] = []
        if link.name.trimmingWhitespace().isEmpty { problems.append("the region needs a name") }
        if link.name.count > 200 { problems.append("the name is too long (at most 200 characters)") }
        let urls: [(String, String?, Bool)] = [
            ("OneBusAway URL", link.obaURL, true), ("sidecar URL", link.sidecarURL, false), ("OpenTripPlanner URL", link.otpURL, false),
            ("OpenTripPlanner GraphQL URL", link.otpGraphqlURL, false), ("Umami URL", link.umamiURL, false),
        ]
        for (label, value, required) in urls {
            guard let value, !value.isEmpty else {
                if required { problems.append("the \(label) is required") }
                continue
            }
            if !isAbsoluteHTTPURL(value) { problems.append("the \(label) must be an absolute http(s) URL without spaces (got \(value))") }
        }
        if (link.umamiURL?.presence == nil) != (link.umamiID?.presence == nil) {
            problems.append("the Umami URL and site id go together (the apps ignore one without the other)")
        }
        if let id = link.umamiID, id.count > 200 || id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            problems.append("the Umami site id must be at most 200 characters without control characters")
        }
        return problems
    }

    /// Why an `http://` sidecar URL would fail riders: the Android app
    /// refuses cleartext HTTP to every host but `10.0.2.2` (the emulator's
    /// address of the development machine; its network security config),
    /// and iOS App Transport Security refuses it too. Loopback and
    /// `10.0.2.2` are development and pass; so does anything when the
    /// operator says `allowHTTP` (a test rig). Empty when nothing is wrong.
    static func cleartextProblems(_ link: AddRegion, allowHTTP: Bool) -> [String] {
        guard !allowHTTP, let sidecar = link.sidecarURL?.presence, sidecar.lowercased().hasPrefix("http://"),
            !isDevelopmentHost(host(of: sidecar))
        else { return [] }
        return [
            "the sidecar URL \(sidecar) is cleartext http: the Android app refuses http to every host but 10.0.2.2 and iOS refuses it too, so riders would get no alerts, alarms or surveys; give the server's https address (or --allow-http true for a test rig)"
        ]
    }

    /// Hosts a development setup reaches over http: loopback, and `10.0.2.2`
    /// (the Android emulator's address of the machine it runs on).
    static func isDevelopmentHost(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") || lower == "::1" || lower == "10.0.2.2" { return true }
        let parts = lower.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The host of an http(s) URL, without brackets, port or user info.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        rest = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") { return String(rest[rest.index(after: rest.startIndex)..<close]) }
        return String(rest.prefix { $0 != ":" })
    }

    static func isAbsoluteHTTPURL(_ value: String) -> Bool {
        let lower = value.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), value.count <= 2048,
            !value.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else { return false }
        let rest = lower.drop { $0 != "/" }.dropFirst(2)
        return !rest.isEmpty && !rest.hasPrefix("/")
    }

    /// A base URL the apps append `/api/...` to: Android concatenates, so a
    /// trailing slash would make every path start `//api/`.
    static func withoutTrailingSlashes(_ url: String) -> String {
        var trimmed = Substring(url)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return String(trimmed)
    }

    /// `onebusaway://add-region?name=...&oba-url=...&region-id=...[&sidecar-url=...]...`
    /// with every value percent-encoded (an unencoded `&` in a nested URL
    /// would end that value in the app; `+` is not read as a space by iOS).
    static func addRegionLink(_ link: AddRegion, scheme: String = "onebusaway") -> String {
        var items = [("name", link.name.trimmingWhitespace()), ("oba-url", link.obaURL)]
        if let id = link.regionID { items.append(("region-id", String(id))) }
        if let sidecar = link.sidecarURL?.presence { items.append(("sidecar-url", withoutTrailingSlashes(sidecar))) }
        if let otp = link.otpURL?.presence { items.append(("otp-url", otp)) }
        if let graphql = link.otpGraphqlURL?.presence { items.append(("otp-graphql-url", graphql)) }
        if link.otpGraphqlBikeshare { items.append(("otp-graphql-bikeshare", "true")) }
        if let url = link.umamiURL?.presence, let id = link.umamiID?.presence {
            items.append(("umami-url", url))
            items.append(("umami-id", id))
        }
        return "\(scheme)://add-region?" + items.map { "\($0.0)=\(percentEncoded($0.1))" }.joined(separator: "&")
    }

    /// The query items of a link, decoded (tests read links back with it).
    static func queryItems(_ link: String) -> [String: String]? {
        guard let question = link.firstIndex(of: "?") else { return [:] }
        var items: [String: String] = [:]
        for pair in link[link.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = percentDecoded(String(parts[0])), let value = percentDecoded(String(parts[1])) else { return nil }
            items[name] = value
        }
        return items
    }

    // MARK: Site association

    /// `TEAMID.bundle.id` (a 10-character team id).
    static func parseAppleAppIDs(_ text: String) -> [String]? {
        let ids = text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
        guard !ids.isEmpty else { return nil }
        for id in ids {
            let parts = id.split(separator: ".", maxSplits: 1)
            guard parts.count == 2, parts[0].count == 10, parts[0].allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }),
                parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }), !parts[1].isEmpty
            else { return nil }
        }
        return ids
    }

    /// The path of a trip link, and of a stop page.
    static let tripPath = "/regions/*/stops/*/trips"
    static let stopPath = "/regions/*/stops/*"

    /// `/.well-known/apple-app-site-association` in the `components` form
    /// (iOS 13 and later; the first matching component decides). Trip links
    /// only with a `trip_id`: the app opens a claimed link and drops one it
    /// cannot decode, where an unclaimed one opens the share page. Stop
    /// pages when asked (the default): iOS builds from 2026-08-21 on (after
    /// 26.3.0) open them; anything deeper than a stop page, such as a
    /// `/trips` link without `trip_id`, is excluded first, because `*`
    /// also matches `/`. No `paths` entries: iOS reads them too, and they
    /// cannot ask for a `trip_id`.
    static func appleAppSiteAssociation(appIDs: [String], claimStopPages: Bool) -> JSONValue {
        var components: [JSONValue] = [
            .object(["/": .string(tripPath), "?": .object(["trip_id": .string("?*")]), "comment": .string("A shared trip")])
        ]
        if claimStopPages {
            components.append(
                .object([
                    "/": .string(stopPath + "/*"), "exclude": .bool(true),
                    "comment": .string("Deeper than a stop page (a trip link without trip_id): the web page"),
                ]))
            components.append(.object(["/": .string(stopPath), "comment": .string("A shared stop")]))
        }
        let details: JSONValue = .object(["appIDs": .array(appIDs.map(JSONValue.string)), "components": .array(components)])
        return .object(["applinks": .object(["apps": .array([]), "details": .array([details])])])
    }

    /// An Android app and the SHA-256 fingerprints of its signing certificates.
    struct AndroidApp: Sendable, Equatable {
        var package: String
        var fingerprints: [String]
    }

    /// `package:AA:BB:...[,package:...]`: a package name and a SHA-256
    /// certificate fingerprint (32 colon-separated hex pairs); a package
    /// given twice collects its fingerprints.
    static func parseAndroidAppLinks(_ text: String) -> [AndroidApp]? {
        var apps: [AndroidApp] = []
        for entry in text.split(separator: ",").map({ String($0).trimmingWhitespace() }) where !entry.isEmpty {
            guard let colon = entry.firstIndex(of: ":") else { return nil }
            let package = String(entry[..<colon])
            let fingerprint = String(entry[entry.index(after: colon)...]).uppercased()
            let pairs = fingerprint.split(separator: ":", omittingEmptySubsequences: false)
            guard package.split(separator: ".").count >= 2,
                package.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") }),
                pairs.count == 32, pairs.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) })
            else { return nil }
            if let index = apps.firstIndex(where: { $0.package == package }) {
                if !apps[index].fingerprints.contains(fingerprint) { apps[index].fingerprints.append(fingerprint) }
            } else {
                apps.append(AndroidApp(package: package, fingerprints: [fingerprint]))
            }
        }
        return apps.isEmpty ? nil : apps
    }

    /// `/.well-known/assetlinks.json`.
    static func assetLinks(_ apps: [AndroidApp]) -> JSONValue {
        .array(
            apps.map { app in
                .object([
                    "relation": .array([.string("delegate_permission/common.handle_all_urls")]),
                    "target": .object([
                        "namespace": .string("android_app"), "package_name": .string(app.package),
                        "sha256_cert_fingerprints": .array(app.fingerprints.map(JSONValue.string)),
                    ]),
                ])
            })
    }

    // MARK: Redirects to an agency's trip planner

    /// Placeholders a `--share-redirect-url` template may use.
    static let placeholders = ["{region_id}", "{stop_id}", "{trip_id}", "{service_date}", "{stop_sequence}"]

    /// The template with each placeholder replaced by its percent-encoded
    /// value (empty when absent); nil when the template is not http(s), or
    /// when a placeholder comes before the authority has ended (a `/`, `?`
    /// or `#` after the host): `https://plan.example.org{stop_id}` would
    /// let a shared link choose the host (`.evil.example`) or a port.
    static func redirect(template: String, values: [String: String]) -> String? {
        guard isAbsoluteHTTPURL(template.replacingPlaceholders(with: [:])), placeholdersStayInThePath(template) else { return nil }
        return template.replacingPlaceholders(with: values.mapValues(percentEncoded))
    }

    static func placeholdersStayInThePath(_ template: String) -> Bool {
        guard let brace = template.firstIndex(of: "{") else { return true }
        guard let scheme = template.range(of: "://"), scheme.upperBound <= brace else { return false }
        return template[scheme.upperBound..<brace].contains { $0 == "/" || $0 == "?" || $0 == "#" }
    }
}

extension String {
    /// `{name}` placeholders replaced by their values (missing ones by nothing).
    func replacingPlaceholders(with values: [String: String]) -> String {
        var output = ""
        var rest = Substring(self)
        while let open = rest.firstIndex(of: "{") {
            output += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                output += rest[open...]
                return output
            }
            let name = String(rest[rest.index(after: open)..<close])
            if LinkRules.placeholders.contains("{\(name)}") { output += values[name] ?? "" } else { output += rest[open...close] }
            rest = rest[rest.index(after: close)...]
        }
        return output + rest
    }
}
