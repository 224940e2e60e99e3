/// An instant as milliseconds since 1970: OneBusAway's unit (arrival
/// times, service dates, its `currentTime`) and the one registrations and
/// alarms keep. A type of its own so it cannot be mixed with seconds.
public struct EpochMillis: Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var value: Int64

    public init(_ value: Int64) { self.value = value }

    /// A literal is a number of milliseconds written where an instant is
    /// expected; a variable of another type still has to say its unit.
    public init(integerLiteral value: Int64) { self.value = value }

    /// The same instant in whole seconds, rounded down (before 1970 too).
    /// Total: any stored value, however absurd, converts without overflow.
    public var seconds: EpochSeconds {
        let quotient = value / 1000
        return EpochSeconds(value % 1000 < 0 ? quotient - 1 : quotient)
    }

    /// Milliseconds from `other` to this instant.
    public func millis(since other: EpochMillis) -> Int64 { value - other.value }

    /// Whole seconds from `other` to this instant, rounded down (so a
    /// departure 1 ms in the past is -1 s away, not 0).
    public func seconds(since other: EpochMillis) -> Int64 {
        let difference = value - other.value
        return difference >= 0 ? difference / 1000 : -((-difference + 999) / 1000)
    }

    public func adding(millis: Int64) -> EpochMillis { EpochMillis(value + millis) }

    /// This instant moved by a duration counted in seconds (rules count in
    /// seconds; registrations, alarms and Live Activities keep milliseconds).
    public func adding(seconds: Int64) -> EpochMillis { EpochMillis(value + seconds * 1000) }

    public static func < (lhs: EpochMillis, rhs: EpochMillis) -> Bool { lhs.value < rhs.value }

    /// The bare number, as every wire format, page and command writes it:
    /// an instant interpolated into text reads as it did when it was an Int64.
    public var description: String { String(value) }

    public init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int64.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// An instant as whole seconds since 1970: the unit of alerts (GTFS-realtime
/// active periods), surveys and the console.
public struct EpochSeconds: Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var value: Int64

    public init(_ value: Int64) { self.value = value }

    public init(integerLiteral value: Int64) { self.value = value }

    public var millis: EpochMillis { EpochMillis(value * 1000) }

    /// Seconds from `other` to this instant.
    public func seconds(since other: EpochSeconds) -> Int64 { value - other.value }

    public func adding(seconds: Int64) -> EpochSeconds { EpochSeconds(value + seconds) }

    public static func < (lhs: EpochSeconds, rhs: EpochSeconds) -> Bool { lhs.value < rhs.value }

    /// The bare number (see `EpochMillis.description`).
    public var description: String { String(value) }

    public init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int64.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
