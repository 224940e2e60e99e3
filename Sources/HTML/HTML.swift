/// Server-rendered HTML that escapes by default.
///
/// Every page is built from `HTML` values. Text given as a `String` is
/// always escaped; attribute values are always escaped and quoted; element
/// and attribute names are `StaticString`, so only the program chooses them;
/// URL attributes accept only relative paths and http(s) URLs. There is no
/// way to splice a run-time string into markup unescaped: `HTML(trusted:)`
/// takes a `StaticString` only.
public struct HTML: Sendable, HTMLContent, Equatable {
    /// The markup.
    public private(set) var rendered: String

    init(rendered: String) { self.rendered = rendered }

    /// Markup written in the program's source (an SVG path, an entity).
    public init(trusted: StaticString) { rendered = trusted.description }

    public var html: HTML { self }

    /// Nothing.
    public static let empty = HTML(rendered: "")

    /// Escaped text.
    public static func text(_ text: String) -> HTML { HTML(rendered: escape(text)) }

    /// Several pieces one after another.
    public static func join(_ parts: [any HTMLContent]) -> HTML {
        var rendered = ""
        for part in parts { rendered += part.html.rendered }
        return HTML(rendered: rendered)
    }

    /// `<!doctype html>` and the `html` element.
    public static func document(language: String = "en", head: [any HTMLContent], body: [any HTMLContent], bodyAttributes: [Attribute] = []) -> HTML {
        HTML(rendered: "<!doctype html>") + tag("html", [.init("lang", language)], [tag("head", [], head), tag("body", bodyAttributes, body)])
    }

    public static func + (lhs: HTML, rhs: HTML) -> HTML { HTML(rendered: lhs.rendered + rhs.rendered) }

    /// `&`, `<`, `>`, `"` and `'` as character references: safe in text and
    /// in quoted attribute values alike.
    public static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            case "\u{0}": output += "\u{FFFD}"
            // Bidirectional embeddings, overrides and isolates (stored before
            // they were refused, or from elsewhere) would reorder what a page
            // shows: drawn as a visible replacement instead.
            case "\u{202A}"..."\u{202E}", "\u{2066}"..."\u{2069}": output += "\u{FFFD}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}

/// Anything that can stand in a page: `HTML` as it is, text escaped.
public protocol HTMLContent {
    var html: HTML { get }
}

extension String: HTMLContent {
    public var html: HTML { .text(self) }
}

extension Substring: HTMLContent {
    public var html: HTML { .text(String(self)) }
}

extension Int: HTMLContent {
    public var html: HTML { .text(String(self)) }
}

extension Int64: HTMLContent {
    public var html: HTML { .text(String(self)) }
}

extension Optional: HTMLContent where Wrapped: HTMLContent {
    public var html: HTML { self?.html ?? .empty }
}

extension Array: HTMLContent where Element == any HTMLContent {
    public var html: HTML { .join(self) }
}

/// One attribute. A nil value writes a boolean attribute (`disabled`).
public struct Attribute: Sendable {
    let name: StaticString
    let value: String?
    /// One more URL scheme this attribute may carry (an app's own, e.g.
    /// `onebusaway`), named in the program's source.
    let extraScheme: StaticString?

    public init(_ name: StaticString, _ value: String?) {
        self.name = name
        self.value = value
        self.extraScheme = nil
    }

    init(_ name: StaticString, _ value: String?, extraScheme: StaticString?) {
        self.name = name
        self.value = value
        self.extraScheme = extraScheme
    }

    /// A link that may also use an app's URL scheme (`onebusaway://...`).
    public static func href(_ value: String, scheme: StaticString) -> Attribute { Attribute("href", value, extraScheme: scheme) }

    /// A boolean attribute, present or not.
    public static func flag(_ name: StaticString, _ present: Bool) -> Attribute? { present ? Attribute(name, nil) : nil }

    public static func `class`(_ value: String) -> Attribute { Attribute("class", value) }
    public static func id(_ value: String) -> Attribute { Attribute("id", value) }
    public static func href(_ value: String) -> Attribute { Attribute("href", value) }

    /// Attributes whose value the browser follows as a URL.
    static let urlAttributes: Set<String> = ["href", "src", "action", "formaction", "poster", "cite", "data"]

    var rendered: String {
        let name = self.name.description
        guard var value else { return " " + name }
        if Self.urlAttributes.contains(name) && !Self.isSafeURL(value) && !hasExtraScheme(value) { value = "#" }
        return " \(name)=\"\(HTML.escape(value))\""
    }

    func hasExtraScheme(_ value: String) -> Bool {
        guard let extraScheme else { return false }
        return value.hasPrefix(extraScheme.description + "://") && !value.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7F }
    }

    /// Relative references (`/admin`, `?page=2`, `#top`, `alerts/3`) and
    /// http(s) URLs; never `javascript:`, `data:` or another scheme.
    static func isSafeURL(_ value: String) -> Bool {
        let trimmed = value.drop { $0 == " " || $0 == "\t" || $0 == "\n" }
        let lower = trimmed.lowercased()
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") { return true }
        // `//host` and `/\host` leave the site; browsers drop tabs and
        // newlines inside a URL, so they are refused rather than judged.
        if lower.hasPrefix("//") || lower.hasPrefix("/\\") || lower.contains(where: { $0 == "\t" || $0 == "\n" || $0 == "\r" }) { return false }
        // A scheme is the text before a colon that comes before any / ? #.
        guard let colon = lower.firstIndex(of: ":") else { return true }
        let beforeColon = lower[..<colon]
        return beforeColon.contains { "/?#".contains($0) }
    }
}

/// Element names that have no content and no end tag.
let voidElements: Set<String> = ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]

/// An element: `tag("p", [.class("note")], ["Saved ", name])`. Nil
/// attributes are skipped (see `Attribute.flag`).
public func tag(_ name: StaticString, _ attributes: [Attribute?] = [], _ children: [any HTMLContent] = []) -> HTML {
    let elementName = name.description
    var rendered = "<" + elementName
    for attribute in attributes { if let attribute { rendered += attribute.rendered } }
    rendered += ">"
    if voidElements.contains(elementName) { return HTML(rendered: rendered) }
    for child in children { rendered += child.html.rendered }
    rendered += "</" + elementName + ">"
    return HTML(rendered: rendered)
}
