public import ChordStoreAPI
public import ChordStoreDomain
public import ChordStoreWire

/// Who a call comes from, as its credentials showed (docs/SECURITY.md).
public enum Principal: Sendable, Hashable {
    /// The server runs with `--auth none` (loopback only): every call may do everything.
    case unrestricted
    /// No credential was shown.
    case anonymous
    /// A valid bearer token.
    case token(TokenGrant)
    /// A cluster member (it showed the cluster secret).
    case member

    /// The id recorded with the events the call makes (empty: none).
    public var tokenID: String {
        if case .token(let grant) = self { return grant.id }
        return ""
    }

    /// `nil` if the principal may call a method needing `permission` on `store` (the
    /// call's store; empty: `default`), else the refusal: `UNAUTHENTICATED` without a
    /// credential, `PERMISSION_DENIED` with one that does not allow it.
    public func check(_ permission: Permission, store: String) -> WireError? {
        switch (self, permission) {
        case (_, .anyone), (.unrestricted, _): return nil
        case (.anonymous, _):
            return WireError(
                .unauthenticated, "this call needs a token: send the metadata 'authorization: Bearer <token>' (docs/SECURITY.md)", reason: .tokenRequired)
        case (.member, .member), (.member, .clusterStatus), (.member, .clusterChange), (.member, .dataCopy): return nil
        case (.member, _):
            return WireError(.permissionDenied, "the cluster secret is for replication and cluster calls only; this call needs a token", reason: .secretNotForData)
        case (.token, .member):
            return WireError(.permissionDenied, "only cluster members (with the cluster secret) may make this call, not a token", reason: .membersOnly)
        case (.token(let grant), _) where grant.role == .admin: return nil
        case (.token(let grant), .read), (.token(let grant), .write):
            let target = StoreName.resolved(store)
            guard grant.storeName == target else {
                return WireError(.permissionDenied, "token \(grant.id) works on store \(grant.storeName) only, not on \(target.prefix(64))", reason: .otherStore)
            }
            if permission == .write, grant.role == .readOnly {
                return WireError(.permissionDenied, "token \(grant.id) is read-only", reason: .readOnlyToken)
            }
            return nil
        case (.token(let grant), _):
            return WireError(
                .permissionDenied, "token \(grant.id) is \(grant.role.rawValue) for store \(grant.storeName); this call needs an admin token", reason: .adminOnly)
        }
    }
}
