import Core
import FoundationEssentials

extension Date {
    /// Milliseconds since 1970, the OBA ecosystem's time unit (stored as integers).
    var epochMillis: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    init(epochMillis: Int64) { self.init(timeIntervalSince1970: Double(epochMillis) / 1000) }

    /// This instant in milliseconds, typed.
    var instantMillis: EpochMillis { EpochMillis(epochMillis) }

    /// This instant in whole seconds (rounded down), typed.
    var instantSeconds: EpochSeconds { instantMillis.seconds }
}
