/// A member as its status shows it: whether it leads, its epoch, and how far its log goes.
public struct PeerView: Sendable, Hashable {
    /// Its advertised `HOST:PORT`.
    public var address: String
    /// Whether it says it leads.
    public var leading: Bool
    /// Its epoch (the newest it adopted).
    public var epoch: UInt64
    /// The epoch of its last event.
    public var lastEpoch: UInt64
    /// Its last event.
    public var lastSequence: UInt64

    /// A view of a member.
    public init(address: String, leading: Bool, epoch: UInt64, lastEpoch: UInt64, lastSequence: UInt64) {
        self.address = address
        self.leading = leading
        self.epoch = epoch
        self.lastEpoch = lastEpoch
        self.lastSequence = lastSequence
    }

    /// Whether this member's log is ahead of `other`'s: logs compare by their last event's
    /// epoch, then by length (Raft's "at least as up to date").
    public func isAhead(of other: PeerView) -> Bool {
        (lastEpoch, lastSequence) > (other.lastEpoch, other.lastSequence)
    }

    /// Whether both logs end at the same place by that order.
    public func isLevel(with other: PeerView) -> Bool {
        (lastEpoch, lastSequence) == (other.lastEpoch, other.lastSequence)
    }
}
