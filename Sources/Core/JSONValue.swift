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
    /// Compact JSON with sorted keys (stable output for payloads and tests).
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { [UInt8]($0) } ?? Array("null".utf8)
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
