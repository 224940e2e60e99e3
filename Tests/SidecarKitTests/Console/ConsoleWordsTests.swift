import Testing

@testable import SidecarKit

/// Languages by name, the code after it, wherever the console shows a device's locale.
@Suite("Console: words an editor understands")
struct ConsoleWordsTests {
    @Test(arguments: [
        ("es-MX", "Spanish (es-MX)"), ("es", "Spanish (es)"), ("zh-Hant-TW", "Chinese (Traditional) (zh-Hant-TW)"), ("fr_CA", "French (fr_CA)"),
        ("xx-YY", "xx-YY"),
    ])
    func aLocaleIsShownByItsLanguagesName(_ locale: String, _ shown: String) {
        #expect(AlertWords.localeName(locale) == shown)
    }
}
