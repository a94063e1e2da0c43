/// How durable a write must be before the leader acknowledges it.
public enum Durability: String, Sendable, CaseIterable {
    /// On the leader's disk (its fsync): lost if the leader's disk is lost, and parked
    /// aside if a follower that lacks it is promoted.
    case local
    /// On the disks of a majority of the configured members: survives the loss of any
    /// minority, provided the most advanced follower is the one promoted.
    case quorum
}
