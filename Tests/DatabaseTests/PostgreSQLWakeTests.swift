import Testing

@testable import Database

/// How PostgreSQL's workers are woken (`PostgreSQLDatabase.State`): one
/// wake-up per batch of queued calls rather than one per call, a worker that
/// ends a batch taking what is queued before it sleeps, and a call left
/// behind by a worker waking another (issue 39: a wake-up per call cost a
/// context switch and a contended lock for most calls, and cut batches short).
@Suite("PostgreSQL: workers woken once per batch of queued calls")
struct PostgreSQLWakeTests {
    typealias State = PostgreSQLDatabase.State
    let limit = PostgreSQLDatabase.batchLimit

    static func write(_ keys: String...) -> PostgresJob { PostgresJob(isWrite: true, keys: keys, run: { _ in }, finish: { _ in }) }
    static func read() -> PostgresJob { PostgresJob(isWrite: false, keys: [], run: { _ in }, finish: { _ in }) }

    /// `sleepers` workers asleep, none woken yet.
    func state(sleepers: Int) -> State {
        var state = State()
        for _ in 0..<sleepers { _ = state.take(after: [], woken: false, batchLimit: limit) }
        #expect(state.sleeping == sleepers)
        return state
    }

    @Test(
        "calls queued while workers sleep: which of them wake one",
        arguments: [
            // (workers asleep, calls queued one after another, wake-ups expected)
            (8, 1, 1),
            (8, 8, 1),  // a woken worker takes up to a batch: one wake-up for eight
            (8, 9, 2),
            (8, 17, 3),
            (2, 40, 2),  // never more wake-ups than sleepers
            (0, 5, 0),  // every worker busy: each takes the queue when its batch ends
        ])
    func wakeUpsPerQueuedCall(sleepers: Int, calls: Int, expected: Int) {
        var state = state(sleepers: sleepers)
        let wakes = (0..<calls).count { _ in state.enqueue(Self.write("row/\(calls)"), batchLimit: limit) }
        #expect(wakes == expected)
        #expect(state.wakesPending == expected)
    }

    /// Two writes of one row never share a batch (their rows of one insert
    /// go out as one statement, which may not upsert a row twice): the
    /// second waits for the first's batch to end, the writes around it go.
    @Test func twoWritesOfOneRowGoInTwoBatches() {
        var state = state(sleepers: 1)
        for keys in [["row/a"], ["row/b"], ["row/a"], ["row/c", "row/b"], ["row/d"]] {
            _ = state.enqueue(PostgresJob(isWrite: true, keys: keys, run: { _ in }, finish: { _ in }), batchLimit: limit)
        }
        let first = state.take(after: [], woken: true, batchLimit: limit)
        #expect(first.jobs.map(\.keys) == [["row/a"], ["row/b"], ["row/d"]])
        let second = state.take(after: first.jobs, woken: false, batchLimit: limit)
        #expect(second.jobs.map(\.keys) == [["row/a"], ["row/c", "row/b"]])
        #expect(state.held == ["row/a": 1, "row/c": 1, "row/b": 1])
    }

    @Test func aWokenWorkerTakesABatchAndWakesAnotherForWhatItLeaves() {
        var state = state(sleepers: 3)
        let firstWakes = state.enqueue(Self.write("a"), batchLimit: limit)
        #expect(firstWakes)
        for index in 1..<10 {
            let wakes = state.enqueue(Self.write("k\(index)"), batchLimit: limit)
            #expect(wakes == (index == 8), "the ninth call wakes a second worker")
        }
        // Two wake-ups were sent (the first call, and the ninth); the first
        // worker up takes eight and leaves two, one wake-up already on its way.
        let first = state.take(after: [], woken: true, batchLimit: limit)
        #expect(first.jobs.count == limit && !first.exit)
        #expect(!first.wakeAnother, "the second wake-up covers the two left")
        let second = state.take(after: [], woken: true, batchLimit: limit)
        #expect(second.jobs.count == 2 && !second.wakeAnother)
        #expect(state.sleeping == 1 && state.wakesPending == 0)
    }

    @Test func aReadTakenAloneWakesAnotherWorkerForTheWritesBehindIt() {
        var state = state(sleepers: 2)
        let readWakes = state.enqueue(Self.read(), batchLimit: limit)
        let writeWakes = state.enqueue(Self.write("a"), batchLimit: limit)
        #expect(readWakes && !writeWakes)
        let reader = state.take(after: [], woken: true, batchLimit: limit)
        #expect(reader.jobs.count == 1 && !reader.jobs[0].isWrite)
        // A long read (an export) must not hold the write until it ends.
        #expect(reader.wakeAnother)
        let writer = state.take(after: [], woken: true, batchLimit: limit)
        #expect(writer.jobs.count == 1 && writer.jobs[0].isWrite)
    }

    @Test func aWorkerEndingABatchTakesTheWritesItsKeysHeldBackWithoutAWakeUp() {
        var state = state(sleepers: 1)
        let wakes = state.enqueue(Self.write("row/a"), batchLimit: limit)
        #expect(wakes)
        let running = state.take(after: [], woken: true, batchLimit: limit)
        #expect(running.jobs.count == 1)
        // Queued behind the running batch's row: a woken worker cannot take it.
        let wakesAgain = state.enqueue(Self.write("row/a"), batchLimit: limit)
        #expect(!wakesAgain, "no worker sleeps")
        let held = state.take(after: [], woken: false, batchLimit: limit)
        #expect(held.jobs.isEmpty && !held.exit, "taken while its row is held")
        // The worker that ends the batch gives the row back and takes it.
        let next = state.take(after: running.jobs, woken: false, batchLimit: limit)
        #expect(next.jobs.count == 1 && state.jobs.isEmpty)
    }

    @Test func closingEndsWorkersOnlyOnceTheQueueIsEmpty() {
        var state = state(sleepers: 0)
        _ = state.enqueue(Self.write("a"), batchLimit: limit)
        state.closing = true
        let last = state.take(after: [], woken: false, batchLimit: limit)
        #expect(last.jobs.count == 1 && !last.exit)
        let end = state.take(after: last.jobs, woken: false, batchLimit: limit)
        #expect(end.exit && end.jobs.isEmpty)
        #expect(state.sleeping == 0, "an ending worker is not counted asleep")
    }
}
