/// When the live state is saved in the background (``LiveStateSaver``): a pure value, so
/// that every case is tested without a thread.
///
/// A save is due once the log's last committed sequence reaches ``due``: the last save's
/// sequence plus ``eventsBetween(savedBytes:least:)``: at least `least` events, more for
/// a large state, so that writing it costs each event a bounded share. One save runs at a
/// time. A log cut back while a save runs makes that save's file stale: another is due as
/// soon as it ends. A failed save is tried again `least` events after the sequence it
/// started at. Sums saturate: a huge `least` means "hardly ever", not a crash.
struct LiveSaveSchedule: ThreadSchedule, Equatable {
    /// What one save did: the log sequence it reflects and the file's size.
    struct Saved: Equatable, Sendable {
        var sequence: UInt64
        var bytes: Int
    }

    /// File bytes per event that a save's cost is spread over: the most events between
    /// saves of a large state is its file's size divided by this.
    static let bytesPerEvent = 128

    /// The least events between two saves (at least 1).
    let least: UInt64
    /// The log sequence at or past which a save is due.
    private(set) var due: UInt64
    /// The log's last committed sequence, as told.
    private(set) var committed: UInt64 = 0
    /// Whether a save runs.
    private(set) var saving = false
    /// The log sequence of the state saved last, while the log still holds it (`nil`
    /// after a cut, or before a save).
    private(set) var lastSaved: UInt64?
    /// The committed sequence when the running save started.
    private var started: UInt64 = 0
    /// The log was cut back while the running save ran.
    private var forgotten = false
    /// Saves completed (for tests).
    private(set) var saves = 0

    /// A schedule after `last` (the state the store opened from), or with no state saved.
    init(last: Saved?, least: UInt64) {
        self.least = max(1, least)
        lastSaved = last?.sequence
        due = last.map { Self.sum($0.sequence, Self.eventsBetween(savedBytes: $0.bytes, least: least)) } ?? max(1, least)
    }

    /// Events after a save of `savedBytes` before the next is due.
    static func eventsBetween(savedBytes: Int, least: UInt64) -> UInt64 {
        max(max(1, least), UInt64(max(0, savedBytes) / bytesPerEvent))
    }

    /// Notes the log's last committed sequence; returns whether a save starts now.
    mutating func commit(_ sequence: UInt64) -> Bool {
        committed = sequence
        return startIfDue()
    }

    /// Starts a save if one is due and none runs; returns whether it did.
    mutating func startIfDue() -> Bool {
        guard !saving, committed >= due else { return false }
        saving = true
        started = committed
        forgotten = false
        return true
    }

    /// The log was cut back to `sequence`: a state saved before may hold events it no
    /// longer has, so a save is due now (after the running one, whose copy may predate
    /// the cut).
    mutating func forget(at sequence: UInt64) {
        committed = sequence
        due = 0
        lastSaved = nil
        if saving { forgotten = true }
    }

    /// What the thread does: save if a save runs (started by a commit while the thread
    /// was awake) or is due (the last commit came while the thread saved); else sleep
    /// until a commit starts one.
    mutating func next(now: ContinuousClock.Instant) -> ScheduledStep {
        saving || startIfDue() ? .work : .sleep(until: nil)
    }

    /// The running save ended: `saved`, or `nil` if it failed.
    mutating func finished(_ saved: Saved?) {
        saving = false
        if saved != nil { saves += 1 }
        if forgotten {
            due = 0
        } else if let saved {
            due = Self.sum(saved.sequence, Self.eventsBetween(savedBytes: saved.bytes, least: least))
            lastSaved = saved.sequence
        } else {
            due = Self.sum(started, least)
        }
        forgotten = false
    }

    private static func sum(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : total
    }
}
