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

    static func cell(_ text: String?) -> String {
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
        return "\"" + text.replacingQuotes() + "\""
    }

    static func field(_ value: Value) -> String {
        switch value {
        case .text(let text): return cell(text)
        case .number(let number): return number.map { $0.isFinite ? String($0) : "" } ?? ""
        case .integer(let number): return number.map(String.init) ?? ""
        case .boolean(let flag): return flag.map { $0 ? "true" : "false" } ?? ""
        case .instant(let instant, let zone): return instant.map { RegionTime.iso8601($0, zone) } ?? ""
        }
    }

    static func line(_ cells: [String?]) -> String { cells.map(cell).joined(separator: ",") }

    static func row(_ values: [Value]) -> String { values.map(field).joined(separator: ",") }
}

extension String {
    fileprivate func replacingQuotes() -> String {
        var output = ""
        for character in self { output += character == "\"" ? "\"\"" : String(character) }
        return output
    }
}
