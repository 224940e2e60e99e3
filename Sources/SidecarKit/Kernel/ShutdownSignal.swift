import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT, caught from the moment `listen()` is called (kept out
/// of main.swift so the handler is not main-actor isolated).
///
/// A server listens before it prepares and starts, not when it is ready to
/// wait: a supervisor or test that stops it right after "listening" is
/// logged must not land where the signal is already ignored but not yet
/// caught, which lost the stop and left the process running.
final class ShutdownSignal: Sendable {
    private let signals: AsyncStream<Int32>
    private let sources: SignalSources

    private init(signals: AsyncStream<Int32>, sources: SignalSources) {
        self.signals = signals
        self.sources = sources
    }

    /// Starts catching SIGTERM and SIGINT now; a signal that arrives before
    /// `wait()` is kept for it.
    static func listen() -> ShutdownSignal {
        signal(SIGPIPE, SIG_IGN)
        var caught: [any DispatchSourceSignal] = []
        let signals = AsyncStream<Int32>(bufferingPolicy: .bufferingOldest(4)) { continuation in
            for number in [SIGTERM, SIGINT] {
                // The default action (exit) is turned off first, as a dispatch
                // source requires; this happens before anything is logged, so
                // no one waiting for "listening" can signal into the gap.
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { continuation.yield(number) }
                source.resume()
                caught.append(source)
            }
        }
        return ShutdownSignal(signals: signals, sources: SignalSources(caught))
    }

    /// Returns the first of SIGTERM/SIGINT to have arrived since `listen()`.
    func wait() async -> Int32 {
        defer { sources.cancel() }
        for await number in signals { return number }
        return SIGTERM
    }
}

/// Keeps the signal sources alive until the wait ends.
final class SignalSources: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
    func cancel() { sources.forEach { $0.cancel() } }
}
