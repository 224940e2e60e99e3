import CThreadName

#if canImport(Glibc)
import Glibc
#endif

/// Starts a detached OS thread for work that blocks (a database writer loop,
/// a blocking transfer) and so must stay off Swift's shared concurrency
/// pool. Foundation's `Thread` would do the same but pulls all of Foundation
/// (and ICU) into the binary.
public enum PlatformThread {
    /// Runs `body` on a new detached thread.
    public static func detach(name: String = "sidecar", _ body: @escaping @Sendable () -> Void) {
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
        pthread_detach(thread)
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
