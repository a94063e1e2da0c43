/// How a coordinated leader times its lease, all derived from the time to live so that
/// Patroni's inequality holds by construction:
///
///     renewInterval + 2 × renewTimeout ≤ ttl − margin
///
/// A leader renews every `renewInterval`; a renewal that fails after `renewTimeout` is
/// retried at once, so two lost attempts still end before its validity does. It accepts
/// writes only until `sentAt + ttl − margin`, where `sentAt` is when it sent the request
/// that granted or last renewed the lease: the coordinator started the lease's clock
/// after that moment, so it cannot have let the lease expire (and another member take
/// the key) before then, while the margin covers the two clocks' drift and the time a
/// commit takes between the writer's check and its fsync.
public struct LeaseTiming: Sendable, Hashable {
    /// The lease's time to live, as asked of the coordinator (etcd grants whole seconds,
    /// at least 2 with its default election timeout).
    public var ttl: Duration
    /// How long a member that is not first in line waits behind each member before it
    /// (same log, lower address) when the leader key is free.
    public var stagger: Duration = .milliseconds(250)
    /// How long a member waits to look again when a reachable member's log is ahead of
    /// its own and it leaves that member the key.
    public var recheck: Duration = .seconds(1)
    /// How long a member whose takeover was refused (a member ahead of it, or no
    /// majority fenced) stays out of the next elections.
    public var retryAfterRefusal: Duration = .seconds(2)

    /// Timing for a lease of `ttl`.
    public init(ttl: Duration) {
        self.ttl = ttl
    }

    /// How long a leader may go without hearing from a majority of the members before it
    /// gives its key up: twice the lease (followers are heard from every second).
    public var touchWindow: Duration { ttl * 2 }

    /// The part of the lease never used: a quarter of it.
    public var margin: Duration { ttl / 4 }
    /// How often the leader renews: every quarter of the lease.
    public var renewInterval: Duration { ttl / 4 }
    /// How long one renewal may take: a quarter of the lease.
    public var renewTimeout: Duration { ttl / 4 }

    /// Until when a lease granted or renewed for `granted` by a request sent at `sentAt`
    /// may be acted on.
    public func validUntil(sentAt: ContinuousClock.Instant, granted: Duration) -> ContinuousClock.Instant {
        sentAt + granted - margin
    }

    /// Whether renewals fit inside the lease (always, by construction; a test checks it,
    /// in case the fractions are ever changed).
    public var isSafe: Bool { renewInterval + renewTimeout * 2 <= ttl - margin }
}
