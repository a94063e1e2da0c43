public import ChordStoreDomain

/// What a coordinated cluster (`serve --coordinator`) needs of its coordinator: the
/// leader key with its lease, the epoch counter, and the member list, with a watch on
/// them. ``ReplicationNode`` drives it; `ChordStoreEtcd` implements it on etcd. Every
/// method fails with a ``ChordStoreError`` (`unavailable` while the coordinator cannot be
/// reached) and may be retried.
public protocol Coordinator: Sendable {
    /// Where the coordinator is, for logs and status.
    var description: String { get }

    /// Where the driver runs its work with the coordinator (the lease's renewals, the
    /// watch, elections): a thread that busy requests cannot hold up (`nil`: anywhere).
    var executor: (any TaskExecutor)? { get }

    /// The cluster now. When it has no member list yet, `initial` becomes it (the first
    /// member to start creates the cluster).
    func join(initial: Membership) async throws(ChordStoreError) -> ClusterView

    /// The cluster now, as one read shows it (nothing is created).
    func read() async throws(ChordStoreError) -> ClusterView

    /// Every change of the cluster after `view`, each as the whole new view, in order.
    /// The stream throws when the watch breaks; the caller joins again.
    func watch(after view: ClusterView) -> AsyncThrowingStream<ClusterView, any Error>

    /// Takes the leader key for `claim` (its address and node) if no one holds it, with an
    /// epoch above both `floor` and every epoch taken before, under a new lease of `ttl`.
    /// `nil` when another member holds the key. Each lease granted for the key is handed
    /// to `granted` (its id, when its grant was asked, the time to live granted) before
    /// the key is written with it, so that the caller can tell the key its own process
    /// took from one an earlier run left, even when the campaign's answer is lost.
    func campaign(
        address: String, node: String, floor: UInt64, ttl: Duration,
        granted: @Sendable (_ lease: Int64, _ sentAt: ContinuousClock.Instant, _ ttl: Duration) -> Void
    ) async throws(ChordStoreError) -> CampaignWin?

    /// Renews lease `id`: its time to live from now, or `nil` when the coordinator no longer
    /// knows it (it lapsed). The caller times the request.
    func renew(lease id: Int64, timeout: Duration) async throws(ChordStoreError) -> Duration?

    /// Gives up the leader key if lease `id` holds it, and revokes the lease.
    func resign(lease id: Int64) async throws(ChordStoreError)

    /// Replaces the member list `from` with `to`, unless it changed meanwhile (`false`).
    /// With `resigningLease`, the leader key held under that lease is deleted in the same
    /// transaction (a leader removing itself hands leadership over).
    func changeMembers(from: Membership, to: Membership, resigningLease: Int64?) async throws(ChordStoreError) -> Bool

    /// Records `incarnation` (the id of a member's data directory) for the member at
    /// `address` if none is recorded yet, or always with `replace`; returns whether the
    /// one recorded now is `incarnation`. A member whose data directory differs from the
    /// one recorded lost what it had (or was restored from a backup): it must not vouch
    /// for the writes it acknowledged before.
    func claimIncarnation(_ incarnation: String, for address: String, replace: Bool) async throws(ChordStoreError) -> Bool

    /// Closes the coordinator's connections.
    func close() async
}

extension Coordinator {
    /// ``campaign(address:node:floor:ttl:granted:)``, not told of the leases granted.
    public func campaign(address: String, node: String, floor: UInt64, ttl: Duration) async throws(ChordStoreError) -> CampaignWin? {
        try await campaign(address: address, node: node, floor: floor, ttl: ttl) { _, _, _ in }
    }
}
