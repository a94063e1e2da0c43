@testable import ChordStoreEngine
import Synchronization
import Testing

/// The one registry of suspended waits: a goal met now returns at once, a change that
/// meets it wakes the waiter (and only that waiter), a timeout or a cancellation ends the
/// wait with the fallback, and no change published between the check and the
/// registration is lost.
@Suite("Waiters")
struct WaitersTests {
    /// A counter tasks share.
    final class Level: Sendable {
        private let value = Atomic(0)
        var now: Int { value.load(ordering: .acquiring) }
        func set(_ new: Int) { value.store(new, ordering: .releasing) }
        func raise() { value.add(1, ordering: .releasing) }
    }

    @Test("a goal met already returns its outcome at once, without registering")
    func metAtOnce() async {
        let waiters = Waiters<Int, String>()
        let outcome = await waiters.wait(for: 3, timeout: .seconds(30), otherwise: "timeout") { $0 <= 5 ? "met" : nil }
        #expect(outcome == "met")
        #expect(waiters.count == 0)
        #expect(waiters.timersStarted == 0, "a wait met at once arms no timer")
    }

    @Test("resume wakes exactly the waiters whose goal it meets")
    func resumeWakesMatching() async throws {
        let waiters = Waiters<Int, Int>()
        let head = Level()
        let low = Task { await waiters.wait(for: 1, timeout: .seconds(30), otherwise: -1) { head.now >= $0 ? 1 : nil } }
        let high = Task { await waiters.wait(for: 10, timeout: .seconds(30), otherwise: -1) { head.now >= $0 ? 10 : nil } }
        try await waitUntil { waiters.count == 2 }
        head.set(5)
        waiters.resume { head.now >= $0 ? $0 : nil }
        #expect(await low.value == 1)
        #expect(waiters.count == 1, "the waiter for 10 still waits")
        head.set(10)
        waiters.resume { head.now >= $0 ? $0 : nil }
        #expect(await high.value == 10)
    }

    @Test("a timeout ends the wait with the fallback")
    func timeout() async {
        let waiters = Waiters<Int, String>()
        let start = ContinuousClock.now
        let outcome = await waiters.wait(for: 1, timeout: .milliseconds(50), otherwise: "timeout") { _ in nil }
        #expect(outcome == "timeout")
        #expect(ContinuousClock.now - start >= .milliseconds(50))
        #expect(waiters.count == 0)
    }

    @Test("the timeouts of many waits share one timer: 200 waits of one timeout start one, and each ends with its fallback")
    func oneTimerForManyWaits() async {
        let waiters = Waiters<Int, String>()
        let start = ContinuousClock.now
        let outcomes = await withTaskGroup(of: String.self) { group in
            for goal in 1...200 {
                group.addTask { await waiters.wait(for: goal, timeout: .milliseconds(100), otherwise: "timeout") { _ in nil } }
            }
            var outcomes: [String] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes == Array(repeating: "timeout", count: 200))
        #expect(ContinuousClock.now - start >= .milliseconds(100))
        // Each later wait's deadline is after the armed one: the first wait's timer serves
        // all (a timer per wait would have started 200).
        #expect(waiters.timersStarted <= 200 / 2, "\(waiters.timersStarted) timers for 200 waits")
        #expect(waiters.count == 0)
    }

    @Test("a shorter timeout after a longer one ends on its own deadline; the longer wait goes on and is resumed")
    func shorterTimeoutRearms() async throws {
        let waiters = Waiters<Int, String>()
        let head = Level()
        let long = Task { await waiters.wait(for: 1, timeout: .seconds(60), otherwise: "long timeout") { head.now >= $0 ? "met" : nil } }
        try await waitUntil { waiters.count == 1 }
        #expect(waiters.timersStarted == 1)
        let start = ContinuousClock.now
        let short = await waiters.wait(for: 2, timeout: .milliseconds(50), otherwise: "short timeout") { _ in nil }
        #expect(short == "short timeout")
        #expect(ContinuousClock.now - start < .seconds(30), "it waited for the longer wait's deadline")
        #expect(waiters.timersStarted == 2, "the earlier deadline armed a timer of its own")
        #expect(waiters.count == 1, "the longer wait still waits")
        head.set(1)
        waiters.resume { head.now >= $0 ? "met" : nil }
        #expect(await long.value == "met")
        // The timer still sleeps toward the long wait's deadline: an earlier one arms another.
        let again = await waiters.wait(for: 3, timeout: .milliseconds(20), otherwise: "again") { _ in nil }
        #expect(again == "again")
        #expect(waiters.timersStarted == 3)
    }

    @Test("the timer stops when no deadline is left, and the next timeout arms one again; one far ahead stops when its wait ends")
    func timerStopsAndRearms() async throws {
        let waiters = Waiters<Int, String>()
        #expect(await waiters.wait(for: 1, timeout: .milliseconds(10), otherwise: "timeout") { _ in nil } == "timeout")
        try await waitUntil { !waiters.timerArmed }
        #expect(await waiters.wait(for: 2, timeout: .milliseconds(10), otherwise: "timeout") { _ in nil } == "timeout")
        #expect(waiters.timersStarted == 2, "armed again from idle")
        // A timeout of an hour, met at once after it registers: its timer does not sleep on.
        let calls = Calls()
        let registration = try #require(waiters.register(for: 3, timeout: .seconds(3_600), otherwise: "timeout", check: { _ in nil }, calls.record))
        try await waitUntil { waiters.timerArmed }
        waiters.cancel(registration, with: "done")
        #expect(calls.all == ["done"])
        #expect(!waiters.timerArmed)
    }

    @Test("a zero or negative timeout ends the wait with its fallback at once; one past a century is a century")
    func extremeTimeouts() async {
        let waiters = Waiters<Int, String>()
        for timeout: Duration in [.zero, .seconds(-5), .nanoseconds(-1)] {
            let start = ContinuousClock.now
            #expect(await waiters.wait(for: 1, timeout: timeout, otherwise: "timeout") { _ in nil } == "timeout")
            #expect(ContinuousClock.now - start < .seconds(10))
        }
        let calls = Calls()
        let forever = waiters.register(for: 2, timeout: .seconds(Int64.max), otherwise: "timeout", check: { _ in nil }, calls.record)
        #expect(waiters.count == 1)
        waiters.resumeAll(with: "resumed")
        #expect(calls.all == ["resumed"])
        if let forever { waiters.cancel(forever, with: "late") }
        #expect(calls.all == ["resumed"])
        #expect(waiters.count == 0)
    }

    @Test("the deadlines of waits that ended do not pile up (at most twice the live waits, plus 64), and a live wait still times out")
    func endedDeadlinesDropped() async throws {
        let waiters = Waiters<Int, String>()
        let short = Calls()
        _ = try #require(waiters.register(for: -1, timeout: .milliseconds(300), otherwise: "timeout", check: { _ in nil }, short.record))
        for goal in 0..<10 {
            _ = waiters.register(for: 1_000_000 + goal, timeout: .seconds(3_600), otherwise: "timeout", check: { _ in nil }) { _ in }
        }
        // 5,000 more come and go, each long before its timeout, as quorum writes' waits do.
        var most = 0
        for goal in 0..<5_000 {
            let registration = try #require(waiters.register(for: goal, timeout: .seconds(10), otherwise: "timeout", check: { _ in nil }) { _ in })
            if goal.isMultiple(of: 2) {
                waiters.resume { $0 == goal ? "met" : nil }
            } else {
                waiters.cancel(registration, with: "cancelled")
            }
            most = max(most, waiters.deadlineCount)
        }
        #expect(most <= 2 * 11 + 64, "\(most) deadlines held for at most 11 live waits")
        try await waitUntil { short.all == ["timeout"] }
        #expect(waiters.count == 10)
    }

    @Test("waits with a threshold end at the resume that reaches it, in its order, out-of-order registrations too; resume(where:) leaves them")
    func thresholdWaits() async throws {
        let waiters = Waiters<Int, String>()
        let order = Calls()
        for threshold in [3, 1, 2, 5, 2, 4] {
            _ = try #require(waiters.register(
                for: threshold, threshold: UInt64(threshold), timeout: .seconds(60), otherwise: "timeout", check: { _ in nil }
            ) { order.record("\(threshold) \($0)") })
        }
        let other = Calls()
        _ = try #require(waiters.register(for: 2, timeout: .seconds(60), otherwise: "timeout", check: { _ in nil }, other.record))
        waiters.resume { _ in "asked" }
        #expect(other.all == ["asked"])
        #expect(order.all.isEmpty, "resume(where:) asks only the waits without a threshold")
        waiters.resume(through: 2, with: "met")
        #expect(order.all == ["1 met", "2 met", "2 met"])
        #expect(waiters.count == 3)
        waiters.resume(through: 2, with: "again")
        #expect(order.all.count == 3, "a wait ends once")
        waiters.resume(through: 4, with: "met")
        #expect(order.all == ["1 met", "2 met", "2 met", "3 met", "4 met"])
        waiters.resumeAll(with: "all")
        #expect(order.all.last == "5 all")
        #expect(waiters.count == 0 && waiters.thresholdCount == 0)

        // A task's wait with a threshold.
        let task = Task { await waiters.wait(for: 7, threshold: 7, timeout: .seconds(60), otherwise: "timeout") { _ in nil } }
        try await waitUntil { waiters.count == 1 }
        waiters.resume(through: 6, with: "early")
        #expect(waiters.count == 1)
        waiters.resume(through: 7, with: "met")
        #expect(await task.value == "met")
    }

    @Test("the ids of threshold waits that time out or are cancelled do not pile up while nothing reaches them")
    func endedThresholdsDropped() async throws {
        let waiters = Waiters<Int, String>()
        let timedOut = Calls()
        // Quorum writes while no follower answers: each times out, none is reached.
        for goal in 0..<300 {
            _ = waiters.register(for: goal, threshold: UInt64(goal), timeout: .milliseconds(1), otherwise: "timeout", check: { _ in nil }, timedOut.record)
        }
        try await waitUntil { timedOut.all.count == 300 }
        _ = waiters.register(for: 1_000, threshold: 1_000, timeout: .milliseconds(1), otherwise: "timeout", check: { _ in nil }) { _ in }
        try await waitUntil { waiters.count == 0 }
        #expect(waiters.thresholdCount <= 64, "\(waiters.thresholdCount) ids of ended waits held")
        var most = 0
        for goal in 0..<2_000 {
            let registration = try #require(waiters.register(
                for: goal, threshold: UInt64(2_000 + goal), timeout: .seconds(60), otherwise: "timeout", check: { _ in nil }) { _ in })
            waiters.cancel(registration, with: "cancelled")
            most = max(most, waiters.thresholdCount)
        }
        #expect(most <= 64 + 1, "\(most) ids held for no live wait")
        #expect(timedOut.all == Array(repeating: "timeout", count: 300))
    }

    @Test("SequenceWaiters: a wait ends true at the resume through its sequence, false when cancelled or at resumeAll; a met check answers at once")
    func sequenceWaiters() async throws {
        let waiters = SequenceWaiters()
        let reached = Level()
        let calls = Calls()
        #expect(waiters.register(for: 0, timeout: nil, check: { reached.now >= Int($0) ? true : nil }) { calls.record("0 \($0)") } == nil)
        #expect(calls.all == ["0 true"], "a sequence reached already answers at once")
        let cancelled = try #require(waiters.register(for: 9, timeout: .seconds(60), check: { _ in nil }) { calls.record("9 \($0)") })
        _ = waiters.register(for: 5, timeout: .seconds(60), check: { _ in nil }) { calls.record("5 \($0)") }
        _ = waiters.register(for: 7, timeout: .seconds(60), check: { _ in nil }) { calls.record("7 \($0)") }
        #expect(waiters.count == 3)
        waiters.resume(through: 6)
        #expect(calls.all == ["0 true", "5 true"])
        waiters.cancel(cancelled)
        #expect(calls.all == ["0 true", "5 true", "9 false"])
        waiters.resumeAll(with: false)
        #expect(calls.all == ["0 true", "5 true", "9 false", "7 false"])
        #expect(waiters.count == 0)
        let timedOut = await waiters.wait(for: 3, timeout: .milliseconds(20)) { _ in nil }
        #expect(!timedOut)
    }

    /// Outcomes a registered closure was called with.
    final class Calls: Sendable {
        private let outcomes = Mutex<[String]>([])
        var all: [String] { outcomes.withLock { $0 } }
        func record(_ outcome: String) { outcomes.withLock { $0.append(outcome) } }
    }

    @Test("a registered closure is called at once for a goal met now, once by the resume that meets it, once by its timeout or its cancel")
    func registeredClosures() async throws {
        let waiters = Waiters<Int, String>()
        let head = Level()
        head.set(5)
        let now = Calls()
        #expect(waiters.register(for: 3, timeout: nil, otherwise: "none", check: { head.now >= $0 ? "met" : nil }, now.record) == nil)
        #expect(now.all == ["met"], "called at once, on this thread")

        let later = Calls()
        let registration = try #require(waiters.register(for: 8, timeout: .seconds(60), otherwise: "timeout", check: { head.now >= $0 ? "met" : nil }, later.record))
        #expect(waiters.count == 1 && later.all.isEmpty)
        head.set(8)
        waiters.resume { head.now >= $0 ? "met" : nil }
        waiters.resume { head.now >= $0 ? "again" : nil }
        waiters.cancel(registration, with: "cancelled")
        #expect(later.all == ["met"], "called once, by the resume that met it")

        let timed = Calls()
        _ = waiters.register(for: 100, timeout: .milliseconds(30), otherwise: "timeout", check: { _ in nil }, timed.record)
        try await waitUntil { !timed.all.isEmpty }
        #expect(timed.all == ["timeout"])

        let cancelled = Calls()
        let doomed = try #require(waiters.register(for: 100, timeout: .seconds(60), otherwise: "timeout", check: { _ in nil }, cancelled.record))
        waiters.cancel(doomed, with: "cancelled")
        waiters.cancel(doomed, with: "twice")
        waiters.resumeAll(with: "all")
        #expect(cancelled.all == ["cancelled"])
        #expect(waiters.count == 0)
    }

    @Test("no wake-up is lost by registered closures: 1,000 registrations racing a counter another task raises are all called with met")
    func noLostCallbacks() async throws {
        let waiters = Waiters<Int, Bool>()
        let counter = Level()
        let calls = Mutex((met: 0, other: 0))
        let raiser = Task {
            for _ in 1...1_000 {
                counter.raise()
                waiters.resume { counter.now >= $0 ? true : nil }
                await Task.yield()
            }
        }
        for goal in 1...1_000 {
            _ = waiters.register(for: goal, timeout: nil, otherwise: false, check: { counter.now >= $0 ? true : nil }) { met in
                calls.withLock { met ? ($0.met += 1) : ($0.other += 1) }
            }
            if goal % 50 == 0 { await Task.yield() }
        }
        await raiser.value
        try await waitUntil { calls.withLock { $0.met + $0.other } == 1_000 }
        #expect(calls.withLock { $0.met } == 1_000)
        #expect(waiters.count == 0)
    }

    @Test("cancelling the waiting task ends the wait with the fallback")
    func cancellation() async throws {
        let waiters = Waiters<Int, String>()
        let task = Task { await waiters.wait(for: 1, timeout: nil, otherwise: "cancelled") { _ in nil } }
        try await waitUntil { waiters.count == 1 }
        task.cancel()
        #expect(await task.value == "cancelled")
        #expect(waiters.count == 0)
    }

    @Test("a task cancelled before it waits returns at once")
    func cancelledBefore() async {
        let waiters = Waiters<Int, String>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await waiters.wait(for: 1, timeout: nil, otherwise: "cancelled") { _ in nil }
        }
        #expect(await task.value == "cancelled")
    }

    @Test("no wake-up is lost: 1,000 waits on a counter another task raises all return met")
    func noLostWakeUps() async {
        let waiters = Waiters<Int, Bool>()
        let counter = Level()
        await withTaskGroup(of: Bool?.self) { group in
            for goal in 1...1_000 {
                group.addTask {
                    await waiters.wait(for: goal, timeout: nil, otherwise: false) { counter.now >= $0 ? true : nil }
                }
            }
            for _ in 1...1_000 {
                counter.raise()
                waiters.resume { counter.now >= $0 ? true : nil }
                await Task.yield()
            }
            // Every goal is met now and every change was published: a wait still
            // registered after this would be a lost wake-up. (Only these are ended here,
            // with false; a loaded machine delays the others, but they return true.)
            group.addTask {
                guard (try? await Task.sleep(for: .seconds(30))) != nil else { return nil }  // cancelled: all returned
                waiters.resumeAll(with: false)
                return nil
            }
            var met = 0, returned = 0
            for await outcome in group {
                guard let outcome else { continue }
                returned += 1
                if outcome { met += 1 }
                if returned == 1_000 { group.cancelAll() }
            }
            #expect(met == 1_000)
        }
    }

    @Test("the deadline heap gives 2,000 random deadlines back earliest first, also after dropping a third of them", arguments: [false, true])
    func deadlineHeapOrder(dropping: Bool) {
        var heap = DeadlineHeap()
        let base = ContinuousClock.now
        var generator = SystemRandomNumberGenerator()
        for id in 0..<2_000 { heap.push(base.advanced(by: .milliseconds(Int.random(in: 0..<500, using: &generator))), id) }
        if dropping { heap.keep { !$0.isMultiple(of: 3) } }
        #expect(heap.count == (dropping ? 1_333 : 2_000))
        var previous = base
        var popped = 0
        while let top = heap.first {
            #expect(top.at >= previous)
            #expect(!dropping || !top.id.isMultiple(of: 3))
            previous = top.at
            heap.pop()
            popped += 1
        }
        #expect(popped == (dropping ? 1_333 : 2_000))
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "the condition never held")
            await Task.yield()
        }
    }
}
