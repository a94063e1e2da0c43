/// The cluster as its coordinator holds it: who holds the leader key, and who votes.
public struct ClusterView: Sendable, Hashable {
    /// The holder of the leader key (`nil`: no member leads).
    public var leader: LeaderClaim?
    /// The voting members.
    public var members: Membership
    /// The coordinator's revision this view was read at.
    public var revision: Int64

    /// A view.
    public init(leader: LeaderClaim?, members: Membership, revision: Int64) {
        self.leader = leader
        self.members = members
        self.revision = revision
    }
}

/// The leader key's holder: a member, the epoch it took, and the lease that keeps the key.
public struct LeaderClaim: Sendable, Hashable {
    /// The leader's advertised `HOST:PORT`.
    public var address: String
    /// Its `--node` name.
    public var node: String
    /// The epoch it leads.
    public var epoch: UInt64
    /// The coordinator's lease the key is attached to.
    public var lease: Int64

    /// A claim.
    public init(address: String, node: String, epoch: UInt64, lease: Int64) {
        self.address = address
        self.node = node
        self.epoch = epoch
        self.lease = lease
    }
}

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
