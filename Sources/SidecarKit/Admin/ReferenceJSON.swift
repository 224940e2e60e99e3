import Core
import FoundationEssentials

/// JSON as the Go reference sidecar writes it (Go's `json.Encoder`):
/// object members in the order its structs declare them, compact, with
/// `<`, `>`, `&`, U+2028 and U+2029 escaped, and a trailing newline.
/// Clients compare values, not bytes, but a script that greps or diffs
/// the reference's output keeps working.
indirect enum ReferenceJSON: Sendable {
    case object([(String, ReferenceJSON)])
    case array([ReferenceJSON])
    case value(JSONValue)

    static let null = ReferenceJSON.value(.null)
    static func string(_ text: String) -> ReferenceJSON { .value(.string(text)) }
    static func integer(_ number: Int64) -> ReferenceJSON { .value(.integer(number)) }
    static func integer(_ number: Int) -> ReferenceJSON { .value(.integer(Int64(number))) }
    static func bool(_ flag: Bool) -> ReferenceJSON { .value(.bool(flag)) }
    static func optional(_ text: String?) -> ReferenceJSON { text.map(string) ?? .null }

    /// An instant in RFC 3339, UTC, to the second (`2026-08-15T21:00:00Z`); null when absent.
    static func time(_ instant: EpochSeconds?) -> ReferenceJSON { .value(AdminJSON.time(instant)) }

    /// An instant as the reference's survey family writes it, always with milliseconds (`…T21:00:00.000Z`).
    static func millisecondTime(_ instant: EpochSeconds?) -> ReferenceJSON {
        guard case .string(let text) = AdminJSON.time(instant) else { return .null }
        return .string(text.hasSuffix("Z") ? String(text.dropLast()) + ".000Z" : text)
    }

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        write(to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private func write(to bytes: inout [UInt8]) {
        switch self {
        case .value(let value):
            // Structure never holds these characters, so escaping them in
            // the encoded value touches strings only.
            var encoded: [UInt8] = []
            for byte in value.encoded() {
                switch byte {
                case UInt8(ascii: "<"): encoded += Array("\\u003c".utf8)
                case UInt8(ascii: ">"): encoded += Array("\\u003e".utf8)
                case UInt8(ascii: "&"): encoded += Array("\\u0026".utf8)
                default: encoded.append(byte)
                }
            }
            Self.escapeLineSeparators(&encoded)
            bytes += encoded
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, (name, member)) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONValue.writeString(name, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                member.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// U+2028 and U+2029 (E2 80 A8/A9) as `\u2028` and `\u2029`, as Go writes them.
    private static func escapeLineSeparators(_ bytes: inout [UInt8]) {
        guard bytes.contains(0xE2) else { return }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if index + 2 < bytes.count, bytes[index] == 0xE2, bytes[index + 1] == 0x80, bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 {
                out += Array((bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        bytes = out
    }
}
