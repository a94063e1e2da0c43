/// How ``ReplicationNode/waitForAcknowledgement(from:of:timeout:)`` ended.
public enum AcknowledgementWait: Sendable, Hashable {
    /// The task waited: an acknowledgement, the timeout or a cancellation ended it.
    case waited
    /// Nothing was left to wait for (the follower's position was there already, the node
    /// stopped serving replication, or no stream of the address is open): the task did
    /// not suspend.
    case decidedAtOnce
}
