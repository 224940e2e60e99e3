import Foundation

/// Runs blocking work (libpq, a socket read, an SQLite backup) on a plain
/// thread of its own and awaits its result. Tests run many at once on a
/// small concurrency pool, whose threads the servers under test need: work
/// that blocks must never hold one. A closure that cannot throw needs no `try`.
public func offPool<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }.start()
    }
    return try result.get()
}
