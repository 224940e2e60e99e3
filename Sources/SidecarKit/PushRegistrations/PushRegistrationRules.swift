import FoundationEssentials
import HTTPServer

/// Spec §4, locale normalization: map the tag an app reports onto the
/// translation catalog at registration time.
public struct LocaleCatalog: Sendable, Equatable {
    /// Languages alerts can be translated into, in the catalog's spelling.
    /// English is the source text, so it is not listed: nil means English.
    public let languages: [String]
    /// Lower-cased tag → the catalog's spelling, so a lookup costs one hash.
    private let byLowercasedTag: [String: String]

    /// The default catalog: the languages US and Canadian transit agencies
    /// most often publish rider information in.
    public static let standard = LocaleCatalog([
        "es", "zh-Hans", "zh-Hant", "vi", "ko", "tl", "ru", "ja", "pt", "fr", "de", "ar", "so", "am", "ti",
        "uk", "hi", "pa", "ht", "km", "fa", "pl", "it",
    ])

    public init(_ languages: [String]) {
        self.languages = languages
        byLowercasedTag = Dictionary(languages.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
    }

    public static func == (lhs: LocaleCatalog, rhs: LocaleCatalog) -> Bool { lhs.languages == rhs.languages }

    /// Known aliases, tried after an exact match fails.
    static let aliases: [String: String] = [
        "zh-cn": "zh-Hans", "zh-sg": "zh-Hans",
        "zh-tw": "zh-Hant", "zh-hk": "zh-Hant",
        "fil": "tl", "pt-br": "pt",
    ]

    /// Exact case-insensitive match, then an alias, then the bare primary
    /// subtag (`es-MX` → `es`), else nil (English copy). Underscores are read
    /// as hyphens (`es_MX`), since some platforms report tags that way.
    public func normalize(_ tag: String?) -> String? {
        guard let tag = tag?.presence?.lowercased() else { return nil }
        let hyphenated = tag.contains("_") ? String(tag.map { $0 == "_" ? "-" : $0 }) : tag
        if let exact = byLowercasedTag[hyphenated] { return exact }
        if let alias = Self.aliases[hyphenated], let aliased = byLowercasedTag[alias.lowercased()] { return aliased }
        if let primary = hyphenated.split(separator: "-").first, primary.count < hyphenated.count,
           let bare = byLowercasedTag[String(primary)] {
            return bare
        }
        return nil
    }
}

/// A push registration request after parsing (spec §4 request fields).
public struct PushRegistrationRequest: Sendable, Equatable {
    public static let maxTokenLength = 4096
    public static let maxDescriptionLength = 255

    public var token: String
    public var operatingSystem: String
    /// The reported BCP-47 tag; nil when absent or blank (sticky: keep stored).
    public var locale: String?
    /// nil when absent, blank or unrecognised (sticky: keep stored).
    public var testDevice: Bool?
    /// nil when absent or blank (sticky: keep stored).
    public var description: String?
    /// §2.7, already cleared for Android.
    public var apnsSandbox: Bool
    /// True when `apns_sandbox` carried a value on neither allow-list.
    public var apnsSandboxUnrecognized: Bool

    /// Reads and validates the parameter bag; the messages say every problem.
    public static func parse(_ parameters: Parameters) -> Result<PushRegistrationRequest, ValidationFailure> {
        var messages: [String] = []
        let token = parameters.identifier("token")?.presence
        if token == nil { messages.append("Token can't be blank") }
        if let token, token.count > maxTokenLength {
            messages.append("Token is too long (maximum is \(maxTokenLength) characters)")
        }
        let operatingSystem = parameters["operating_system"]?.presence?.lowercased()
        if operatingSystem == nil {
            messages.append("Operating system can't be blank")
        } else if operatingSystem != "ios" && operatingSystem != "android" {
            messages.append("Operating system is not included in the list")
        }
        let description = parameters["description"]?.presence
        if let description, description.count > maxDescriptionLength {
            messages.append("Description is too long (maximum is \(maxDescriptionLength) characters)")
        }
        messages += FieldLimits.check([("Locale", parameters["locale"]?.presence, FieldLimits.locale)])
        guard messages.isEmpty, let token, let operatingSystem else { return .failure(ValidationFailure(messages)) }
        let sandbox = ApnsSandbox.read(parameters["apns_sandbox"])
        return .success(PushRegistrationRequest(
            token: token, operatingSystem: operatingSystem, locale: parameters["locale"]?.presence,
            testDevice: BooleanParameter.read(parameters["test_device"]), description: description,
            apnsSandbox: operatingSystem == "ios" && sandbox == .sandbox,
            apnsSandboxUnrecognized: sandbox == .unrecognized))
    }
}

/// A registration as stored.
public struct PushRegistration: Sendable, Equatable {
    public var regionID: Int
    public var token: String
    public var operatingSystem: String
    /// Normalized onto the catalog; nil = English.
    public var locale: String?
    /// The tag as reported, kept so a later catalog can re-normalize it.
    public var rawLocale: String?
    public var apnsSandbox: Bool
    public var testDevice: Bool
    public var description: String?
    public var createdAt: Date
    public var lastSeenAt: Date
}

/// The upsert rule of spec §4: what a registration becomes when a request
/// arrives, given what was stored.
public enum PushRegistrationRules {
    /// Registrations unseen this long are pruned (spec §4 Retention).
    public static let retention: TimeInterval = 180 * 24 * 60 * 60

    /// - `operating_system` and `apns_sandbox` are rewritten every time
    ///   (absent sandbox = production, so a debug build that becomes an App
    ///   Store build demotes to production routing).
    /// - `locale`, `test_device` and `description` are sticky: only a real
    ///   value overwrites them. An explicit `test_device=false` demotes and
    ///   clears the description; a non-test device never keeps one.
    /// - A test device must have a description.
    public static func merge(existing: PushRegistration?, request: PushRegistrationRequest, regionID: Int,
                             catalog: LocaleCatalog, now: Date) -> Result<PushRegistration, ValidationFailure> {
        let testDevice = request.testDevice ?? existing?.testDevice ?? false
        var description: String? = request.testDevice == false ? nil : (request.description ?? existing?.description)
        if !testDevice { description = nil }
        if testDevice && description == nil {
            return .failure(ValidationFailure(["Description can't be blank for a test device"]))
        }
        let rawLocale = request.locale ?? existing?.rawLocale
        let locale = request.locale.map { catalog.normalize($0) } ?? existing?.locale
        return .success(PushRegistration(
            regionID: regionID, token: request.token, operatingSystem: request.operatingSystem,
            locale: locale, rawLocale: rawLocale,
            apnsSandbox: request.operatingSystem == "ios" && request.apnsSandbox,
            testDevice: testDevice, description: description,
            createdAt: existing?.createdAt ?? now, lastSeenAt: now))
    }

    /// The oldest `last_seen_at` that survives a prune at `now`: a row seen
    /// exactly 180 days ago is dropped.
    public static func pruneCutoff(now: Date) -> Date { now.addingTimeInterval(-retention) }
}
