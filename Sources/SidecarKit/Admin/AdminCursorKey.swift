import Synchronization

/// The key the admin API's cursors are signed with: one per database, kept
/// with the console's secrets so that every instance on one PostgreSQL signs
/// and checks alike, and loaded once.
final class AdminCursorKey: Sendable {
    let store: ConsoleStore
    private let cached = Mutex<[UInt8]?>(nil)

    init(store: ConsoleStore) { self.store = store }

    func key() async throws -> [UInt8] {
        if let known = cached.withLock({ $0 }) { return known }
        let loaded = try await store.secret(named: "admin-cursor")
        cached.withLock { $0 = loaded }
        return loaded
    }
}
