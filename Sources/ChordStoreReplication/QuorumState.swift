/// The leader's view of its followers' durable positions, and the last event a majority
/// holds: a pure value, so the quorum rule is tested without sockets.
///
/// Only acknowledgements of this epoch from configured members count: a follower
/// acknowledges only events it applied after the append-entries check, so its log up to
/// its acknowledged position is the leader's. An acknowledgement counts only for the
/// member its connection can speak for: until members authenticate, one whose connection
/// comes from an address its advertised host resolves to (``sources``), so a process
/// elsewhere cannot complete a quorum write by naming a member it is not.
struct QuorumState: Sendable {
    /// One follower's progress.
    struct Follower: Sendable {
        var node: String
        var acked: UInt64
        var epoch: UInt64
        var lastSeen: ContinuousClock.Instant
        /// Replicate streams open to it now.
        var streams = 0
    }

    let peers: Set<String>
    let majority: Int
    /// For each member (`HOST:PORT`), the addresses its connections may come from.
    private(set) var sources: [String: Set<String>]
    private(set) var followers: [String: Follower] = [:]

    init(peers: [String], majority: Int, sources: [String: Set<String>]) {
        self.peers = Set(peers)
        self.majority = majority
        self.sources = sources
    }

    /// Whether a connection from `source` (an IP address) may speak for `address`: any
    /// source for an address that is not a member (it counts for nothing), a source of
    /// the member's host for a member.
    func mayActAs(_ address: String, from source: String) -> Bool {
        guard peers.contains(address) else { return true }
        return sources[address]?.contains(HostAddresses.normalize(source)) == true
    }

    /// Replaces the addresses `member` may connect from (its host was resolved again).
    mutating func setSources(_ addresses: Set<String>, for member: String) {
        sources[member] = addresses
    }

    /// Records that the follower at `address` holds events up to `sequence`, if the
    /// connection it came from (`source`) may speak for it; returns whether it did.
    @discardableResult
    mutating func ack(
        address: String, from source: String, node: String, sequence: UInt64, epoch: UInt64, at now: ContinuousClock.Instant
    ) -> Bool {
        guard mayActAs(address, from: source) else { return false }
        var follower = followers[address] ?? Follower(node: node, acked: 0, epoch: epoch, lastSeen: now)
        if epoch != follower.epoch { follower.acked = 0 }  // a new epoch: its old position no longer says anything
        follower.node = node
        follower.epoch = epoch
        follower.acked = max(follower.acked, sequence)
        follower.lastSeen = now
        followers[address] = follower
        return true
    }

    /// Counts a Replicate stream to `address` opening (+1) or closing (-1).
    mutating func stream(address: String, node: String, delta: Int, at now: ContinuousClock.Instant) {
        var follower = followers[address] ?? Follower(node: node, acked: 0, epoch: 0, lastSeen: now)
        follower.streams = max(0, follower.streams + delta)
        followers[address] = follower
    }

    /// Forgets every follower (the node stopped leading).
    mutating func reset() { followers.removeAll() }

    /// The last event held by a majority, the leader (which holds everything it
    /// committed) included: `UInt64.max` when the leader alone is a majority.
    func quorumSequence(epoch: UInt64) -> UInt64 {
        let needed = majority - 1
        if needed <= 0 { return .max }
        let acks = followers.filter { peers.contains($0.key) && $0.value.epoch == epoch }.map(\.value.acked).sorted(by: >)
        return acks.count >= needed ? acks[needed - 1] : 0
    }
}
