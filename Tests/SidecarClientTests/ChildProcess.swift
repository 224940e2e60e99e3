import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, its output appended to a file.
///
/// Not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` and
/// copies each entry's name as a full 256-byte field, reading past the end of
/// the directory buffer. With the ~1,300 descriptors the parallel suites hold
/// open, that read crossed into an unmapped page and killed the whole test
/// process (SIGSEGV in `memmove`, CI run of stop 30).
final class ChildProcess: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let pid: pid_t
    private let lock = NSLock()
    private var reaped = false

    /// Starts `executable` with `arguments`; standard input is `/dev/null`,
    /// standard output and error are appended to `outputPath`. The child gets
    /// no other descriptor of ours (a socket another test holds must not stay
    /// open in it) and an empty signal mask.
    init(executable: String, arguments: [String], outputPath: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        Self.closeEveryOtherDescriptor(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard status == 0 else {
            throw Failure(description: "posix_spawn \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
    }

    /// glibc 2.34+ closes every descriptor from 3 up in the child in one action;
    /// looked up at run time because Swift's Glibc module does not declare it.
    private static func closeEveryOtherDescriptor(_ actions: inout posix_spawn_file_actions_t) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
        let addCloseFrom = unsafeBitCast(symbol, to: AddCloseFrom.self)
        _ = addCloseFrom(&actions, 3)
    }

    /// Whether the child has not exited yet (reaps it when it has).
    var isRunning: Bool {
        lock.withLock {
            guard !reaped else { return false }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result == -1 && errno == ECHILD) { reaped = true }
            return !reaped
        }
    }

    /// SIGTERM, then waits for the child to exit.
    func terminateAndWait() {
        lock.withLock {
            guard !reaped else { return }
            kill(pid, SIGTERM)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            reaped = true
        }
    }
}
