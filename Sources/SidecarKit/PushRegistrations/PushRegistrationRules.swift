import FoundationEssentials
import HTTPServer
import Push
import Synchronization

/// Spec §4, locale normalization: map the tag an app reports onto the
/// translation catalog at registration time.
struct LocaleCatalog: Sendable, Equatable {
    /// Languages alerts can be translated into, in the catalog's spelling.
    /// English is the source text, so it is not listed: nil means English.
    let languages: [String]
    /// Lower-cased tag → the catalog's spelling, so a lookup costs one hash.
    private let byLowercasedTag: [String: String]
    /// Tags already read, and what they read as: riders' phones report a few
    /// dozen distinct tags, and every registration reads one on the
    /// request's thread. Bounded: past `TagMemo.capacity` tags (of at most
    /// `TagMemo.longestKept` bytes), new ones are read without being kept.
    private let memo = TagMemo()
    /// Tags the memo holds (for tests and bounds).
    var tagsKept: Int { memo.count }

    /// The default catalog: the languages US and Canadian transit agencies
    /// most often publish rider information in.
    static let standard = LocaleCatalog([
        "es", "zh-Hans", "zh-Hant", "vi", "ko", "tl", "ru", "ja", "pt", "fr", "de", "ar", "so", "am", "ti",
        "uk", "hi", "pa", "ht", "km", "fa", "pl", "it",
    ])

    init(_ languages: [String]) {
        self.languages = languages
        byLowercasedTag = Dictionary(languages.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func == (lhs: LocaleCatalog, rhs: LocaleCatalog) -> Bool { lhs.languages == rhs.languages }

    /// Language codes the catalog may spell another way (tried after the
    /// region is dropped: `fil-PH` → `fil` → `tl`).
    static let aliases: [String: String] = ["fil": "tl", "iw": "he", "in": "id", "ji": "yi"]

    /// Chinese regions whose riders read Traditional characters (any other
    /// region, or none, reads Simplified).
    static let traditionalRegions: Set<String> = ["tw", "hk", "mo"]

    /// A tag's BCP 47 parts: language, script and region (extensions,
    /// variants and private use are ignored).
    struct LanguageTag: Equatable {
        var language: String
        var script: String?
        var region: String?

        /// Lower-cased; `_` read as `-` (some platforms report `es_MX`).
        /// Parts are read as UTF-8 bytes: every rule below wants ASCII
        /// letters or digits, which are one byte each, so a byte count is
        /// the character count wherever it decides (this runs on every
        /// registration's request thread).
        init?(_ raw: String) {
            let lowered = raw.lowercasedFastIfASCII()
            var parts = lowered.utf8.split(whereSeparator: { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }).makeIterator()
            guard let first = parts.next(), (2...8).contains(first.count), first.allSatisfy(Self.isASCIILetter) else { return nil }
            language = String(Substring(first))
            while let part = parts.next() {
                // An extension or private use: the rest is not language.
                if part.count == 1 || (part.contains(where: { $0 >= 0x80 }) && Substring(part).count == 1) { break }
                if script == nil, region == nil, part.count == 4, part.allSatisfy(Self.isASCIILetter) {
                    script = String(Substring(part))
                } else if region == nil,
                    (part.count == 2 && part.allSatisfy(Self.isASCIILetter)) || (part.count == 3 && part.allSatisfy(Self.isASCIIDigit))
                {
                    region = String(Substring(part))
                }
            }
        }

        /// A-Z or a-z (what `isASCII && isLetter` says, without the Unicode
        /// property tables).
        static func isASCIILetter(_ byte: UInt8) -> Bool {
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        }

        /// 0-9 (what `isASCII && isNumber` says).
        static func isASCIIDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    }

    /// The catalog language a reported tag reads: an exact match
    /// (case-insensitive), then by its parts: Chinese by script, else by
    /// region (`zh-Hant-TW`, `zh-HK` → zh-Hant; `zh-Hans-CN`, `zh-CN`, bare
    /// `zh` → zh-Hans), then language and script, language and region
    /// (a catalog may list `pt-BR`), the language alone (`es-MX` → `es`), and
    /// the language's alias (`fil-PH` → `fil` → `tl`); else nil (English).
    func normalize(_ tag: String?) -> String? {
        guard let tag = tag?.presence else { return nil }
        if let known = memo.reading(of: tag) { return known }
        let reading = read(tag.lowercasedFastIfASCII())
        memo.keep(tag, reading)
        return reading
    }

    /// `normalize` for a present tag, lower-cased.
    private func read(_ tag: String) -> String? {
        let hyphenated = tag.utf8.contains(UInt8(ascii: "_")) ? String(tag.map { $0 == "_" ? "-" : $0 }) : tag
        if let exact = byLowercasedTag[hyphenated] { return exact }
        guard let parsed = LanguageTag(hyphenated) else { return nil }
        var candidates: [String] = []
        if parsed.language == "zh" {
            let traditional = parsed.script.map { $0 == "hant" } ?? parsed.region.map { Self.traditionalRegions.contains($0) } ?? false
            candidates.append(traditional ? "zh-hant" : "zh-hans")
        }
        if let script = parsed.script { candidates.append("\(parsed.language)-\(script)") }
        if let region = parsed.region { candidates.append("\(parsed.language)-\(region)") }
        candidates.append(parsed.language)
        if let alias = Self.aliases[parsed.language] { candidates.append(alias) }
        return candidates.lazy.compactMap { byLowercasedTag[$0] }.first
    }
}

/// What `LocaleCatalog.normalize` has read so far (see `memo`).
private final class TagMemo: Sendable {
    static let capacity = 1024
    /// Longer tags (none an app sends; every caller caps them) are not kept.
    static let longestKept = 64
    /// A tag → what it reads as (nil inside: English).
    private let readings = Mutex<[String: String?]>([:])

    /// What the tag was read as before, or nil when it has not been.
    func reading(of tag: String) -> String?? {
        readings.withLock { $0[tag] }
    }

    var count: Int { readings.withLock { $0.count } }

    func keep(_ tag: String, _ reading: String?) {
        guard tag.utf8.count <= Self.longestKept else { return }
        readings.withLock { readings in
            if readings.count < Self.capacity { readings[tag] = reading }
        }
    }
}

/// A push registration request after parsing (spec §4 request fields).
struct PushRegistrationRequest: Sendable, Equatable {
    static let maxTokenLength = 4096
    static let maxDescriptionLength = 255

    var token: String
    var operatingSystem: PushPlatform
    /// The reported BCP-47 tag; nil when absent or blank (sticky: keep stored).
    var locale: String?
    /// nil when absent, blank or unrecognised (sticky: keep stored).
    var testDevice: Bool?
    /// nil when absent or blank (sticky: keep stored).
    var description: String?
    /// §2.7, already cleared for Android.
    var apnsSandbox: Bool
    /// True when `apns_sandbox` carried a value on neither allow-list.
    var apnsSandboxUnrecognized: Bool

    /// Reads and validates the parameter bag; the messages say every problem.
    static func parse(_ parameters: Parameters) -> Result<PushRegistrationRequest, ValidationFailure> {
        var messages: [String] = []
        let token = parameters.identifier("token")?.presence
        if token == nil { messages.append("Token can't be blank") }
        if let token, FieldLimits.exceeds(token, maxTokenLength) {
            messages.append("Token is too long (maximum is \(maxTokenLength) characters)")
        } else if let problem = PushToken.problem("Token", token) {
            messages.append(problem)
        }
        let named = parameters["operating_system"]?.presence?.lowercasedFastIfASCII()
        let operatingSystem = named.flatMap(PushPlatform.init(rawValue:))
        if named == nil {
            messages.append("Operating system can't be blank")
        } else if operatingSystem == nil {
            messages.append("Operating system is not included in the list")
        }
        let description = parameters["description"]?.presence
        if let description, FieldLimits.exceeds(description, maxDescriptionLength) {
            messages.append("Description is too long (maximum is \(maxDescriptionLength) characters)")
        }
        let locale = parameters["locale"]?.presence
        if let problem = FieldLimits.problem("Locale", locale, FieldLimits.locale) { messages.append(problem) }
        guard messages.isEmpty, let token, let operatingSystem else { return .failure(ValidationFailure(messages)) }
        let sandbox = ApnsSandbox.read(parameters["apns_sandbox"])
        return .success(
            PushRegistrationRequest(
                token: token, operatingSystem: operatingSystem, locale: locale,
                testDevice: BooleanParameter.read(parameters["test_device"]), description: description,
                apnsSandbox: operatingSystem == .ios && sandbox == .sandbox,
                apnsSandboxUnrecognized: sandbox == .unrecognized))
    }
}

/// A registration as stored.
struct PushRegistration: Sendable, Equatable {
    var regionID: Int
    var token: String
    var operatingSystem: PushPlatform
    /// Normalized onto the catalog; nil = English.
    var locale: String?
    /// The tag as reported, kept so a later catalog can re-normalize it.
    var rawLocale: String?
    var apnsSandbox: Bool
    var testDevice: Bool
    var description: String?
    var createdAt: Date
    var lastSeenAt: Date
}

/// The upsert rule of spec §4: what a registration becomes when a request
/// arrives, given what was stored.
enum PushRegistrationRules {
    /// Registrations unseen this long are pruned (spec §4 Retention).
    static let retention: TimeInterval = 180 * 24 * 60 * 60

    /// - `operating_system` and `apns_sandbox` are rewritten every time
    ///   (absent sandbox = production, so a debug build that becomes an App
    ///   Store build demotes to production routing).
    /// - `locale`, `test_device` and `description` are sticky: only a real
    ///   value overwrites them. An explicit `test_device=false` demotes and
    ///   clears the description; a non-test device never keeps one.
    /// - A test device must have a description.
    /// - `catalogLocale` is `catalog.normalize(request.locale)`, read by the
    ///   caller, so a writer that serialises registrations does not spend its
    ///   time on it.
    static func merge(
        existing: PushRegistration?, request: PushRegistrationRequest, regionID: Int,
        catalogLocale: String?, now: Date
    ) -> Result<PushRegistration, ValidationFailure> {
        let testDevice = request.testDevice ?? existing?.testDevice ?? false
        var description: String? = request.testDevice == false ? nil : (request.description ?? existing?.description)
        if !testDevice { description = nil }
        if testDevice && description == nil {
            return .failure(ValidationFailure(["Description can't be blank for a test device"]))
        }
        let rawLocale = request.locale ?? existing?.rawLocale
        let locale = request.locale == nil ? existing?.locale : catalogLocale
        return .success(
            PushRegistration(
                regionID: regionID, token: request.token, operatingSystem: request.operatingSystem,
                locale: locale, rawLocale: rawLocale,
                apnsSandbox: request.operatingSystem == .ios && request.apnsSandbox,
                testDevice: testDevice, description: description,
                createdAt: existing?.createdAt ?? now, lastSeenAt: now))
    }

    /// Whether `merge` needs the stored row for this request. The apps send
    /// `locale` and `test_device` every time, and a description with
    /// `test_device=true`; then every stored field comes from the request
    /// (the creation time is kept by the upsert itself), so the row is not
    /// read and the write is one statement.
    static func needsStoredRow(_ request: PushRegistrationRequest) -> Bool {
        guard request.locale != nil, let testDevice = request.testDevice else { return true }
        return testDevice && request.description == nil
    }

    /// The oldest `last_seen_at` that survives a prune at `now`: a row seen
    /// exactly 180 days ago is dropped.
    static func pruneCutoff(now: Date) -> Date { now.addingTimeInterval(-retention) }
}
