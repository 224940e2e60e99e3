import CPostgres
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Reading what PostgreSQL answers, and what a failure means: the pipeline's
/// results in the order they were sent, the socket waits bounded by the
/// statement timeout, and the typed errors a connection gives up on.
extension PostgreSQLConnection {
    // MARK: Reading results

    /// Reads back the pipeline's commands in order: up to and including the
    /// first `.wanted` (whose successful result is returned, for the caller
    /// to clear), or all of them. A failure is recorded, not thrown: the
    /// caller throws it once the commands it owes are read. A lost connection
    /// throws at once.
    func readPipeline(upToWanted: Bool) throws(DatabaseError) -> OpaquePointer? {
        try flushOutput()
        while var open = pipeline, !open.commands.isEmpty {
            let command = open.commands.removeFirst()
            pipeline = open
            if case .sync = command {
                try readSync()
                continue
            }
            let result = try readCommand()
            let kind = sidecar_pq_result_kind(result)
            let succeeded = kind >= 0
            if !succeeded && pipeline?.failure == nil {
                let error = kind == -2 ? DatabaseError.failed(code: 0, message: "skipped after an earlier failure") : failure(result)
                if broken {
                    PQclear(result)
                    throw error
                }
                pipeline?.failure = error
            }
            switch command {
            case .prepare(let key, let name):
                if !succeeded && statements[key] == name { statements[key] = nil }
                PQclear(result)
            case .wanted where upToWanted:
                guard succeeded else {
                    PQclear(result)
                    return nil
                }
                return result
            default:
                PQclear(result)
            }
        }
        return nil
    }

    /// Every result of one command (libpq ends each with NULL, in a
    /// pipeline or not): the first failure, else the last result.
    func readCommand() throws(DatabaseError) -> OpaquePointer? {
        var kept: OpaquePointer?
        while true {
            do { try waitUntilReadable() } catch {
                PQclear(kept)
                throw error
            }
            guard let result = PQgetResult(connection) else { return kept }
            if kept == nil || sidecar_pq_result_kind(kept) >= 0 {
                PQclear(kept)
                kept = result
            } else {
                PQclear(result)
            }
        }
    }

    /// The Sync's own result (not followed by NULL).
    func readSync() throws(DatabaseError) {
        for _ in 0..<8 {
            try waitUntilReadable()
            guard let result = PQgetResult(connection) else { continue }
            let kind = sidecar_pq_result_kind(result)
            PQclear(result)
            if kind == 2 { return }
        }
        throw markBroken(.unavailable("PostgreSQL at \(location) did not end the pipeline"))
    }

    /// Waits for the answer to what was just sent outside a pipeline: every
    /// result is read (the first failure wins, else the last result is
    /// returned).
    func awaitResult() throws(DatabaseError) -> OpaquePointer? {
        try flushOutput()
        return try readCommand()
    }

    /// Sends everything libpq has buffered.
    func flushOutput() throws(DatabaseError) {
        while true {
            let flushed = PQflush(connection)
            if flushed == 0 { return }
            if flushed < 0 { throw failure(nil) }
            try waitFor(Int16(POLLIN | POLLOUT))
            if PQconsumeInput(connection) == 0 { throw failure(nil) }
        }
    }

    /// Reads input until libpq has a whole result. When the server sends
    /// nothing for the statement timeout (a large result that keeps
    /// arriving is fine), the connection is marked broken and the call fails
    /// as unavailable.
    func waitUntilReadable() throws(DatabaseError) {
        while PQisBusy(connection) == 1 {
            try waitFor(Int16(POLLIN))
            if PQconsumeInput(connection) == 0 { throw failure(nil) }
        }
    }

    func waitFor(_ events: Int16) throws(DatabaseError) {
        var descriptor = pollfd(fd: PQsocket(connection), events: events, revents: 0)
        let remaining = statementTimeoutSeconds.map { Int32(($0 * 1000).rounded(.up)) } ?? -1
        let ready = poll(&descriptor, 1, remaining)
        if ready == 0 || (ready < 0 && errno != EINTR) {
            throw markBroken(.unavailable("PostgreSQL at \(location) did not answer within \(Int(statementTimeoutSeconds ?? 0)) s"))
        }
    }

    // MARK: Failures

    /// Throws the typed error a failed result stands for.
    func check(_ result: OpaquePointer?) throws(DatabaseError) {
        guard sidecar_pq_result_kind(result) < 0 else { return }
        throw failure(result)
    }

    /// Gives the connection up (the worker opens a new one) and returns `error`.
    func markBroken(_ error: DatabaseError) -> DatabaseError {
        broken = true
        statements = [:]
        pipeline = nil
        return error
    }

    /// The typed error a failed result (or a failed send: nil) stands for.
    func failure(_ result: OpaquePointer?) -> DatabaseError {
        let state = String(cString: sidecar_pq_sqlstate(result))
        var message = String(cString: sidecar_pq_message(result))
        if message.isEmpty { message = String(cString: PQerrorMessage(connection)).trimmedLine }
        if sidecar_pq_connected(connection) == 0 || state.hasPrefix("08") || state.hasPrefix("57P") || result == nil {
            return markBroken(.unavailable("lost the connection to PostgreSQL at \(location): \(message)"))
        }
        if state.hasPrefix("23") { return .constraintViolation(message) }
        if state == "40001" || state == "40P01" || state == "55P03" { return .busy(message) }
        return .failed(code: 0, message: "\(state): \(message)")
    }
}
