import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

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

/// A small structured logger: `<time> <LEVEL> <message> key=value ...`.
/// Callers pass fields explicitly; nothing about a request is logged unless a
/// caller names it, and callers never pass tokens, `app_uid` or secrets.
public struct Logger: Sendable {
    public let level: LogLevel
    public let sink: any LogSink

    public init(level: LogLevel = .info, sink: any LogSink = StandardErrorSink()) {
        self.level = level
        self.sink = sink
    }

    public func isEnabled(_ candidate: LogLevel) -> Bool { candidate >= level }

    public func log(_ candidate: LogLevel, _ message: String, _ fields: [(String, String)] = []) {
        guard candidate >= level else { return }
        var line = Date.now.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        line += " \(candidate.label) \(message)"
        for (key, value) in fields {
            line += " \(key)="
            line += value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) ? "\"" + String(value.map { $0 == "\"" ? "'" : $0 }) + "\"" : value
        }
        sink.write(line)
    }

    public func debug(_ message: String, _ fields: [(String, String)] = []) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [(String, String)] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [(String, String)] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [(String, String)] = []) { log(.error, message, fields) }
}
