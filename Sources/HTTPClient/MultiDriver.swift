import CCurl
import Dispatch
import FoundationEssentials
import Synchronization

/// Owns the multi handle; every curl call happens on its thread. The loop
/// uses libcurl's socket interface on an epoll set: libcurl says which
/// sockets to watch and when its next timeout is due, and each wake-up runs
/// only the transfers on the sockets that are ready.
final class MultiDriver: Sendable {
    private struct Queue {
        var waiting: [Transfer] = []
        /// Running transfers whose callers gave up (task cancellation).
        var cancelled: [Transfer] = []
        var stopped = false
        /// The eventfd was written since the driver last took the queue:
        /// that one wake-up brings it back for everything added after, so
        /// a burst of transfers costs one write (and one wake-up), not one
        /// each.
        var woken = false

        /// Wakes the driver unless a wake-up since it last looked is pending.
        mutating func wakeDriver(_ wake: Int32) {
            guard !woken else { return }
            woken = true
            sidecar_driver_wake(wake)
        }
    }
    private let queue = Mutex(Queue())
    private let multi: MultiHandle
    private let maxConcurrent: Int
    private let idleWaitMilliseconds: Int32
    /// The epoll set and the eventfd that wakes the loop (-1 if either could
    /// not be made: every transfer then fails at once).
    private let epoll: Int32
    private let wake: Int32
    /// libcurl's next timeout, kept by its timer callback (driver thread only).
    private let timer = DriverTimer()

    init(configuration: HTTPClient.Configuration) {
        multi = MultiHandle(curl_multi_init())
        maxConcurrent = max(configuration.maxConcurrentTransfers, 1)
        idleWaitMilliseconds = max(configuration.idleWaitMilliseconds, 1)
        var wake: Int32 = -1
        epoll = sidecar_driver_open(&wake)
        self.wake = wake
        _ = sidecar_curl_multi_setopt_long(multi.pointer, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = sidecar_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        _ = sidecar_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAXCONNECTS, max(configuration.maxConnectionsPerHost * 8, 32))
        _ = sidecar_curl_multi_setopt_socket(multi.pointer, curlWatchSocket, UnsafeMutableRawPointer(bitPattern: Int(epoll) + 1))
        _ = sidecar_curl_multi_setopt_timer(multi.pointer, curlSetTimer, Unmanaged.passUnretained(timer).toOpaque())
    }

    // The eventfd is written only under the queue's lock and only before
    // `stopped` is set; the driver closes it after seeing `stopped`, so a
    // late caller can never write into a descriptor number reused since.
    func enqueue(_ transfer: Transfer) {
        let accepted = queue.withLock { state -> Bool in
            guard !state.stopped, epoll >= 0 else { return false }
            state.waiting.append(transfer)
            state.wakeDriver(wake)
            return true
        }
        if !accepted { transfer.fail(HTTPClientError.shutDown) }
    }

    /// Ends a transfer its caller gave up on: failed with
    /// `CancellationError` now if it still waits, else at the driver's
    /// next wake-up (unless it finished first).
    func cancel(_ transfer: Transfer) {
        let waiting = queue.withLock { state -> Bool in
            if let index = state.waiting.firstIndex(where: { $0 === transfer }) {
                state.waiting.remove(at: index)
                return true
            }
            guard !state.stopped else { return false }
            state.cancelled.append(transfer)
            state.wakeDriver(wake)
            return false
        }
        if waiting { transfer.fail(CancellationError()) }
    }

    func stop() {
        queue.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            if wake >= 0 { sidecar_driver_wake(wake) }
        }
    }

    /// The driver loop: admit waiting transfers up to the limit, wait for a
    /// ready socket, libcurl's timeout or a wake-up, run what is ready, collect.
    func run() {
        var running: [ObjectIdentifier: Transfer] = [:]
        var fds = [Int32](repeating: 0, count: 64)
        var flags = [Int32](repeating: 0, count: 64)
        var active: Int32 = 0
        while true {
            let (admitted, cancelled, stopped) = queue.withLock { state -> ([Transfer], [Transfer], Bool) in
                let room = max(maxConcurrent - running.count, 0)
                let batch = Array(state.waiting.prefix(room))
                state.waiting.removeFirst(batch.count)
                // What is added from now on needs a wake-up; what stays
                // waiting for room is taken when a running transfer ends.
                state.woken = false
                defer { state.cancelled.removeAll() }
                return (batch, state.cancelled, state.stopped)
            }
            // Only a transfer still running is ended here: one that finished
            // has already answered its caller.
            for transfer in cancelled where running.removeValue(forKey: ObjectIdentifier(transfer)) != nil {
                if let handle = transfer.handle { curl_multi_remove_handle(multi.pointer, handle) }
                transfer.fail(CancellationError())
            }
            if stopped || epoll < 0 {
                queue.withLock { $0.stopped = true }
                for transfer in running.values {
                    if let handle = transfer.handle { curl_multi_remove_handle(multi.pointer, handle) }
                    transfer.fail(HTTPClientError.shutDown)
                }
                let leftovers = queue.withLock { state -> [Transfer] in
                    defer { state.waiting.removeAll() }
                    return state.waiting
                }
                (admitted + leftovers).forEach { $0.fail(HTTPClientError.shutDown) }
                curl_multi_cleanup(multi.pointer)
                if epoll >= 0 { close(epoll) }
                if wake >= 0 { close(wake) }
                return
            }
            for transfer in admitted {
                guard transfer.prepare(), let handle = transfer.handle else {
                    transfer.fail(HTTPClientError.transport(code: -1, message: "could not create a transfer"))
                    continue
                }
                curl_multi_add_handle(multi.pointer, handle)
                running[ObjectIdentifier(transfer)] = transfer
            }
            // Up to libcurl's next timeout; a second at most when it has none
            // (a wake-up comes through the eventfd anyway).
            let ready = sidecar_driver_wait(epoll, &fds, &flags, Int32(fds.count), timer.millisecondsLeft(cap: idleWaitMilliseconds))
            for index in 0..<Int(max(ready, 0)) {
                if fds[index] == wake {
                    sidecar_driver_drain(wake)
                } else {
                    curl_multi_socket_action(multi.pointer, fds[index], flags[index], &active)
                }
            }
            if timer.isDue {
                timer.deadline = nil  // libcurl sets the next one during the call
                curl_multi_socket_action(multi.pointer, CURL_SOCKET_TIMEOUT, 0, &active)
            }
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &remaining) {
                guard sidecar_curl_msg_done(message) != 0, let handle = sidecar_curl_msg_handle(message) else { continue }
                let code = sidecar_curl_msg_result(message)
                var context: UnsafeMutableRawPointer?
                _ = sidecar_curl_getinfo_pointer(handle, CURLINFO_PRIVATE, &context)
                curl_multi_remove_handle(multi.pointer, handle)
                guard let context else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                running.removeValue(forKey: ObjectIdentifier(transfer))
                transfer.finish(code)
            }
        }
    }
}

/// libcurl's next timeout as a monotonic deadline. Touched only on the
/// driver thread (the timer callback runs inside libcurl calls made there).
final class DriverTimer: @unchecked Sendable {
    var deadline: UInt64?

    var isDue: Bool { deadline.map { DispatchTime.now().uptimeNanoseconds >= $0 } ?? false }

    /// Milliseconds until the deadline (0 when due), at most `cap`.
    func millisecondsLeft(cap: Int32) -> Int32 {
        guard let deadline else { return cap }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return 0 }
        return Int32(min(UInt64(cap), (deadline - now + 999_999) / 1_000_000))
    }
}

/// libcurl's socket callback: watch the socket for what it asks
/// (`userp` carries the epoll descriptor plus one, so it is never nil).
func curlWatchSocket(
    _ easy: UnsafeMutableRawPointer?, _ socket: curl_socket_t, _ what: Int32, _ userp: UnsafeMutableRawPointer?,
    _ socketp: UnsafeMutableRawPointer?
) -> Int32 {
    guard let userp else { return -1 }
    return sidecar_driver_watch(Int32(Int(bitPattern: userp) - 1), socket, what)
}

/// libcurl's timer callback: -1 removes the timer, 0 means at once.
func curlSetTimer(_ multi: UnsafeMutableRawPointer?, _ timeoutMilliseconds: Int, _ userp: UnsafeMutableRawPointer?) -> Int32 {
    guard let userp else { return -1 }
    let timer = Unmanaged<DriverTimer>.fromOpaque(userp).takeUnretainedValue()
    timer.deadline =
        timeoutMilliseconds < 0 ? nil : DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMilliseconds) * 1_000_000
    return 0
}

/// The multi handle pointer, used only on the driver thread.
struct MultiHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    init(_ pointer: UnsafeMutableRawPointer?) { self.pointer = pointer! }
}
