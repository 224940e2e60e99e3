import Core

/// Spreadsheet-safe CSV: text quoted, and a text cell a spreadsheet would run
/// as a formula (`=`, `+`, `-`, `@`, tab, carriage return) prefixed with `'`;
/// numbers bare (a longitude of -122.3 is a number, not a formula); times in
/// ISO 8601 with the region's offset.
enum CSV {
    /// One value of a row, by kind.
    enum Value {
        case text(String?)
        case number(Double?)
        case integer(Int64?)
        case boolean(Bool?)
        /// Epoch seconds, written in `zone` with its offset (`2026-12-01T08:00:00-08:00`).
        case instant(EpochSeconds?, ZoneInfo)
    }

    /// How a header row names its columns: by the admin API's field names
    /// (scripts read these), or in an editor's words with each time column
    /// naming its zone (the console's downloads, opened in a spreadsheet).
    enum HeaderNaming: Sendable { case codes, names }

    /// A column: its code, and its name for people.
    struct Column: Sendable {
        let code: String
        let name: String
        /// Holds instants, written in the region's zone.
        var isTime = false

        init(_ code: String, _ name: String, time: Bool = false) {
            self.code = code
            self.name = name
            isTime = time
        }
    }

    /// The header row, named as `naming` says.
    static func header(_ columns: [Column], _ naming: HeaderNaming, zone: ZoneInfo) -> String {
        line(
            columns.map { column in
                switch naming {
                case .codes: return column.code
                case .names: return column.isTime ? "\(column.name) (\(zone.identifier))" : column.name
                }
            })
    }

    /// When a text cell is quoted: always (Sidecar's own downloads), or only
    /// where a CSV reader needs it, as Go's `encoding/csv` writes (the Go
    /// reference's downloads under `/api/admin/v1`): a cell holding a comma,
    /// a quote, a line break, or starting with white space. Numbers follow:
    /// in Go's style, the shortest decimal that reads back exactly, never in
    /// exponent form (`47.6`, `47`, `0.00001`).
    enum Quoting: Sendable { case always, whereNeeded }

    static func cell(_ text: String?, quoting: Quoting = .always) -> String {
        guard var text else { return "" }
        if let first = text.first, "=+-@\t\r".contains(first) { text = "'" + text }
        // Bidirectional embeddings, overrides and isolates would show the
        // cell reordered in a spreadsheet: replaced, as on console pages.
        if FieldLimits.containsBidiControls(text) {
            text = String(
                String.UnicodeScalarView(
                    text.unicodeScalars.map {
                        (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) ? "\u{FFFD}" : $0
                    }))
        }
        if quoting == .whereNeeded && !needsQuotes(text) { return text }
        return "\"" + text.replacingQuotes() + "\""
    }

    /// Go's `encoding/csv` rule for quoting a cell.
    static func needsQuotes(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first else { return false }
        if text == "\\." || text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) { return true }
        return first.properties.isWhitespace
    }

    /// The shortest decimal that reads back as `value`, in fixed notation
    /// (`47.6`, `47`, `0.00001`, `-122.3`), as Go's `FormatFloat(v, 'f', -1, 64)`.
    static func shortestFixed(_ value: Double) -> String {
        var text = "\(value)"
        var exponent = 0
        if let marker = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(text[text.index(after: marker)...].drop { $0 == "+" }) ?? 0
            text = String(text[..<marker])
        }
        let negative = text.hasPrefix("-")
        if negative { text.removeFirst() }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let whole = String(parts[0])
        let fraction = parts.count > 1 ? String(parts[1].reversed().drop { $0 == "0" }.reversed()) : ""
        var digits = Array(whole + fraction)
        var point = whole.count + exponent
        while digits.count > 1, digits.first == "0" {
            digits.removeFirst()
            point -= 1
        }
        let body: String
        if point <= 0 {
            body = "0." + String(repeating: "0", count: -point) + String(digits)
        } else if point >= digits.count {
            body = String(digits) + String(repeating: "0", count: point - digits.count)
        } else {
            body = String(digits[..<point]) + "." + String(digits[point...])
        }
        return (negative ? "-" : "") + (body == "0." ? "0" : body)
    }

    static func field(_ value: Value, quoting: Quoting = .always) -> String {
        switch value {
        case .text(let text): return cell(text, quoting: quoting)
        case .number(let number):
            guard let number, number.isFinite else { return "" }
            return quoting == .whereNeeded ? shortestFixed(number) : String(number)
        case .integer(let number): return number.map(String.init) ?? ""
        case .boolean(let flag): return flag.map { $0 ? "true" : "false" } ?? ""
        case .instant(let instant, let zone): return instant.map { RegionTime.iso8601($0, zone) } ?? ""
        }
    }

    static func line(_ cells: [String?], quoting: Quoting = .always) -> String {
        cells.map { cell($0, quoting: quoting) }.joined(separator: ",")
    }

    static func row(_ values: [Value], quoting: Quoting = .always) -> String {
        values.map { field($0, quoting: quoting) }.joined(separator: ",")
    }
}

extension String {
    fileprivate func replacingQuotes() -> String {
        var output = ""
        for character in self { output += character == "\"" ? "\"\"" : String(character) }
        return output
    }
}
