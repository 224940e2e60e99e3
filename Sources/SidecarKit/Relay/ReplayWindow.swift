import Core
import Crypto
import Synchronization

/// The relay's replay window in memory: the digests of the sends seen in the
/// last `RelayProtocol.replayMillis`. A relay that runs alone (on SQLite)
/// keeps it here, so checking a send costs a hash and a set lookup instead
/// of a write through the database's single writer; relays that share a
/// PostgreSQL database share the window through `relay_replays` instead.
///
/// Bounded: at `capacity` live entries a new send is refused (the caller
/// answers 503) rather than forgetting one early, which would let a replay
/// through. The per-server and per-client send limits keep a relay far below
/// the default capacity.
final class ReplayWindow: Sendable {
    /// A send's SHA-256 digest, held inline (no allocation per entry).
    struct Digest: Hashable, Sendable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt64

        init(_ bytes: [UInt8]) {
            func word(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
            (a, b, c, d) = (word(0), word(8), word(16), word(24))
        }
    }

    /// What `remember` found.
    enum Outcome: Equatable, Sendable {
        case new
        case replay
        case full
    }

    private struct State {
        var seen: Set<Digest> = []
        /// Entries in the order they expire (each lives the same time, so
        /// that is the order they came in); `head` is the oldest.
        var queue: [(digest: Digest, expiresAt: EpochMillis)] = []
        var head = 0
    }

    let capacity: Int
    let lifetimeMillis: Int64
    /// When this window began (the relay's start): it cannot know the sends
    /// made before, so a send signed earlier is not taken (`covers`).
    let startedAt: EpochMillis
    private let state = Mutex(State())

    /// 1,000,000 entries: about 100 MB at most, 1,600 sends a second for
    /// ten minutes.
    init(capacity: Int = 1_000_000, lifetimeMillis: Int64 = RelayProtocol.replayMillis, startedAt: EpochMillis = 0) {
        self.capacity = capacity
        self.lifetimeMillis = lifetimeMillis
        self.startedAt = startedAt
    }

    /// False for a send signed before the window began: after a restart, a
    /// request captured just before it would otherwise pass as new while its
    /// timestamp is still fresh. Such a send is refused as `timestamp`, and
    /// the sender signs it again with a new time.
    func covers(signedAt ts: EpochMillis) -> Bool { ts >= startedAt }

    /// Records a send's replay key; `.replay` when it was seen within the window.
    func remember(_ replayKey: String, nowMillis: EpochMillis) -> Outcome {
        let digest = Digest(SHA256.digest(Array(replayKey.utf8)))
        return state.withLock { state in
            // Expired entries leave first, oldest first.
            while state.head < state.queue.count, state.queue[state.head].expiresAt <= nowMillis {
                state.seen.remove(state.queue[state.head].digest)
                state.head += 1
            }
            if state.head > 4096 && state.head * 2 > state.queue.count {
                state.queue.removeFirst(state.head)
                state.head = 0
            }
            guard !state.seen.contains(digest) else { return .replay }
            guard state.seen.count < capacity else { return .full }
            state.seen.insert(digest)
            state.queue.append((digest, nowMillis.adding(millis: lifetimeMillis)))
            return .new
        }
    }

    /// Live entries (tests, metrics).
    var count: Int { state.withLock { $0.seen.count } }
}
