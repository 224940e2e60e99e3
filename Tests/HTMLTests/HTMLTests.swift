import HTML
import Testing

/// The page builder escapes whatever it is given: text, attribute values,
/// URLs.
@Suite("HTML builder")
struct HTMLTests {
    @Test(arguments: [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("\"quoted\" & 'single'", "&quot;quoted&quot; &amp; &#39;single&#39;"),
        ("Ruta 2X desviada — ñ 漢字", "Ruta 2X desviada — ñ 漢字"),
        ("a\u{0}b", "a\u{FFFD}b"),
        ("'; DROP TABLE alerts; --", "&#39;; DROP TABLE alerts; --"),
    ])
    func textIsEscaped(input: String, expected: String) {
        #expect(tag("p", [], [input]).rendered == "<p>\(expected)</p>")
    }

    @Test func attributeValuesAreEscapedAndQuoted() {
        let hostile = "x\" onmouseover=\"alert(1)"
        #expect(
            tag("input", [Attribute("value", hostile), .flag("required", true), .flag("disabled", false)]).rendered
                == "<input value=\"x&quot; onmouseover=&quot;alert(1)\" required>")
    }

    @Test(arguments: [
        ("/admin/alerts/3", true), ("?page=2", true), ("#top", true), ("alerts/3", true), ("https://example.org/a?b=1", true),
        ("HTTP://example.org", true), ("javascript:alert(1)", false), (" JavaScript:alert(1)", false), ("data:text/html,<b>", false),
        ("vbscript:x", false), ("//evil.example", false), ("/\\evil.example", false), ("java\tscript:alert(1)", false),
        ("/search?q=a:b", true),
    ])
    func urlAttributesAcceptOnlyRelativeAndHTTP(url: String, safe: Bool) {
        let rendered = tag("a", [.href(url)], ["x"]).rendered
        #expect(rendered.hasPrefix("<a href=\"#\">") != safe, "\(rendered)")
    }

    @Test func anAppSchemeIsAllowedOnlyWhereTheProgramNamesIt() {
        let link = "onebusaway://view-stop?stopID=1_%3Cb%3E&regionID=1"
        #expect(
            tag("a", [.href(link, scheme: "onebusaway")], ["Open"]).rendered
                == "<a href=\"onebusaway://view-stop?stopID=1_%3Cb%3E&amp;regionID=1\">Open</a>")
        #expect(tag("a", [.href(link)], ["Open"]).rendered == "<a href=\"#\">Open</a>")
        #expect(tag("a", [.href("javascript:alert(1)", scheme: "onebusaway")], ["x"]).rendered == "<a href=\"#\">x</a>")
        #expect(tag("a", [.href("onebusaway://x\"onclick", scheme: "onebusaway")], ["x"]).rendered == "<a href=\"onebusaway://x&quot;onclick\">x</a>")
    }

    @Test func documentsNestAndSkipVoidEndTags() {
        let page = HTML.document(head: [tag("title", [], ["T<"])], body: [tag("br"), tag("p", [], [HTML(trusted: "&nbsp;"), 42])])
        #expect(page.rendered == "<!doctype html><html lang=\"en\"><head><title>T&lt;</title></head><body><br><p>&nbsp;42</p></body></html>")
    }
}
