/// An `INSERT` of one row, written so that rows of the same statement sent
/// one after another inside one PostgreSQL write transaction go out as one
/// multi-row statement: one executor start-up, one set-up of the table's
/// constraints and one answer for all of them, where a statement per row
/// cost PostgreSQL's backend about a third of its time per row.
///
/// `head` is `INSERT INTO table (columns)`; `tail` follows the `VALUES`
/// list (an `ON CONFLICT` clause, or empty). A row binds `columnCount`
/// values in the columns' order.
public struct RowInsert: Sendable, Equatable {
    public let head: String
    public let columnCount: Int
    public let tail: String
    /// The one-row statement, built once.
    public let single: String

    /// Rows one statement carries, at most (PostgreSQL allows 65,535
    /// parameters a statement; a batch of writes has far fewer rows).
    public static let maxRows = 64

    public init(head: String, columnCount: Int, tail: String) {
        self.head = head
        self.columnCount = max(columnCount, 1)
        self.tail = tail
        single = Self.text(head: head, columnCount: self.columnCount, tail: tail, rows: 1)
    }

    /// Refuses a row of the wrong width before anything is sent: rows sent
    /// together would otherwise shift into each other's columns.
    public func checkWidth(of values: [SQLValue]) throws(DatabaseError) {
        guard values.count == columnCount else {
            throw .failed(code: 0, message: "a row of \(values.count) values for \(columnCount) columns: \(head)")
        }
    }

    /// The statement for `rows` rows: `VALUES ($1, ...), ($n+1, ...)`.
    public func sql(rows: Int) -> String {
        rows == 1 ? single : Self.text(head: head, columnCount: columnCount, tail: tail, rows: rows)
    }

    private static func text(head: String, columnCount: Int, tail: String, rows: Int) -> String {
        let values = (0..<max(rows, 1)).map { row in
            "(" + (1...columnCount).map { "$\(row * columnCount + $0)" }.joined(separator: ", ") + ")"
        }
        return head + " VALUES " + values.joined(separator: ", ") + (tail.isEmpty ? "" : " " + tail)
    }

    public static func == (left: RowInsert, right: RowInsert) -> Bool {
        left.columnCount == right.columnCount && left.head == right.head && left.tail == right.tail
    }
}
