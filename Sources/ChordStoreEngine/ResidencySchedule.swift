/// When the thread that keeps the live state under its memory bound works
/// (``StateEvictor``): a pure value, so that every case is tested without a thread.
///
/// A commit, or a reader that folded an evicted store, makes a turn due; a turn starts at
/// once if the last started at least ``interval`` ago, else at that point (so a stream of
/// commits costs at most one turn per interval: a turn reads every store's size).
struct ResidencySchedule: ThreadSchedule, Equatable {
    /// The least time between the starts of two turns.
    let interval: Duration
    /// Whether something happened since the last turn started.
    private(set) var due = false
    /// Whether a turn runs.
    private(set) var running = false
    /// When the last turn started.
    private(set) var lastStart: ContinuousClock.Instant?
    /// Turns completed (for tests).
    private(set) var turns = 0

    init(interval: Duration = .milliseconds(20)) {
        self.interval = interval
    }

    /// Something may have changed the state's size; returns whether to wake the thread:
    /// only when nothing was due. Not while a turn runs (the thread asks again when it
    /// ends), nor while a turn is due already (the thread then sleeps until the interval
    /// lets it start, or is about to ask): a commit every few milliseconds woke it at each
    /// commit, on the writer's way to answering, to go back to sleep until the same point.
    mutating func note() -> Bool {
        let wasDue = due
        due = true
        return !running && !wasDue
    }

    /// A turn if one is due and the interval since the last one's start has passed;
    /// else sleep until then, or until a change.
    mutating func next(now: ContinuousClock.Instant) -> ScheduledStep {
        guard due, !running else { return .sleep(until: nil) }
        if let lastStart, now < lastStart + interval { return .sleep(until: lastStart + interval) }
        due = false
        running = true
        lastStart = now
        return .work
    }

    /// The running turn ended.
    mutating func finished(_: Void) {
        running = false
        turns += 1
    }
}
