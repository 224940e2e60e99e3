import Foundation
import Testing

@testable import SidecarKit

/// The Go reference's CSV downloads quote a cell only where Go's
/// `encoding/csv` does and write numbers as `strconv.FormatFloat(v, 'f', -1,
/// 64)` does; the formula guard is the same as every Sidecar CSV's.
@Suite("Admin API: the Go reference's CSV cells")
struct ReferenceCSVTests {
    @Test(
        arguments: [
            ("plain", "plain"), ("", ""), ("a,b", "\"a,b\""), ("say \"hi\"", "\"say \"\"hi\"\"\""), ("two\nlines", "\"two\nlines\""),
            ("cr\rhere", "\"cr\rhere\""), (" leading space", "\" leading space\""), ("\u{00A0}no-break space", "\"\u{00A0}no-break space\""),
            ("trailing space ", "trailing space "), ("\\.", "\"\\.\""), ("=cmd", "'=cmd"), ("-1", "'-1"), ("@x,y", "\"'@x,y\""),
            ("\tTab", "'\tTab"), ("café", "café"),
        ] as [(String, String)])
    func cellsAreQuotedOnlyWhereNeeded(_ text: String, _ written: String) {
        #expect(CSV.cell(text, quoting: .whereNeeded) == written)
    }

    @Test(
        arguments: [
            (47.6, "47.6"), (47.0, "47"), (-122.3, "-122.3"), (0.0, "0"), (0.00001, "0.00001"), (1.5e-7, "0.00000015"),
            (1e21, "1000000000000000000000"), (123456.789, "123456.789"), (-0.5, "-0.5"), (47.60621, "47.60621"),
        ] as [(Double, String)])
    func numbersAreShortestFixed(_ value: Double, _ written: String) {
        #expect(CSV.shortestFixed(value) == written)
        #expect(Double(CSV.shortestFixed(value)) == value)
    }

    @Test func sidecarsOwnDownloadsStillQuoteEveryTextCell() {
        #expect(CSV.row([.text("plain"), .number(47.0)]) == "\"plain\",47.0")
        #expect(CSV.row([.text("plain"), .number(47.0)], quoting: .whereNeeded) == "plain,47")
    }
}
