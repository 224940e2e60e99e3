import FoundationEssentials

/// A decoded JSON value. Request bodies decode into this so that the parameter
/// bag can tell a JSON `null` (absent) from a string, and keep numbers and
/// booleans as what the client sent.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The value as a parameter string, the way a form field would carry it:
    /// numbers in their shortest decimal form, booleans as `true`/`false`.
    /// Arrays, objects and `null` have no scalar form and return nil.
    public var scalarText: String? {
        switch self {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .double(let number):
            if number.rounded(.towardZero) == number, abs(number) < 1e15 {
                return String(Int64(number)) + ".0"
            }
            return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .null, .array, .object: return nil
        }
    }
}

extension JSONValue: Decodable {
    /// Each failed attempt below throws (and builds) a decoding error, so
    /// the kinds are tried most common first: strings, then objects and
    /// arrays, then the scalars. JSONDecoder never converts between kinds,
    /// so the order changes the cost, never the result (Int64 still comes
    /// before Double, so whole numbers stay integers).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let members = try? container.decode([String: JSONValue].self) {
            self = .object(members)
        } else if let list = try? container.decode([JSONValue].self) {
            self = .array(list)
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int64.self) {
            self = .integer(number)
        } else {
            self = .double(try container.decode(Double.self))
        }
    }
}

extension JSONValue: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let number): try container.encode(number)
        case .double(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let list): try container.encode(list)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSONValue {
    /// Compact JSON with sorted keys (stable output for payloads and tests),
    /// byte for byte what `JSONEncoder` with `.sortedKeys` and
    /// `.withoutEscapingSlashes` writes, including "null" for a value holding
    /// a number JSON cannot carry (infinity, NaN). Written directly: every push
    /// payload and Live Activity state is encoded here, and the generic
    /// encoder's boxing cost more than the push's own work (`JSONValueTests`
    /// holds the two to the same bytes).
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        guard write(to: &bytes) else { return Array("null".utf8) }
        return bytes
    }

    /// Appends the value; false when it holds a number JSON cannot carry.
    private func write(to bytes: inout [UInt8]) -> Bool {
        switch self {
        case .null: bytes += Self.nullBytes
        case .bool(let flag): bytes += flag ? Self.trueBytes : Self.falseBytes
        case .integer(let number): bytes += Array(String(number).utf8)
        case .double(let number):
            guard number.isFinite else { return false }
            var text = number.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            bytes += Array(text.utf8)
        case .string(let text): Self.writeString(text, to: &bytes)
        case .array(let list):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in list.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                guard element.write(to: &bytes) else { return false }
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                guard members[key]!.write(to: &bytes) else { return false }
            }
            bytes.append(UInt8(ascii: "}"))
        }
        return true
    }

    private static let nullBytes = Array("null".utf8), trueBytes = Array("true".utf8), falseBytes = Array("false".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A JSON string: `"` and `\` escaped, control characters as `JSONEncoder`
    /// writes them (`\n`, `\t`, `\r`, `\b`, `\f`, else `\u00XX`), the rest as UTF-8.
    public static func writeString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0..<0x20:
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")]
                bytes += [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// Indented JSON with sorted keys, for people to read and edit.
    public func prettyEncoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return (try? encoder.encode(self)).map { [UInt8]($0) } ?? Array("null".utf8)
    }
}
