import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Severity of a log line.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Parses `debug|info|warning|warn|error`.
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }

    var label: String {
        switch self {
        case .debug: return "DEBUG"
        case .info: return "INFO"
        case .warning: return "WARN"
        case .error: return "ERROR"
        }
    }
}

/// Where log lines go: standard error in production, memory in tests.
public protocol LogSink: Sendable {
    func write(_ line: String)
}

/// Writes each line with one write(2) so lines from several threads never
/// interleave.
public struct StandardErrorSink: LogSink {
    public init() {}
    public func write(_ line: String) {
        var text = line
        text.append("\n")
        text.withUTF8 { buffer in _ = Glibc.write(2, buffer.baseAddress, buffer.count) }
    }
}

/// Keeps lines in memory (tests read them back to check nothing secret is logged).
public final class MemorySink: LogSink {
    private let storage = Mutex<[String]>([])
    public init() {}
    public func write(_ line: String) { storage.withLock { $0.append(line) } }
    public var lines: [String] { storage.withLock { $0 } }
}

/// How log lines are written.
public enum LogFormat: String, Sendable, CaseIterable {
    /// `<time> <LEVEL> <message> key=value ...`, for people.
    case text
    /// One JSON object a line, for collectors: `time`, `level`, `message`,
    /// then each field as a string member, in a stable order.
    case json
}

/// A small structured logger. Callers pass fields explicitly; nothing about
/// a request is logged unless a caller names it, and callers never pass
/// tokens, `app_uid` or secrets.
public struct Logger: Sendable {
    public let level: LogLevel
    public let format: LogFormat
    public let sink: any LogSink

    public init(level: LogLevel = .info, format: LogFormat = .text, sink: any LogSink = StandardErrorSink()) {
        self.level = level
        self.format = format
        self.sink = sink
    }

    public func isEnabled(_ candidate: LogLevel) -> Bool { candidate >= level }

    public func log(_ candidate: LogLevel, _ message: String, _ fields: [(String, String)] = []) {
        guard candidate >= level else { return }
        let time = Date.now.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        sink.write(
            format == .json
                ? Self.jsonLine(time: time, level: candidate, message: message, fields: fields)
                : Self.textLine(time: time, level: candidate, message: message, fields: fields))
    }

    static func textLine(time: String, level: LogLevel, message: String, fields: [(String, String)]) -> String {
        var line = time
        line += " \(level.label) \(message)"
        for (key, value) in fields {
            line += " \(key)="
            guard value.utf8.contains(where: { $0 <= 0x20 || $0 == 0x22 || $0 == 0x3D || $0 == 0x5C || $0 == 0x7F }) else {
                line += value
                continue
            }
            // Quoted (logfmt), with quotes, backslashes and control
            // characters escaped: a value can never end the line and forge
            // another, and a JSON value reads back exactly.
            line += "\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": line += "\\\""
                case "\\": line += "\\\\"
                case "\n": line += "\\n"
                case "\r": line += "\\r"
                case "\t": line += "\\t"
                case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                    line += "\\x" + String(scalar.value, radix: 16)
                default: line.unicodeScalars.append(scalar)
                }
            }
            line += "\""
        }
        return line
    }

    /// The reserved keys; a field with one of these names is written as
    /// `field_<name>` so it can never shadow them.
    static let reservedKeys: Set<String> = ["time", "level", "message"]

    static func jsonLine(time: String, level: LogLevel, message: String, fields: [(String, String)]) -> String {
        var line = "{\"time\":"
        appendJSONString(time, to: &line)
        line += ",\"level\":"
        appendJSONString(level.label.lowercased(), to: &line)
        line += ",\"message\":"
        appendJSONString(message, to: &line)
        var seen: Set<String> = []
        for (key, value) in fields {
            var name = reservedKeys.contains(key) ? "field_" + key : key
            // A repeated key keeps both values, under distinct names.
            while !seen.insert(name).inserted { name += "_" }
            line += ","
            appendJSONString(name, to: &line)
            line += ":"
            appendJSONString(value, to: &line)
        }
        line += "}"
        return line
    }

    /// Appends `text` as a JSON string literal (RFC 8259 escapes).
    public static func appendJSONString(_ text: String, to line: inout String) {
        line += "\""
        var plainStart = text.utf8.startIndex
        for index in text.utf8.indices {
            let byte = text.utf8[index]
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
            line += String(Substring(text.utf8[plainStart..<index]))
            switch byte {
            case 0x22: line += "\\\""
            case 0x5C: line += "\\\\"
            case 0x0A: line += "\\n"
            case 0x0D: line += "\\r"
            case 0x09: line += "\\t"
            default:
                let hex = Array("0123456789abcdef")
                line += "\\u00" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0x0F)])
            }
            plainStart = text.utf8.index(after: index)
        }
        line += String(Substring(text.utf8[plainStart...]))
        line += "\""
    }

    public func debug(_ message: String, _ fields: [(String, String)] = []) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [(String, String)] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [(String, String)] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [(String, String)] = []) { log(.error, message, fields) }
}
