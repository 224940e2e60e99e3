import Database
import Push

/// `PushToken`'s rule as SQL, for the stores that hold tokens: version 25
/// removes the tokens no provider issues (stored before the rule), and the
/// count of what it removes is told first.
enum TokenRuleSQL {
    /// True for a value of `column` outside the rule, in the engine's words.
    static func breaks(_ column: String, _ dialect: SQLDialect) -> String {
        let lengths = "length(\(column)) < \(PushToken.lengths.lowerBound) OR length(\(column)) > \(PushToken.lengths.upperBound)"
        switch dialect {
        case .sqlite: return "(\(lengths) OR \(column) GLOB '*[^A-Za-z0-9_:-]*')"
        case .postgresql: return "(\(lengths) OR \(column) ~ '[^A-Za-z0-9_:-]')"
        }
    }

    /// `DELETE FROM table WHERE <column breaks the rule>` for both engines.
    static func removal(_ table: String, _ column: String) -> MigrationStatement {
        .engines(
            sqlite: "DELETE FROM \(table) WHERE \(breaks(column, .sqlite))",
            postgresql: "DELETE FROM \(table) WHERE \(breaks(column, .postgresql))")
    }
}
