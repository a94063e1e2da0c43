/// One method's entry in the registry: the permission it needs and how it runs.
public struct MethodEntry: Sendable {
    /// What the caller must be allowed (checked before the payload is decoded).
    public let permission: Permission
    /// How the method runs.
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
    static func clusterChange(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.clusterChange, handler) }
    static func member(_ handler: MethodHandler) -> MethodEntry { MethodEntry(.member, handler) }
}
