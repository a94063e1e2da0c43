@testable import ChordStoreEngine
import Testing

/// When the views' restore points are taken (``RestorePointSchedule``), scenario by scenario.
/// (`#expect` takes no mutating call: each answer is read first.)
@Suite("Restore point schedule")
struct RestorePointScheduleTests {
    private let start = ContinuousClock.now
    private func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test("idle, it sleeps with no deadline; the first commit wakes it and a restore point is taken at once; then nothing until the next commit")
    func firstCommitThenIdle() {
        var schedule = RestorePointSchedule(interval: .seconds(1), events: 100, now: at(0))
        let idle = schedule.next(now: at(0))
        let woken = schedule.note(1)
        let taking = schedule.next(now: at(5))
        schedule.finished(1)
        let idleAgain = schedule.next(now: at(6))
        #expect(idle == .sleep(until: nil))
        #expect(woken)
        #expect(taking == .work)
        #expect(idleAgain == .sleep(until: nil))
    }

    @Test("commits within the interval wait for it, and only the first of them wakes the thread")
    func commitsWaitForTheInterval() {
        var schedule = RestorePointSchedule(interval: .seconds(1), events: 100, now: at(0))
        _ = schedule.note(1)
        let first = schedule.next(now: at(0))
        schedule.finished(1)
        let firstWakes = schedule.note(2)
        let secondWakes = schedule.note(3)
        let waiting = schedule.next(now: at(10))
        let due = schedule.next(now: at(1_000))
        schedule.finished(3)
        let idle = schedule.next(now: at(1_001))
        #expect(first == .work)
        #expect(firstWakes, "its wait changes: from none to the interval's")
        #expect(!secondWakes)
        #expect(waiting == .sleep(until: at(1_000)))
        #expect(due == .work)
        #expect(idle == .sleep(until: nil))
    }

    @Test("the event threshold takes one at once, before the interval, and wakes the thread once")
    func thresholdIsUrgent() {
        var schedule = RestorePointSchedule(interval: .seconds(60), events: 100, now: at(0))
        _ = schedule.note(1)
        _ = schedule.next(now: at(0))
        schedule.finished(1)
        _ = schedule.note(50)
        let waiting = schedule.next(now: at(10))
        let thresholdWakes = schedule.note(101)
        let laterWakes = schedule.note(102)
        let urgent = schedule.next(now: at(20))
        // Taken while more came: past the threshold again, so at once again.
        _ = schedule.note(300)
        schedule.finished(101)
        let again = schedule.next(now: at(21))
        schedule.finished(300)
        let idle = schedule.next(now: at(22))
        #expect(waiting == .sleep(until: at(60_000)))
        #expect(thresholdWakes)
        #expect(!laterWakes)
        #expect(urgent == .work)
        #expect(again == .work)
        #expect(idle == .sleep(until: nil))
    }

    @Test("after a restore point that failed, the next waits for the interval whatever the events")
    func failureBacksOff() {
        var schedule = RestorePointSchedule(interval: .seconds(1), events: 10, now: at(0))
        _ = schedule.note(50)
        _ = schedule.next(now: at(0))
        schedule.finished(nil)
        _ = schedule.note(500)
        let waiting = schedule.next(now: at(10))
        let due = schedule.next(now: at(1_000))
        schedule.finished(500)
        _ = schedule.note(515)
        let urgent = schedule.next(now: at(1_001))
        #expect(waiting == .sleep(until: at(1_000)))
        #expect(due == .work)
        #expect(urgent == .work, "urgent again once one succeeded")
    }
}
