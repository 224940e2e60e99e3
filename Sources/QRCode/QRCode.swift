import CQRencode

/// A QR code symbol made by libqrencode, drawn as SVG or PNG (zlib for the
/// PNG's compression and checksums).
public struct QRCode: Sendable, Equatable {
    /// Modules per side.
    public let size: Int
    /// Row-major; true is a dark module.
    public let modules: [Bool]

    public enum Failure: Error, Equatable { case tooLong, encodingFailed }

    /// Encodes text (UTF-8, byte mode) at error-correction level M, the
    /// level posters use: a quarter of the symbol can be dirty or torn.
    public init(_ text: String) throws(Failure) {
        guard text.utf8.count <= 2000 else { throw .tooLong }
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { throw .encodingFailed }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        var modules = [Bool](repeating: false, count: width * width)
        for index in 0..<(width * width) { modules[index] = code.pointee.data[index] & 1 == 1 }
        size = width
        self.modules = modules
    }

    public func isDark(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// An SVG path drawing every dark module as a unit square, offset by the
    /// quiet zone (`margin` modules).
    public func svgPath(margin: Int = 4) -> String {
        var path = ""
        for y in 0..<size {
            var x = 0
            while x < size {
                guard isDark(x: x, y: y) else {
                    x += 1
                    continue
                }
                var run = 1
                while x + run < size && isDark(x: x + run, y: y) { run += 1 }
                path += "M\(x + margin) \(y + margin)h\(run)v1h-\(run)z"
                x += run
            }
        }
        return path
    }

    /// A standalone SVG document (black on white, a 4-module quiet zone).
    public func svg(margin: Int = 4) -> String {
        let side = size + 2 * margin
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(side) \(side)\" width=\"\(side * 8)\" height=\"\(side * 8)\" "
            + "shape-rendering=\"crispEdges\"><rect width=\"\(side)\" height=\"\(side)\" fill=\"#fff\"/>"
            + "<path d=\"\(svgPath(margin: margin))\" fill=\"#000\"/></svg>\n"
    }

    /// A grayscale PNG, `scale` pixels a module, with a quiet zone.
    public func png(scale: Int = 8, margin: Int = 4) -> [UInt8] {
        let side = (size + 2 * margin) * scale
        // Each row: filter byte 0, then one byte a pixel (0 black, 255 white).
        var raw = [UInt8]()
        raw.reserveCapacity((side + 1) * side)
        for row in 0..<side {
            raw.append(0)
            let y = row / scale - margin
            for column in 0..<side {
                let x = column / scale - margin
                let dark = x >= 0 && y >= 0 && x < size && y < size && isDark(x: x, y: y)
                raw.append(dark ? 0 : 255)
            }
        }
        var compressedLength = compressBound(uLong(raw.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedLength))
        _ = compress2(&compressed, &compressedLength, raw, uLong(raw.count), 9)
        compressed.removeLast(compressed.count - Int(compressedLength))

        func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 255), UInt8(value >> 8 & 255), UInt8(value & 255)] }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + data
            let checksum = typed.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
            return bigEndian(UInt32(data.count)) + typed + bigEndian(checksum)
        }
        let header = bigEndian(UInt32(side)) + bigEndian(UInt32(side)) + [8, 0, 0, 0, 0]  // 8-bit grayscale
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", compressed) + chunk("IEND", [])
    }
}
