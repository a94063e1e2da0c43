/// The leader's view of its followers' durable positions, and the last event a majority
/// holds: a pure value, so the quorum rule is tested without sockets.
///
/// Only acknowledgements of this epoch from members count: a follower acknowledges only
/// events it applied after the append-entries check, so its log up to its acknowledged
/// position is the leader's. An acknowledgement counts only for the member its connection
/// can speak for: one whose connection comes from an address its advertised host resolves
/// to (``sources``), so a process elsewhere cannot complete a quorum write by naming a
/// member it is not.
///
/// While the membership changes (``beginChange(to:)``), a quorum needs a majority of the
/// old members and one of the new (joint consensus), so that every write acknowledged
/// before, during or after the change is held by a majority of whichever membership the
/// next leader finds.
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

    /// The leader's own address (it holds everything it committed).
    let me: String
    /// The voting members, the leader usually among them.
    private(set) var members: Membership
    /// The membership being moved to, while a change is under way.
    private(set) var pending: Membership?
    /// For each member (`HOST:PORT`), the addresses its connections may come from.
    private(set) var sources: [String: Set<String>]
    private(set) var followers: [String: Follower] = [:]

    /// The most followers that are not members kept at once (nodes still joining, members
    /// removed, or any address a peer with the cluster secret names): past it, the one
    /// heard from longest ago is forgotten, one without a stream open first, when a new
    /// address comes. Members are always kept. (A forgotten node with a stream open, which
    /// takes more than this many others with streams, shows as not streaming until its
    /// next acknowledgement.)
    static let maxNonMembers = 64

    init(me: String, members: Membership, sources: [String: Set<String>]) {
        self.me = me
        self.members = members
        self.sources = sources
    }

    /// Whether `address` votes now (in the membership or the one being moved to).
    func isMember(_ address: String) -> Bool {
        address != me && (members.contains(address) || pending?.contains(address) == true)
    }

    /// Whether a connection from `source` (an IP address) may speak for `address`: any
    /// source for an address that is not a member (it counts for nothing), a source of
    /// the member's host for a member.
    func mayActAs(_ address: String, from source: String) -> Bool {
        guard isMember(address) else { return true }
        return sources[address]?.contains(HostAddresses.normalize(source)) == true
    }

    /// Replaces the addresses `member` may connect from (its host was resolved again).
    mutating func setSources(_ addresses: Set<String>, for member: String) {
        sources[member] = addresses
    }

    /// The voting members changed (the coordinator's list): a change under way ends.
    mutating func setMembers(_ membership: Membership) {
        members = membership
        pending = nil
    }

    /// Starts moving to `membership`: quorums need a majority of both until
    /// ``setMembers(_:)`` or ``abortChange()``.
    mutating func beginChange(to membership: Membership) {
        pending = membership
    }

    /// The change did not happen.
    mutating func abortChange() {
        pending = nil
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
        keep(follower, at: address)
        return true
    }

    /// Counts a Replicate stream to `address` opening (+1) or closing (-1; nothing for an
    /// address forgotten meanwhile).
    mutating func stream(address: String, node: String, delta: Int, at now: ContinuousClock.Instant) {
        guard delta > 0 || followers[address] != nil else { return }
        var follower = followers[address] ?? Follower(node: node, acked: 0, epoch: 0, lastSeen: now)
        follower.streams = max(0, follower.streams + delta)
        keep(follower, at: address)
    }

    /// The follower at `address` showed that its log holds at most `sequence` of this
    /// leader's events (a stream that opens from its last event, one refused as diverged):
    /// its acknowledged position comes down to that, never up. A follower replaced at the
    /// same address, or one that cut its log, holds less than the one before acknowledged;
    /// that old position would count towards quorums and let its stream's flow control
    /// pass without waiting. Its next acknowledgement raises it again.
    mutating func holds(address: String, atMost sequence: UInt64) {
        guard let acked = followers[address]?.acked, acked > sequence else { return }
        followers[address]?.acked = sequence
    }

    /// Stores `follower`; a new address that is not a member pushes out the least
    /// recently heard of the others while they are ``maxNonMembers`` or more (more once
    /// members were removed: they are forgotten then too).
    private mutating func keep(_ follower: Follower, at address: String) {
        let isNew = followers.updateValue(follower, forKey: address) == nil
        guard isNew, !isMember(address) else { return }
        var others = followers.filter { !isMember($0.key) && $0.key != address }
        while others.count >= Self.maxNonMembers, let oldest = others.min(by: { Self.evictionRank($0.value) < Self.evictionRank($1.value) }) {
            followers[oldest.key] = nil
            others[oldest.key] = nil
        }
    }

    /// The order in which followers that are not members are forgotten: without a stream
    /// open first, then the one heard from longest ago.
    private static func evictionRank(_ follower: Follower) -> (Int, ContinuousClock.Instant) {
        (follower.streams > 0 ? 1 : 0, follower.lastSeen)
    }

    /// Forgets every follower (the node stopped leading).
    mutating func reset() { followers.removeAll() }

    /// The last event held by a majority (of both memberships during a change), the
    /// leader (which holds everything it committed) included: `UInt64.max` when the
    /// leader alone is a majority.
    func quorumSequence(epoch: UInt64) -> UInt64 {
        let current = quorumSequence(of: members, epoch: epoch)
        guard let pending else { return current }
        return min(current, quorumSequence(of: pending, epoch: epoch))
    }

    /// The last event a majority of `membership` holds.
    func quorumSequence(of membership: Membership, epoch: UInt64) -> UInt64 {
        let needed = membership.majority - (membership.contains(me) ? 1 : 0)
        if needed <= 0 { return .max }
        // Asked at each acknowledgement and each quorum write: the acks are gathered into
        // one array, without the dictionaries a filter makes.
        var acks: [UInt64] = []
        acks.reserveCapacity(followers.count)
        for (address, follower) in followers where follower.epoch == epoch && address != me && membership.contains(address) {
            acks.append(follower.acked)
        }
        guard acks.count >= needed else { return 0 }
        acks.sort(by: >)
        return acks[needed - 1]
    }
}
