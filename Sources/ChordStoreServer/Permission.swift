/// What a method needs of its caller (docs/SECURITY.md). Every method declares one in
/// ``ServiceDispatcher/registry``; ``Principal/check(_:store:)`` decides each call.
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
    /// Replication and the cluster's own calls: cluster members only (the cluster secret).
    case member
}

/// One method's entry in the registry: the permission it needs and how it runs.
public struct MethodEntry: Sendable {
    public let permission: Permission
    public let handler: MethodHandler

    /// An entry needing `permission`.
    public init(_ permission: Permission, _ handler: MethodHandler) {
        self.permission = permission
        self.handler = handler
    }

    static func anyone(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.anyone, handler) }
    static func read(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.read, handler) }
    static func write(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.write, handler) }
    static func admin(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.admin, handler) }
    static func clusterStatus(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.clusterStatus, handler) }
    static func member(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.member, handler) }
}
