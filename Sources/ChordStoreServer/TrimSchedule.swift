/// When the ``MemoryTrimmer`` trims: once releases (closed connections, ended streams)
/// have stopped for `quiet`, but never later than `longestDelay` after the first one it
/// waits for, and at most once every `interval`. A pure value: fed releases and
/// wake-ups, it says when to wake next and whether to trim.
struct TrimSchedule {
    typealias Instant = ContinuousClock.Instant

    /// What to do when woken.
    enum Wake: Equatable {
        /// Trim now.
        case trim
        /// A later release deferred the trim: wake again then.
        case sleep(until: Instant)
        /// Nothing is pending.
        case idle
    }

    let quiet: Duration
    let longestDelay: Duration
    let interval: Duration
    /// When the pending trim is due.
    private(set) var due: Instant?
    private var firstRelease: Instant?
    private var lastRun: Instant?
    private var woken = false

    init(quiet: Duration, longestDelay: Duration, interval: Duration) {
        self.quiet = quiet
        self.longestDelay = longestDelay
        self.interval = interval
    }

    /// Notes a release at `now`; returns when to wake if no wake-up is set yet.
    mutating func released(at now: Instant) -> Instant? {
        let first = firstRelease ?? now
        firstRelease = first
        var at = min(now + quiet, first + longestDelay)
        if let lastRun { at = max(at, lastRun + interval) }
        due = at
        guard !woken else { return nil }
        woken = true
        return at
    }

    /// A wake-up at `now`.
    mutating func woke(at now: Instant) -> Wake {
        guard let due else {
            woken = false
            return .idle
        }
        if due > now { return .sleep(until: due) }
        self.due = nil
        firstRelease = nil
        lastRun = now
        woken = false
        return .trim
    }
}
