@testable import ChordStoreEngine
import Foundation
import Synchronization
import TestSupport
import Testing

/// The thread of background work (``ScheduledThread``): woken by updates and deadlines,
/// stopped after its running work.
@Suite("Scheduled thread")
struct ScheduledThreadTests {
    /// Work requested by updates or by a deadline; each piece done is counted.
    struct Requests: ThreadSchedule {
        var requested = 0
        var done = 0
        var deadline: ContinuousClock.Instant?
        /// The last answer was to sleep: the thread has marked itself asleep (in the same
        /// turn of its lock).
        var asleep = false

        mutating func next(now: ContinuousClock.Instant) -> ScheduledStep {
            if let deadline, now >= deadline {
                self.deadline = nil
                requested += 1
            }
            asleep = requested <= done
            return asleep ? .sleep(until: deadline) : .work
        }

        mutating func finished(_ outcome: Int) { done += 1 }
    }

    /// A flag shared with the thread's work.
    final class Flag: Sendable {
        private let value = Atomic(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    @Test("an update that asks wakes the sleeping thread, which works until nothing is due, then sleeps")
    func updatesWake() async {
        let thread = ScheduledThread(name: "cs-test", schedule: Requests()) { 0 }
        defer { thread.stop() }
        thread.update { $0.requested += 1; return true }
        #expect(await eventually { thread.read { $0.done } == 1 })
        thread.update { $0.requested += 2; return true }
        #expect(await eventually { thread.read { $0.done == 3 && $0.asleep } })
        // An update that does not ask leaves the thread asleep.
        thread.update { $0.requested += 1; return false }
        try? await Task.sleep(for: .milliseconds(200))
        let done = thread.read { $0.done }
        #expect(done == 3)
    }

    @Test("a deadline wakes the thread without an update")
    func deadlineWakes() async {
        let thread = ScheduledThread(name: "cs-test", schedule: Requests(deadline: .now + .milliseconds(100))) { 0 }
        defer { thread.stop() }
        #expect(await eventually { thread.read { $0.done } == 1 })
    }

    @Test("stop waits for the running work, ends the thread (no work after it) and is idempotent")
    func stopAfterWork() async {
        let started = Flag()
        let gate = DispatchSemaphore(value: 0)
        let thread = ScheduledThread(name: "cs-test", schedule: Requests()) {
            started.set()
            gate.wait()
            return 0
        }
        thread.update { $0.requested += 1; return true }
        #expect(await eventually { started.isSet })
        // stop() blocks: called on a thread of its own, not on the tasks' shared pool.
        let stopped = Flag()
        Thread {
            thread.stop()
            stopped.set()
        }.start()
        try? await Task.sleep(for: .milliseconds(200))
        let early = stopped.isSet
        #expect(!early, "stop returned while the work ran")
        gate.signal()
        #expect(await eventually { stopped.isSet })
        let doneAtStop = thread.read { $0.done }
        #expect(doneAtStop == 1)
        thread.update { $0.requested += 1; return true }
        try? await Task.sleep(for: .milliseconds(100))
        let doneAfter = thread.read { $0.done }
        #expect(doneAfter == 1, "no work after stop")
        thread.stop()
    }
}
