import GTFSRealtime

/// The languages of a source's texts, read the way registrations and
/// authored translations are: every tag normalised through the translation
/// catalog, so an `es-US` text reaches `es-MX` phones and their pushes.
///
/// What the apps match (OneBusAway/onebusaway-android
/// `widealerts/GtfsAlertsHelper.kt:21-34`: the translation whose language
/// equals `Locale.getLanguage()` exactly, else the last one tagged exactly
/// `en`, else an empty string; OneBusAway/onebusaway-ios
/// `OBAKitCore/Models/REST/AgencyAlert.swift:48-64`: the language code
/// exactly, else the first `en`, else the first) is why a mirrored text goes
/// out with `en` first and bare language codes after it, as authored alerts
/// do: an untagged or `en-US` text would give an Android phone an empty dialog.
enum AlertSourceLanguages {
    /// One text of one language, normalised.
    struct Text: Equatable, Sendable {
        /// `en`, a catalog language (`es`, `zh-Hant`, `tl`), or the bare
        /// code of a language outside the catalog (`nl`).
        var language: String
        var text: String
    }

    /// The language a source's tag names: none or blank is the region's
    /// default language (English, the language authored alerts are written
    /// in); any English is `en`; else the catalog's language, or the bare
    /// code of a well-formed tag the catalog lacks; nil for a malformed tag.
    static func language(_ tag: String?, catalog: LocaleCatalog) -> String? {
        guard let tag = tag?.trimmingCharacters(in: .whitespaces), !tag.isEmpty else { return "en" }
        guard tag.count <= FieldLimits.locale, let parsed = LocaleCatalog.LanguageTag(tag) else { return nil }
        if parsed.language == "en" { return "en" }
        if let known = catalog.normalize(tag) { return known }
        return parsed.language
    }

    /// A translated string's texts by normalised language, in the source's
    /// order: blanks dropped, and the first text of a language kept when
    /// two tags name the same one (`en` and `en-US`). Malformed tags are
    /// returned apart, for the poll's report.
    static func texts(_ translated: TranslatedString?, catalog: LocaleCatalog) -> (texts: [Text], malformed: [String]) {
        var texts: [Text] = []
        var malformed: [String] = []
        for translation in translated?.translations ?? [] where !translation.text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            guard let language = language(translation.language, catalog: catalog) else {
                malformed.append(String((translation.language ?? "").prefix(40)))
                continue
            }
            if !texts.contains(where: { $0.language == language }) { texts.append(Text(language: language, text: translation.text)) }
        }
        return (texts, malformed)
    }

    /// The language riders without one of their own read: English when the
    /// source wrote it, else the first language of the header.
    static func primary(_ header: [Text]) -> String {
        header.contains { $0.language == "en" } ? "en" : header.first?.language ?? "en"
    }

    /// `texts` as the feed carries them: the primary language's text under
    /// `en` first (the fallback both apps read), then every other language
    /// under its own tag and the bare codes the apps ask for
    /// (`AlertFeedRules.feedLanguageTags`). nil when there is no text.
    static func feedString(_ texts: [Text], primary: String) -> TranslatedString? {
        guard let first = texts.first(where: { $0.language == primary }) ?? texts.first else { return nil }
        // A primary language other than English also goes out under its own code.
        let others = texts.filter { $0.language != "en" }
        let tags = AlertFeedRules.feedLanguageTags(others.map(\.language))
        return TranslatedString(
            [.init(text: first.text, language: "en")] + tags.map { .init(text: others[$0.index].text, language: $0.tag) })
    }

    /// The text in `language`, else the primary's, else the first.
    static func text(_ texts: [Text], _ language: String, primary: String) -> String? {
        (texts.first { $0.language == language } ?? texts.first { $0.language == primary } ?? texts.first)?.text
    }
}
