import Synchronization

/// The moment from which the writer refuses commands: a coordinated leader's lease end
/// (docs/REPLICATION.md, "The lease"). Read by the writer thread before and after each
/// commit, set by the replication driver whenever the lease is renewed; one atomic.
final class WriteDeadline: Sendable {
    /// The instant every deadline is counted from.
    private static let origin = ContinuousClock.now
    /// Nanoseconds after ``origin``; `Int64.max`: none.
    private let nanoseconds = Atomic<Int64>(.max)

    /// Sets the deadline (`nil`: none).
    func set(_ instant: ContinuousClock.Instant?) {
        nanoseconds.store(instant.map { Self.offset($0) } ?? .max, ordering: .releasing)
    }

    /// The deadline (`nil`: none).
    var instant: ContinuousClock.Instant? {
        let value = nanoseconds.load(ordering: .acquiring)
        return value == .max ? nil : Self.origin + .nanoseconds(value)
    }

    /// Whether `now` is at or past the deadline.
    func hasPassed(at now: ContinuousClock.Instant = .now) -> Bool {
        let value = nanoseconds.load(ordering: .acquiring)
        return value != .max && Self.offset(now) >= value
    }

    private static func offset(_ instant: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (instant - origin).components
        let nanos = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanos.overflow else { return seconds < 0 ? .min : .max - 1 }
        return nanos.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
