/// Protocol buffers wire format (proto2), just what GTFS-realtime needs.
/// Written here because no Swift protobuf package can be fetched; the format
/// is small and fixed: varints, length-delimited fields and fixed64/32 skips.
struct ProtobufWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    mutating func tag(_ field: Int, wireType: UInt64) { varint(UInt64(field) << 3 | wireType) }

    /// A varint field (uint64, enum, bool).
    mutating func uint(_ field: Int, _ value: UInt64) {
        tag(field, wireType: 0)
        varint(value)
    }

    public mutating func bool(_ field: Int, _ value: Bool) { uint(field, value ? 1 : 0) }

    /// A length-delimited field (string, bytes, nested message).
    public mutating func bytes(_ field: Int, _ value: [UInt8]) {
        tag(field, wireType: 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    public mutating func string(_ field: Int, _ value: String) { bytes(field, Array(value.utf8)) }

    public mutating func message(_ field: Int, _ build: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        build(&nested)
        bytes(field, nested.bytes)
    }
}

/// A malformed protobuf message.
public struct ProtobufError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Reads fields one by one; unknown fields are skipped by the caller.
struct ProtobufReader {
    /// One field as read off the wire.
    public enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes(ArraySlice<UInt8>)
        case fixed32(UInt32)
    }

    let bytes: ArraySlice<UInt8>
    var offset: Int

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    mutating func readVarint() throws(ProtobufError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.endIndex else { throw ProtobufError("truncated varint") }
            let byte = bytes[offset]
            offset += 1
            if shift >= 64 { throw ProtobufError("varint too long") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// The next field number and value, or nil at the end.
    public mutating func next() throws(ProtobufError) -> (field: Int, value: Value)? {
        guard offset < bytes.endIndex else { return nil }
        let key = try readVarint()
        let field = Int(key >> 3)
        guard field > 0 else { throw ProtobufError("field number 0") }
        switch key & 7 {
        case 0: return (field, .varint(try readVarint()))
        case 1:
            guard bytes.endIndex - offset >= 8 else { throw ProtobufError("truncated fixed64") }
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            offset += 8
            return (field, .fixed64(value))
        case 2:
            let length = try readVarint()
            guard length <= UInt64(bytes.endIndex - offset) else { throw ProtobufError("length beyond the message") }
            let slice = bytes[offset..<offset + Int(length)]
            offset += Int(length)
            return (field, .bytes(slice))
        case 5:
            guard bytes.endIndex - offset >= 4 else { throw ProtobufError("truncated fixed32") }
            var value: UInt32 = 0
            for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
            offset += 4
            return (field, .fixed32(value))
        default:
            throw ProtobufError("unsupported wire type \(key & 7)")
        }
    }
}

extension ProtobufReader.Value {
    func string() throws(ProtobufError) -> String {
        guard case .bytes(let slice) = self else { throw ProtobufError("expected a string") }
        guard let text = String(validating: slice, as: UTF8.self) else { throw ProtobufError("a string that is not valid UTF-8") }
        return text
    }

    func uint() throws(ProtobufError) -> UInt64 {
        guard case .varint(let value) = self else { throw ProtobufError("expected a varint") }
        return value
    }

    func message() throws(ProtobufError) -> ProtobufReader {
        guard case .bytes(let slice) = self else { throw ProtobufError("expected a message") }
        return ProtobufReader(slice)
    }
}
