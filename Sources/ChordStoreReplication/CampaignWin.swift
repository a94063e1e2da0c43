/// A won leader key.
public struct CampaignWin: Sendable, Hashable {
    /// The epoch taken: above every epoch taken before in this cluster.
    public var epoch: UInt64
    /// The lease the key is attached to.
    public var lease: Int64
    /// The lease's time to live as granted.
    public var granted: Duration
    /// When the request that granted the lease was sent: the lease's validity counts
    /// from here (``LeaseTiming/validUntil(sentAt:granted:)``).
    public var sentAt: ContinuousClock.Instant

    /// A win.
    public init(epoch: UInt64, lease: Int64, granted: Duration, sentAt: ContinuousClock.Instant) {
        self.epoch = epoch
        self.lease = lease
        self.granted = granted
        self.sentAt = sentAt
    }
}
