/// When a ``ScheduledThread`` works, as a pure value: every case is tested without a
/// thread, and the thread's loop is written once.
protocol ThreadSchedule: Sendable {
    /// What one piece of work reports back (for instance what it saved, or `nil` if it failed).
    associatedtype Outcome: Sendable

    /// What the thread does at `now`; called with the thread's lock held, so a `.work`
    /// answer can mark the work as started.
    mutating func next(now: ContinuousClock.Instant) -> ScheduledStep

    /// The work that `next(now:)` started ended with `outcome`.
    mutating func finished(_ outcome: Outcome)
}

/// What a ``ScheduledThread`` does next.
enum ScheduledStep: Equatable, Sendable {
    /// Do the work now.
    case work
    /// Sleep until woken, or until the instant given.
    case sleep(until: ContinuousClock.Instant?)
}
