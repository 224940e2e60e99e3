import Foundation
import Synchronization
import Testing

@testable import SidecarKit

@Suite("App: periodic loops")
struct WallClockTests {
    /// Records when each cycle started and makes every cycle take `cycleSeconds`
    /// of the manual clock's time, as a slow upstream would.
    final class SlowCycle: Sendable {
        let starts = Mutex<[Double]>([])
        let clock: ManualClock
        let cycleSeconds: Double
        init(clock: ManualClock, cycleSeconds: Double) {
            self.clock = clock
            self.cycleSeconds = cycleSeconds
        }
        func run() {
            starts.withLock { $0.append(clock.now().timeIntervalSince1970) }
            clock.advance(seconds: cycleSeconds)
        }
    }

    private func startTimes(interval: Double, cycleSeconds: Double, cycles: Int) async throws -> [Double] {
        let clock = ManualClock(Date(timeIntervalSince1970: 0))
        let slow = SlowCycle(clock: clock, cycleSeconds: cycleSeconds)
        let loop = Task { await clock.repeatEvery(seconds: interval) { slow.run() } }
        defer { loop.cancel() }
        for started in 1..<cycles {
            // Wait for the loop to sleep, then move time one second at a time
            // until the next cycle starts, so its start time is its deadline.
            while slow.starts.withLock({ $0.count }) < started || clock.sleeperCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
            while clock.sleeperCount > 0 { clock.advance(seconds: 1) }
        }
        while slow.starts.withLock({ $0.count }) < cycles { try await Task.sleep(for: .milliseconds(1)) }
        return slow.starts.withLock { $0 }
    }

    @Test("a slow cycle does not push the next ones back: cycles start once per period")
    func slowCycleKeepsThePeriod() async throws {
        let starts = try await startTimes(interval: 60, cycleSeconds: 30, cycles: 3)
        // The cycle at 0 ends at 30 and pauses 30 (not 60), so the next starts at 60.
        #expect(starts == [0, 60, 120])
    }

    @Test("a cycle longer than the period still leaves a pause before the next")
    func overrunningCycleStillPauses() async throws {
        let starts = try await startTimes(interval: 10, cycleSeconds: 25, cycles: 3)
        // 25 s of work, then the one-second floor (the period is already spent).
        #expect(starts == [0, 26, 52])
    }
}
