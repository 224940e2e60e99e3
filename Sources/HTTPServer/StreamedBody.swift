import CMicroHTTPD
import FoundationEssentials
import Synchronization

/// Writes a response body while it is being sent (a CSV export of a million
/// rows): the producer awaits `write` whenever a bounded buffer is full, so
/// memory stays flat however long the body is.
public final class BodyWriter: Sendable {
    /// Why a write failed: the client went away, or the server is stopping.
    public struct Stopped: Error, Sendable {}

    /// Bytes held before `write` waits for the client to take some.
    static let capacity = 256 * 1024

    private struct State {
        var chunks: [[UInt8]] = []
        /// Bytes of `chunks[0]` already handed to libmicrohttpd.
        var offset = 0
        var buffered = 0
        var finished = false
        var failed = false
        var stopped = false
        /// The connection is suspended waiting for bytes (the reader found none).
        var suspended = false
        /// libmicrohttpd freed the response (the connection may be gone).
        var released = false
        var waiter: CheckedContinuation<Void, any Error>?
    }

    private let state = Mutex(State())
    /// Set when the task writing the body has returned or thrown.
    let producerEnded = Atomic<Bool>(false)
    /// Set when a stopping server cut the body short.
    let cutShort = Atomic<Bool>(false)
    private let connection: ConnectionHandle
    private let isDraining: @Sendable () -> Bool

    init(connection: ConnectionHandle, isDraining: @escaping @Sendable () -> Bool) {
        self.connection = connection
        self.isDraining = isDraining
    }

    /// Queues bytes for the client; waits while the buffer is full. Throws
    /// `Stopped` once the client has gone or the server is shutting down.
    public func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        if isDraining() { stop() }
        try state.withLock { state throws(Stopped) in
            guard !state.stopped else { throw Stopped() }
            state.chunks.append(bytes)
            state.buffered += bytes.count
            wakeReader(&state)
        }
        while true {
            let mustWait = try state.withLock { state throws(Stopped) -> Bool in
                guard !state.stopped else { throw Stopped() }
                return state.buffered > Self.capacity
            }
            guard mustWait else { return }
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { state in
                    if state.stopped {
                        continuation.resume(throwing: Stopped())
                    } else if state.buffered <= Self.capacity {
                        continuation.resume()
                    } else {
                        state.waiter = continuation
                    }
                }
            }
        }
    }

    /// Ends the body: cleanly, or (`failed`) so the client can tell it was cut short.
    func finish(failed: Bool) {
        state.withLock { state in
            state.finished = true
            state.failed = failed
            wakeReader(&state)
        }
    }

    /// The client or the server is gone: a waiting or later write throws.
    func stop() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.stopped = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: Stopped())
    }

    /// The server is stopping and the client has not taken the whole body
    /// in time: what is buffered is dropped, a waiting or later write throws,
    /// and the client's next read ends the body in error (so it can tell the
    /// body was cut short, never mistake it for a whole one).
    func cutShortForShutdown() {
        cutShort.store(true, ordering: .releasing)
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.stopped = true
            state.chunks = []
            state.offset = 0
            state.buffered = 0
            state.finished = true
            state.failed = true
            if !state.released { wakeReader(&state) }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: Stopped())
    }

    /// libmicrohttpd freed the response: the connection is no longer ours to resume.
    func released() {
        state.withLock { $0.released = true }
        stop()
    }

    /// Called by libmicrohttpd for the next bytes: copies what is buffered,
    /// or suspends the connection until the producer writes or finishes.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        let (count, waiter) = state.withLock { state -> (Int, CheckedContinuation<Void, any Error>?) in
            guard !state.chunks.isEmpty else {
                if state.finished { return (state.failed ? -2 : -1, nil) }
                state.suspended = true
                MHD_suspend_connection(connection.pointer)
                return (0, nil)
            }
            var written = 0
            while written < max, !state.chunks.isEmpty {
                let chunk = state.chunks[0]
                let take = min(max - written, chunk.count - state.offset)
                chunk.withUnsafeBytes { bytes in
                    (buffer + written).withMemoryRebound(to: UInt8.self, capacity: take) {
                        $0.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + state.offset, count: take)
                    }
                }
                written += take
                state.offset += take
                if state.offset == chunk.count {
                    state.chunks.removeFirst()
                    state.offset = 0
                }
            }
            state.buffered -= written
            guard state.buffered <= Self.capacity, let waiter = state.waiter else { return (written, nil) }
            state.waiter = nil
            return (written, waiter)
        }
        waiter?.resume()
        return count
    }

    /// Resumes a connection the reader suspended (called under the lock, so
    /// a resume can never come before its suspend).
    private func wakeReader(_ state: inout State) {
        guard state.suspended else { return }
        state.suspended = false
        MHD_resume_connection(connection.pointer)
    }
}

/// libmicrohttpd's content reader for a streamed body.
func mhdStreamRead(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
    guard let cls, let buffer else { return -2 }
    return Unmanaged<BodyWriter>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

/// libmicrohttpd is done with a streamed response: the writer is released
/// and a producer still writing stops.
func mhdStreamFree(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    Unmanaged<BodyWriter>.fromOpaque(cls).takeRetainedValue().released()
}

/// The body reader of a 304: never called, since a 304 sends headers only;
/// if it were, the connection ends in error rather than send a body.
func mhdNoBody(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int { -2 }
