/// A lease this member holds in the coordinator, and until when it may act on it.
public struct HeldLease: Sendable, Hashable {
    /// The coordinator's id of the lease.
    public var id: Int64
    /// Until when this member may accept writes under it: the send time of the last
    /// request that granted or renewed it, plus its time to live, minus a margin
    /// (``LeaseTiming``). The coordinator cannot have let it expire before then.
    public var validUntil: ContinuousClock.Instant

    /// A lease.
    public init(id: Int64, validUntil: ContinuousClock.Instant) {
        self.id = id
        self.validUntil = validUntil
    }
}
