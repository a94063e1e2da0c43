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
