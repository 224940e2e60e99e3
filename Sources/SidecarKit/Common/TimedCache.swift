import Synchronization

/// A small in-memory cache whose entries expire after a fixed time on the
/// injected clock (weather: 30 minutes, vehicle fleets: 30, searches: 5).
final class TimedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: (value: Value, expires: Double)]>([:])
    let lifetimeSeconds: Double
    let maxEntries: Int
    private let now: @Sendable () -> Double

    init(lifetimeSeconds: Double, maxEntries: Int = 10_000, now: @escaping @Sendable () -> Double) {
        self.lifetimeSeconds = lifetimeSeconds
        self.maxEntries = maxEntries
        self.now = now
    }

    func value(_ key: Key) -> Value? {
        let time = now()
        return entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            if entry.expires <= time {
                entries.removeValue(forKey: key)
                return nil
            }
            return entry.value
        }
    }

    func store(_ value: Value, for key: Key) {
        let time = now()
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= maxEntries {
                entries = entries.filter { $0.value.expires > time }
                if entries.count >= maxEntries {
                    // Full of live entries: the oldest tenth goes (every
                    // entry lives as long, so the oldest expire first).
                    let cut = entries.values.map(\.expires).sorted()[max(maxEntries / 10, 1) - 1]
                    entries = entries.filter { $0.value.expires > cut }
                }
            }
            entries[key] = (value, time + lifetimeSeconds)
        }
    }
}
