import Core
import HTML

/// Words every console page of an alert uses for the same things: how
/// long riders see it, its state, what each app does with it, causes and
/// effects, and languages by name.
enum AlertWords {
    /// The end riders get: the alert's, the feed's 8-hour default, or none
    /// for a mirrored alert its source gave no end, said so.
    static func shownUntil(_ alert: ServiceAlert, _ zone: ZoneInfo) -> String {
        guard alert.endsAt == nil else { return RegionTime.display(alert.endsAt, zone) }
        guard let end = AlertFeedRules.effectiveEnd(alert) else { return "its source lists it (no end given: open-ended)" }
        return RegionTime.display(end, zone) + " (no end set: 8 hours from the start)"
    }

    /// Which app hides or only lists a published alert, and why (the apps'
    /// own rules, `AlertAppVisibility`); nothing when both show it in full.
    static func appFindings(_ alert: ServiceAlert, view: AlertFeedView, now: EpochSeconds) -> HTML {
        let findings = view.appFindings(alert, now: now)
        guard !findings.isEmpty else { return .empty }
        return tag(
            "div", [.class("apps")],
            [
                tag("h2", [], ["What the apps do with it"]),
                tag("ul", [], findings.map { tag("li", [], [tag("strong", [], [$0.app.rawValue]), " \($0.text)."]) }),
            ])
    }

    static func badges(_ alert: ServiceAlert, view: AlertFeedView) -> HTML {
        let state = view.visibility(alert)
        return .join([
            tag("span", [.class("badge \(state.rawValue)")], [state.rawValue]),
            alert.test ? HTML.join([" ", tag("span", [.class("badge test")], ["test"])]) : HTML.empty,
        ])
    }

    /// `UNKNOWN_CAUSE` → `Unknown cause`.
    static func humanize(_ name: String) -> String {
        let words = name.lowercased().split(separator: "_").joined(separator: " ")
        return words.prefix(1).uppercased() + words.dropFirst()
    }

    /// English names of the catalog's languages (a tag without one shows as itself).
    static let languageNames: [String: String] = [
        "es": "Spanish", "zh-Hans": "Chinese (Simplified)", "zh-Hant": "Chinese (Traditional)", "vi": "Vietnamese", "ko": "Korean",
        "tl": "Tagalog (Filipino)", "ru": "Russian", "ja": "Japanese", "pt": "Portuguese", "fr": "French", "de": "German", "ar": "Arabic",
        "so": "Somali", "am": "Amharic", "ti": "Tigrinya", "uk": "Ukrainian", "hi": "Hindi", "pa": "Punjabi", "ht": "Haitian Creole",
        "km": "Khmer", "fa": "Persian", "pl": "Polish", "it": "Italian",
    ]

    static func languageName(_ tag: String) -> String { languageNames[tag].map { "\($0) (\(tag))" } ?? tag }

    /// A device's locale by its language's name, the locale after it
    /// (`es-MX` → `Spanish (es-MX)`, `zh-Hant-TW` → `Chinese (Traditional) (zh-Hant-TW)`).
    static func localeName(_ locale: String) -> String {
        let parts = locale.split(whereSeparator: { $0 == "-" || $0 == "_" }).map(String.init)
        let candidates = parts.count > 1 ? [parts[0] + "-" + parts[1], parts[0]] : parts
        guard let name = candidates.lazy.compactMap({ languageNames[$0] }).first else { return locale }
        return "\(name) (\(locale))"
    }
}
