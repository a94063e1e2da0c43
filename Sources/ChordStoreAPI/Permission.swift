/// What a method needs of its caller (docs/SECURITY.md). Every method declares one in
/// its ``MethodSpec``; the server's principal check decides each call.
public enum Permission: String, Sendable, CaseIterable {
    /// No credential: the server's health.
    case anyone
    /// Reading the call's store: a read-only or read-write token of that store, or admin.
    case read
    /// Changing the call's store: a read-write token of that store, or admin.
    case write
    /// The whole server (stores and tokens): an admin token.
    case admin
    /// The node's place in its cluster: an admin token or a cluster member.
    case clusterStatus
    /// The cluster's membership (`AddMember`, `RemoveMember`): an admin token or a
    /// cluster member.
    case clusterChange
    /// Replication and the cluster's own calls: cluster members only (the cluster secret).
    case member
    /// A copy of the node's whole data (`Backup`, which a new follower bootstraps from):
    /// an admin token or a cluster member.
    case dataCopy
}
