import Database

/// A store's schema changes by migration version: the DDL of the tables it
/// owns, kept beside its SQL.
struct Schema: Sendable {
    let owner: String
    let changes: [Int: [MigrationStatement]]

    init(_ owner: String, _ changes: [Int: [MigrationStatement]]) {
        self.owner = owner
        self.changes = changes
    }
}
