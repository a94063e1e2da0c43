/// When the views' restore points are taken, as a value (``ViewsSyncer`` is its thread):
/// at most every `interval` while commits come, at once when `events` events have come
/// since the last one covered, never while idle; after one that failed, not before the
/// interval, however many events come.
struct RestorePointSchedule: ThreadSchedule {
    let interval: Duration
    let events: UInt64
    /// Commits since the last restore point.
    private var dirty = false
    /// `events` events since the last one covered: take one now.
    private var urgent = false
    /// The last one failed.
    private var failed = false
    /// The last event the last restore point covered, and the last event noted.
    private var covered: UInt64 = 0
    private var noted: UInt64 = 0
    /// When the next may be taken, without urgency.
    private var due: ContinuousClock.Instant

    init(interval: Duration, events: UInt64, now: ContinuousClock.Instant) {
        self.interval = interval
        self.events = max(1, events)
        due = now
    }

    /// The views hold events up to `sequence`. Returns whether a sleeping thread must be
    /// woken: its wait changed (from none to the interval's, or to none).
    mutating func note(_ sequence: UInt64) -> Bool {
        noted = max(noted, sequence)
        let wasDirty = dirty
        dirty = true
        let becameUrgent = !urgent && noted >= covered &+ events
        if becameUrgent { urgent = true }
        return becameUrgent || !wasDirty
    }

    /// What to do at `now`: `.work` takes a restore point.
    mutating func next(now: ContinuousClock.Instant) -> ScheduledStep {
        if (urgent && !failed) || (dirty && now >= due) {
            urgent = false
            dirty = false
            due = now + interval
            return .work
        }
        return .sleep(until: dirty || urgent ? due : nil)
    }

    /// The restore point just taken covered events up to `covered`, or failed (`nil`).
    mutating func finished(_ covered: UInt64?) {
        failed = covered == nil
        if let covered { self.covered = max(self.covered, covered) }
        // Events noted while it was taken may be past the threshold again.
        urgent = noted >= self.covered &+ events
        if urgent { dirty = true }
    }
}
