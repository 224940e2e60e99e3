import Synchronization

/// A signing secret the database keeps for every instance (the console's
/// secrets), read once and then held: form tokens and admin API cursors
/// are each signed with one.
final class StoredSecret: Sendable {
    let store: ConsoleStore
    let name: String
    private let cached = Mutex<[UInt8]?>(nil)

    init(store: ConsoleStore, name: String) {
        self.store = store
        self.name = name
    }

    func value() async throws -> [UInt8] {
        if let known = cached.withLock({ $0 }) { return known }
        let loaded = try await store.secret(named: name)
        cached.withLock { $0 = loaded }
        return loaded
    }
}
