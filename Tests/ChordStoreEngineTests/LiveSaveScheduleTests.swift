@testable import ChordStoreEngine
import Testing

/// When the live state is saved in the background (``LiveSaveSchedule``), without a thread.
@Suite("Live state save schedule")
struct LiveSaveScheduleTests {
    @Test("a save is due `least` events after the last one, or the file's bytes / 128 if more; one runs at a time")
    func dueAfterEvents() {
        var schedule = LiveSaveSchedule(last: nil, least: 100)
        let started1 = schedule.commit(99)
        #expect(!started1)
        let started2 = schedule.commit(100)
        #expect(started2)
        #expect(schedule.saving)
        let started3 = schedule.commit(500)
        #expect(!started3)  // one at a time
        #expect(schedule.lastSaved == nil)
        schedule.finished(LiveSaveSchedule.Saved(sequence: 100, bytes: 1_280))
        #expect(schedule.due == 200)
        #expect(schedule.lastSaved == 100)
        // The last commit came while it saved: due already, found when the thread looks again.
        let step4 = schedule.next(now: .now)
        #expect(step4 == .work)
        #expect(schedule.saving)
        schedule.finished(LiveSaveSchedule.Saved(sequence: 500, bytes: 128 * 1_000))
        #expect(schedule.due == 1_500)
        let started5 = schedule.commit(1_499)
        #expect(!started5)
        let started6 = schedule.commit(1_500)
        #expect(started6)
        // The thread, woken by that commit, finds the save started.
        let step6 = schedule.next(now: .now)
        #expect(step6 == .work)
        schedule.finished(LiveSaveSchedule.Saved(sequence: 1_500, bytes: 0))
        let idle = schedule.next(now: .now)
        #expect(idle == .sleep(until: nil))
        #expect(schedule.saves == 3)
    }

    @Test("a store opened from a saved state counts from it; a start past the due point saves at once")
    func fromTheOpening() {
        var schedule = LiveSaveSchedule(last: LiveSaveSchedule.Saved(sequence: 1_000, bytes: 0), least: 50)
        #expect(schedule.due == 1_050)
        let started7 = schedule.commit(1_049)
        #expect(!started7)
        schedule = LiveSaveSchedule(last: LiveSaveSchedule.Saved(sequence: 1_000, bytes: 0), least: 50)
        let started8 = schedule.commit(5_000)
        #expect(started8)
    }

    @Test("a failed save is tried again `least` events after the one it started at")
    func failure() {
        var schedule = LiveSaveSchedule(last: nil, least: 10)
        let started9 = schedule.commit(35)
        #expect(started9)
        schedule.finished(nil)
        #expect(!schedule.saving)
        #expect(schedule.due == 45)
        let started10 = schedule.commit(44)
        #expect(!started10)
        let started11 = schedule.commit(45)
        #expect(started11)
    }

    @Test("a log cut back makes a save due at once, and after the running one, whose copy may predate the cut")
    func forgotten() {
        var schedule = LiveSaveSchedule(last: nil, least: 10)
        let started12 = schedule.commit(5)
        #expect(!started12)
        schedule.forget(at: 5)
        let started13 = schedule.startIfDue()
        #expect(started13)
        schedule.finished(LiveSaveSchedule.Saved(sequence: 5, bytes: 0))
        #expect(schedule.due == 15)
        let started14 = schedule.commit(20)
        #expect(started14)
        schedule.forget(at: 12)  // while that save runs, the log cut back to 12
        schedule.finished(LiveSaveSchedule.Saved(sequence: 20, bytes: 0))
        #expect(schedule.due == 0)
        #expect(schedule.lastSaved == nil)  // its copy may hold cut events
        let started15 = schedule.startIfDue()
        #expect(started15)
        // It fails: tried again `least` events after the cut's head, not the old one.
        schedule.finished(nil)
        #expect(schedule.due == 22)
    }

    @Test("sums saturate: a huge least means hardly ever, not an overflow")
    func saturates() {
        var schedule = LiveSaveSchedule(last: LiveSaveSchedule.Saved(sequence: 10, bytes: 0), least: .max)
        #expect(schedule.due == .max)
        let started16 = schedule.commit(.max - 1)
        #expect(!started16)
        let started17 = schedule.commit(.max)
        #expect(started17)
        schedule.finished(nil)
        #expect(schedule.due == .max)
        schedule.finished(LiveSaveSchedule.Saved(sequence: .max - 1, bytes: 0))
        #expect(schedule.due == .max)
        #expect(LiveSaveSchedule(last: nil, least: 0).least == 1)
    }
}
