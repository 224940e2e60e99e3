import Foundation
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

/// Bodies written while they are sent (`Response.streamed`): every byte
/// arrives in order, a producer never runs far ahead of a slow client, and
/// a client that goes away stops the producer.
@Suite("HTTP server: streamed bodies")
struct StreamedBodyTests {
    /// Bytes written so far and how the producer ended.
    final class Progress: Sendable {
        let written = Atomic<Int>(0)
        let stopped = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
    }

    static let chunk = 64 * 1024

    static func withServer(
        chunks: Int, progress: Progress, connectionTimeoutSeconds: Int = 5, _ body: (HTTPServer) async throws -> Void
    ) async throws {
        var router = Router()
        router.add(
            Route("GET", "/stream") { _ in
                .streamed(200, contentType: "text/plain") { writer in
                    do {
                        for index in 0..<chunks {
                            try await writer.write([UInt8](repeating: UInt8(ascii: "a") + UInt8(index % 26), count: chunk))
                            progress.written.add(chunk, ordering: .relaxed)
                        }
                        progress.finished.store(true, ordering: .relaxed)
                    } catch is BodyWriter.Stopped {
                        progress.stopped.store(true, ordering: .relaxed)
                        throw BodyWriter.Stopped()
                    }
                }
            })
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.connectionTimeoutSeconds = connectionTimeoutSeconds
        let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error, sink: MemorySink()))
        try server.start()
        do { try await body(server) } catch {
            await server.shutdown(grace: .seconds(2))
            throw error
        }
        await server.shutdown(grace: .seconds(2))
    }

    @Test func everyByteArrivesInOrder() async throws {
        let progress = Progress()
        try await Self.withServer(chunks: 160, progress: progress) { server in
            let response = try await RawHTTPClient.send(port: server.port, RawHTTPClient.request("GET", "/stream"))
            #expect(response.status == 200)
            #expect(response.body.count == 160 * Self.chunk, "10 MB, dechunked")
            for index in [0, 1, 25, 26, 159] {
                #expect(response.body[index * Self.chunk] == UInt8(ascii: "a") + UInt8(index % 26))
            }
            let finished = progress.finished.load(ordering: .relaxed)
            #expect(finished)
        }
    }

    @Test func aSlowClientHoldsTheProducerBackAndLeavingStopsIt() async throws {
        let progress = Progress()
        // 1 GB if nothing stopped it.
        try await Self.withServer(chunks: 16_384, progress: progress) { server in
            let socket = try RawSocket(port: server.port)
            #expect(socket.send(RawHTTPClient.request("GET", "/stream")))
            // Short reads until the head arrives: reading longer would drain the stream.
            var first: (bytes: [UInt8], closed: Bool) = ([], false)
            for _ in 0..<40 where first.bytes.isEmpty {
                first = await socket.readOffPool(timeoutSeconds: 0.05)
            }
            #expect(first.bytes.starts(with: Array("HTTP/1.1 200".utf8)))
            // Not reading: the producer waits once the buffers are full. The
            // kernel grows loopback socket buffers for a while, so wait until
            // the count settles rather than for a fixed time.
            var held = progress.written.load(ordering: .relaxed)
            var settled = false
            for _ in 0..<40 where !settled {
                try await Task.sleep(for: .milliseconds(300))
                let now = progress.written.load(ordering: .relaxed)
                settled = now == held
                held = now
            }
            #expect(settled, "no progress while the client reads nothing")
            #expect(held < 64 << 20, "bounded by the buffers, not the body: \(held) bytes")
            socket.hangUp()
            var stopped = false
            for _ in 0..<100 where !stopped {
                try await Task.sleep(for: .milliseconds(100))
                stopped = progress.stopped.load(ordering: .relaxed)
            }
            #expect(stopped, "the producer learns the client left")
            let finished = progress.finished.load(ordering: .relaxed)
            #expect(!finished)
        }
    }

    /// Issue 39: a stop while a client reads a long body slowly (here: not
    /// at all) cuts the body short shortly before the deadline instead of
    /// waiting past it: the shutdown is clean, and the producer stops.
    @Test func aStopCutsShortABodyItsClientIsNotReading() async throws {
        let progress = Progress()
        // 1 GB if nothing stopped it; the connection timeout is far past the stop.
        try await Self.withServer(chunks: 16_384, progress: progress, connectionTimeoutSeconds: 120) { server in
            let socket = try RawSocket(port: server.port)
            #expect(socket.send(RawHTTPClient.request("GET", "/stream")))
            var first: (bytes: [UInt8], closed: Bool) = ([], false)
            for _ in 0..<40 where first.bytes.isEmpty {
                first = await socket.readOffPool(timeoutSeconds: 0.05)
            }
            #expect(first.bytes.starts(with: Array("HTTP/1.1 200".utf8)))
            // The producer is under way (and soon held back by the unread buffers).
            #expect(await waitFor { progress.written.load(ordering: .relaxed) > 0 })
            let clean = await server.shutdown(grace: .seconds(8))
            #expect(clean, "the stop did not wait for the client")
            let stopped = progress.stopped.load(ordering: .relaxed)
            let finished = progress.finished.load(ordering: .relaxed)
            #expect(stopped, "the producer was told to stop")
            #expect(!finished)
            socket.hangUp()
        }
    }

    /// Waits for a condition; the deadline only catches a hang.
    func waitFor(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
