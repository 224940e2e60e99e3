import CThreadName

#if canImport(Glibc)
import Glibc
#endif

/// Starts a detached OS thread for work that blocks (a database writer loop,
/// a blocking transfer) and so must stay off Swift's shared concurrency
/// pool. Foundation's `Thread` would do the same but pulls all of Foundation
/// (and ICU) into the binary.
public enum PlatformThread {
    /// The calling thread's name as the system shows it (at most 15
    /// bytes of the name it was started with).
    public static var currentName: String {
        var buffer = [CChar](repeating: 0, count: 16)
        sidecar_current_thread_name(&buffer, UInt(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs `body` on a new detached thread.
    public static func detach(name: String = "sidecar", _ body: @escaping @Sendable () -> Void) {
        pthread_detach(create(name: name, body))
    }

    /// Runs `body` on a new thread that can be waited for to its very end.
    public static func start(name: String = "sidecar", _ body: @escaping @Sendable () -> Void) -> Joinable {
        Joinable(create(name: name, body))
    }

    private static func create(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        let box = Unmanaged.passRetained(ThreadBody(body: body, name: name)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { context in
                let body = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
                // What `top -H` and `ps -L` show: at most 15 bytes.
                sidecar_name_current_thread(body.name)
                body.body()
                return nil
            }, box)
        precondition(status == 0, "pthread_create failed with \(status)")
        return thread
    }

    /// A started thread. `join` returns once it has ended, its thread-local
    /// destructors included (a library's per-thread cleanup, such as
    /// OpenSSL's, must not race the process's exit).
    public final class Joinable: @unchecked Sendable {
        // Written once at creation; joined once.
        private let thread: pthread_t

        init(_ thread: pthread_t) { self.thread = thread }

        /// Blocks until the thread has ended. Call it once, off the shared
        /// concurrency pool.
        public func join() { pthread_join(thread, nil) }
    }
}

final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    let name: String
    init(body: @escaping @Sendable () -> Void, name: String) {
        self.body = body
        self.name = name
    }
}
