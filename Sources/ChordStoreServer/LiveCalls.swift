import ChordStoreAPI
import ChordStoreDomain
import ChordStoreWire
import Synchronization

/// The calls that may run for long, by token and store: server streams, live queries,
/// reads waiting for a `min_sequence`, unary calls run as tasks, on every transport. It
/// bounds what one token and one store hold (``CallQuota``), and ends every call of a
/// token the moment it is revoked, whether or not the call has anything to send
/// (docs/SECURITY.md): the server calls ``endRevoked(isLive:)`` on each change of the
/// tokens.
final class LiveCalls: Sendable {
    /// A registered call: give it back with ``leave(_:)`` when its work ends.
    struct Ticket: Sendable, Hashable {
        fileprivate let id: Int
    }

    private struct Entry {
        /// The token the call showed, counted by the quota.
        var tokenID: String?
        /// The token, if it can be revoked (the node's own admin token cannot).
        var grant: TokenGrant?
        var kind: CallQuota.Kind?
        var store: String
        /// Ends the call with this status (its transport's way).
        var end: @Sendable (WireError) -> Void
    }

    private struct State {
        var quota: CallQuota
        var calls: [Int: Entry] = [:]
        var next = 0
    }

    private let state: Mutex<State>
    /// Whether a token still works (`nil`: no authentication, nothing is revoked).
    private let isLive: (@Sendable (TokenGrant) -> Bool)?

    init(limits: WireLimits, isLive: (@Sendable (TokenGrant) -> Bool)?) {
        state = Mutex(State(quota: CallQuota(limits: limits)))
        self.isLive = isLive
    }

    /// Registers a call of `method` by `principal` on `store` (empty: `default`), which
    /// `end` ends if its token is revoked: `nil` for calls that need neither (a cluster
    /// member's, or one of no token that holds no stream slot), `RESOURCE_EXHAUSTED`
    /// past the quota.
    func enter(
        _ method: Method, principal: Principal, store: String, end: @escaping @Sendable (WireError) -> Void
    ) throws(WireError) -> Ticket? {
        if case .member = principal { return nil }
        let grant: TokenGrant? = if case .token(let grant) = principal, grant.id != TokenGrant.localAdminID { grant } else { nil }
        let kind = CallQuota.kind(of: method)
        guard grant != nil || kind != nil else { return nil }
        let resolved = StoreName.resolved(store)
        let tokenID: String? = if case .token(let grant) = principal { grant.id } else { nil }
        let ticket = try state.withLock { state throws(WireError) -> Ticket in
            if let kind, let refusal = state.quota.take(kind, token: tokenID, store: resolved) { throw refusal }
            state.next += 1
            state.calls[state.next] = Entry(tokenID: tokenID, grant: grant, kind: kind, store: resolved, end: end)
            return Ticket(id: state.next)
        }
        // Checked once registered: a revocation committed since the call was admitted is
        // seen here, and one committed later finds the call in ``endRevoked(isLive:)``.
        if let grant, let isLive, !isLive(grant) {
            leave(ticket)
            throw Self.revoked(grant)
        }
        return ticket
    }

    /// The end of a call whose token was revoked.
    private static func revoked(_ grant: TokenGrant) -> WireError {
        WireError(.unauthenticated, "token \(grant.id) was revoked while this call ran", reason: .tokenRevoked)
    }

    /// Forgets a call whose work ended, giving its slot back.
    func leave(_ ticket: Ticket?) {
        guard let ticket else { return }
        state.withLock { state in
            guard let entry = state.calls.removeValue(forKey: ticket.id), let kind = entry.kind else { return }
            state.quota.release(kind, token: entry.tokenID, store: entry.store)
        }
    }

    /// Ends, with `UNAUTHENTICATED`, every call whose token is no longer live (revoked, or
    /// scoped to a store that was deleted). Their slots come back as their work ends.
    func endRevoked() {
        guard let isLive else { return }
        // Judged outside the lock: a token's check may read the store.
        let revocable = state.withLock { state in state.calls.values.filter { $0.grant != nil } }
        var verdicts: [String: Bool] = [:]
        for entry in revocable {
            guard let grant = entry.grant else { continue }
            if verdicts[grant.id] == nil { verdicts[grant.id] = isLive(grant) }
        }
        for entry in revocable where verdicts[entry.grant?.id ?? ""] == false {
            if let grant = entry.grant { entry.end(Self.revoked(grant)) }
        }
    }

    /// Calls registered now (tests).
    var count: Int { state.withLock { $0.calls.count } }
}
