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
