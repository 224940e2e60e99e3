import CJansson
import FoundationEssentials

extension JSONValue {
    /// Parses a JSON document (any value at the top level) into a value,
    /// with the result Foundation's `JSONDecoder` gives, and its error when
    /// the document is refused.
    ///
    /// Jansson reads the document; Foundation's decoder is asked only when
    /// Jansson refuses it or reads it in a way that could differ: a whole
    /// number written as a real (`1.0`, `1e2`), a duplicate key (byte for
    /// byte, or canonically equal as Swift compares strings), nesting deeper
    /// than Foundation allows. So every answer, value or error, is the
    /// one Foundation gives (`JSONParsingTests` holds the two to the same
    /// results over a table of edge cases and random documents), with less
    /// work: the generic decoder built a thrown error for every kind it tried
    /// before the right one (three or four for a number or a boolean).
    public init<Bytes: Sequence<UInt8>>(parsing bytes: Bytes) throws {
        let fast = bytes.withContiguousStorageIfAvailable { Self.parsedByJansson(UnsafeRawBufferPointer($0)) }
        if let decided = fast ?? Array(bytes).withUnsafeBytes({ Self.parsedByJansson($0) }) {
            self = decided
        } else {
            self = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        }
    }

    /// Foundation's decoder refuses documents nested deeper than this.
    static let foundationDepthLimit = 512

    /// The document as Jansson reads it; nil when Jansson refuses it or the
    /// reading could differ from Foundation's (the caller then asks Foundation).
    static func parsedByJansson(_ buffer: UnsafeRawBufferPointer) -> JSONValue? {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return nil }
        var error = json_error_t()
        // Duplicate keys are refused here so that Foundation decides which wins.
        let flags = Int(JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
        guard let root = json_loadb(base.assumingMemoryBound(to: CChar.self), buffer.count, flags, &error) else { return nil }
        defer { json_decref(root) }
        return value(of: root, depth: 0)
    }

    private static func value(of node: UnsafeMutablePointer<json_t>, depth: Int) -> JSONValue? {
        switch node.pointee.type {
        case JSON_NULL: return .null
        case JSON_TRUE: return .bool(true)
        case JSON_FALSE: return .bool(false)
        case JSON_INTEGER: return .integer(Int64(json_integer_value(node)))
        case JSON_REAL:
            // Foundation reads a whole number as an integer whatever its
            // spelling; which spellings count is its decision.
            let number = json_real_value(node)
            guard number.rounded(.towardZero) != number else { return nil }
            return .double(number)
        case JSON_STRING:
            return .string(string(json_string_value(node), count: json_string_length(node)))
        case JSON_ARRAY:
            guard depth < foundationDepthLimit else { return nil }
            let count = json_array_size(node)
            var list: [JSONValue] = []
            list.reserveCapacity(count)
            for index in 0..<count {
                guard let element = json_array_get(node, index), let decoded = value(of: element, depth: depth + 1) else { return nil }
                list.append(decoded)
            }
            return .array(list)
        case JSON_OBJECT:
            guard depth < foundationDepthLimit else { return nil }
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(json_object_size(node))
            var iterator = json_object_iter(node)
            while let current = iterator {
                guard let member = json_object_iter_value(current), let decoded = value(of: member, depth: depth + 1) else { return nil }
                // Keys Jansson tells apart can be one Swift key ("é" and
                // "e\u{301}" are canonically equal): Foundation decides which wins.
                let key = string(json_object_iter_key(current), count: json_object_iter_key_len(current))
                guard members.updateValue(decoded, forKey: key) == nil else { return nil }
                iterator = json_object_iter_next(node, current)
            }
            return .object(members)
        default:
            return nil
        }
    }

    /// Jansson's strings are valid UTF-8 (it refuses anything else) and may
    /// hold U+0000, so the length comes from Jansson, not a terminator.
    private static func string(_ text: UnsafePointer<CChar>?, count: Int) -> String {
        guard let text else { return "" }
        return text.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
    }
}
