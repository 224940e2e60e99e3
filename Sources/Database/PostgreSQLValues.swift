import FoundationEssentials

/// Parameters and columns in PostgreSQL's text format, typed so the same SQL
/// runs on SQLite and here.
extension PostgreSQLConnection {
    static let int8OID: UInt32 = 20
    static let float8OID: UInt32 = 701
    static let textOID: UInt32 = 25
    static let byteaOID: UInt32 = 17

    static func type(_ value: SQLValue) -> UInt32 {
        switch value {
        case .null: return 0  // inferred from where it is used
        case .integer: return int8OID
        case .real: return float8OID
        case .text: return textOID
        case .blob: return byteaOID
        }
    }

    /// A parameter in PostgreSQL's text format (nil for NULL).
    static func text(_ value: SQLValue) -> String? {
        switch value {
        case .null: return nil
        case .integer(let number): return String(number)
        case .real(let number): return "\(number)"
        case .text(let text): return text
        case .blob(let bytes):
            return "\\x" + bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        }
    }

    /// A column value from PostgreSQL's text format, by the column's type.
    static func value(_ text: String, type: UInt32) -> SQLValue {
        switch type {
        case 20, 21, 23, 26: return Int64(text).map(SQLValue.integer) ?? .text(text)
        case 700, 701, 1700: return Double(text).map(SQLValue.real) ?? .text(text)
        case 16: return .integer(text == "t" ? 1 : 0)
        case byteaOID:
            guard text.hasPrefix("\\x") else { return .blob(Array(text.utf8)) }
            var bytes: [UInt8] = []
            var index = text.utf8.index(text.utf8.startIndex, offsetBy: 2)
            let end = text.utf8.endIndex
            while index < end, let next = text.utf8.index(index, offsetBy: 2, limitedBy: end),
                let byte = UInt8(String(text[index..<next]), radix: 16)
            {
                bytes.append(byte)
                index = next
            }
            return .blob(bytes)
        default: return .text(text)
        }
    }
}
