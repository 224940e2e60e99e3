/// RFC 3986 percent-encoding: every byte outside the unreserved set
/// (`A-Z a-z 0-9 - . _ ~`, plus any `keeping`) becomes `%XX`, so a value
/// survives whole as a path segment, a query item or a form field.
public enum PercentEncoding {
    public static func encode(_ text: String, keeping extra: String = "") -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        let kept = Array(extra.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                output.append(byte)
            case _ where kept.contains(byte):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
