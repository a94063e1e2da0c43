public import ChordStoreEngine
import ChordStoreClient
public import ChordStoreDomain
public import ChordStoreProto
import ChordStoreWire
import Foundation
public import Logging
import Synchronization

/// One member of a replicated cluster: its role (leader or follower), its followers'
/// progress and the quorum writes waiting on them, its replication from the leader, and
/// promotion and stepping down. See docs/REPLICATION.md for the failure model.
///
/// The leader serves `Replicate` streams and counts acknowledgements; a follower runs
/// ``followLoop()`` (copy, apply, acknowledge, and after a divergence park and truncate).
/// The store accepts commands only while the node leads.
public final class ReplicationNode: Sendable {
    /// Reaches the other members, showing this node's credentials.
    var probe: PeerProbe { PeerProbe(credentials: config.credentials) }

    /// Leading or following.
    public enum Role: String, Sendable {
        case leader, follower
    }

    /// What a waiting call needs acknowledged.
    enum AckGoal: Sendable {
        /// A majority holds this event (a quorum write).
        case quorum(UInt64)
        /// This follower holds this event (a Replicate stream's flow control).
        case follower(String, UInt64)

        func isMet(by quorum: QuorumState, epoch: UInt64) -> Bool {
            switch self {
            case .quorum(let sequence): quorum.quorumSequence(epoch: epoch) >= sequence
            case .follower(let address, let sequence): (quorum.followers[address]?.acked ?? 0) >= sequence
            }
        }
    }

    struct State {
        var role: Role = .follower
        var leader: String?
        var quorum: QuorumState
        /// The epoch this node granted by ``fence(epoch:leader:)`` or took when promoted,
        /// and to whom: each epoch goes to one leader only.
        var granted: (epoch: UInt64, leader: String)?
        var replication = "starting"
        /// Whether ``start()`` has taken a role yet.
        var decided = false
        var parked: UInt64 = 0
        var task: Task<Void, Never>?
        var stopped = false
        /// When each member's host was last resolved again after a refused connection.
        var resolved: [String: ContinuousClock.Instant] = [:]
        /// The last reason following failed that was logged, and when.
        var loggedFailure: (detail: String, at: ContinuousClock.Instant)?
        /// A follower's last word from its leader.
        var heard: FollowProgress?
    }

    /// What a follower last heard from its leader: how far the leader's log went, and
    /// when (a batch or a heartbeat).
    public struct FollowProgress: Sendable, Hashable {
        /// The leader's last event when it sent its last batch.
        public var leaderLastSequence: UInt64
        /// When that batch arrived.
        public var at: ContinuousClock.Instant
    }

    /// A follower's last word from its leader (`nil` on a leader, or before the first).
    public var followProgress: FollowProgress? { state.withLock { $0.role == .follower ? $0.heard : nil } }

    /// The configuration.
    public let config: ReplicationConfig
    let store: ChordStore
    let logger: Logger
    let state: Mutex<State>
    /// Quorum writes and Replicate streams waiting for acknowledgements.
    let ackWaiters = Waiters<AckGoal, Bool>()
    /// The address this node's replication connections come from: its advertised host's,
    /// when this machine owns it (the leader checks it, see ``QuorumState``).
    let sourceAddress: String?

    /// Creates the node; ``start()`` decides its role. Resolves the members' hosts (a
    /// member's acknowledgements must come from one of its host's addresses).
    public init(config: ReplicationConfig, store: ChordStore, logger: Logger) {
        self.config = config
        self.store = store
        self.logger = logger
        var sources: [String: Set<String>] = [:]
        for peer in config.peers { sources[peer] = HostAddresses.resolve(HostAddresses.host(of: peer)) }
        self.state = Mutex(State(quorum: QuorumState(peers: config.peers, majority: config.majority, sources: sources)))
        // IPv4 first: a leader reached over IPv4 cannot be dialled from an IPv6 address.
        self.sourceAddress = HostAddresses.resolve(HostAddresses.host(of: config.address))
            .sorted { $0.contains(".") != $1.contains(".") ? $0.contains(".") : $0 < $1 }
            .first(where: HostAddresses.isLocal)
        store.acceptsCommands = false
    }

    /// Takes the configured role: follows `config.follow` if set; otherwise leads, unless
    /// a reachable peer already leads with a newer epoch (a former leader coming back),
    /// which it then follows.
    public func start() async {
        if sourceAddress == nil, !config.peers.isEmpty {
            logger.warning("this node's advertised host is not an address of this machine", metadata: [
                "advertise": "\(config.address)",
                "effect": "its replication connections come from the address the system picks; a leader counts its acknowledgements only if that is an address of the advertised host",
            ])
        }
        if let leader = config.follow {
            becomeFollower(of: leader, reason: "configured with --follow")
            return
        }
        if let newer = await probe.statuses(config.peers).first(where: { $0.role == Role.leader.rawValue && $0.epoch > store.epoch }) {
            becomeFollower(of: newer.address, reason: "\(newer.address) leads with epoch \(newer.epoch), newer than \(store.epoch)")
            return
        }
        becomeLeader()
    }

    /// Stops replication and the leader's checks; writes are refused and quorum waits fail.
    public func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            state.role = .follower
            store.acceptsCommands = false
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
        failWaiters()
    }

    /// The role now.
    public var role: Role { state.withLock { $0.role } }

    /// The role now, or "starting" before ``start()`` has taken one (it may ask its peers
    /// first): what a log line says.
    public var roleDescription: String {
        state.withLock { $0.decided ? $0.role.rawValue : "starting" }
    }

    /// The leader's address as this node knows it (itself when it leads).
    public var leader: String? { state.withLock { $0.leader } }

    // MARK: Roles

    func becomeLeader() {
        let previous = state.withLock { state -> Task<Void, Never>? in
            guard !state.stopped else { return nil }
            state.role = .leader
            state.decided = true
            state.leader = config.address
            state.heard = nil
            state.replication = "leading"
            state.quorum.reset()
            let previous = state.task
            state.task = Task { [self] in await monitorPeers() }
            store.acceptsCommands = true  // under the lock: a concurrent step-down cannot be undone
            return previous
        }
        previous?.cancel()
        logger.notice("leading", metadata: ["epoch": "\(store.epoch)", "members": "\(config.members)"])
    }

    func becomeFollower(of leader: String?, reason: String) {
        let previous = state.withLock { state -> Task<Void, Never>? in
            store.acceptsCommands = false
            guard !state.stopped else { return nil }
            let wasFollowing = state.role == .follower && state.task != nil
            state.role = .follower
            state.decided = true
            state.leader = leader
            state.quorum.reset()
            if wasFollowing { return nil }  // the running loop picks up the new leader
            let previous = state.task
            state.task = Task { [self] in await followLoop() }
            return previous
        }
        previous?.cancel()
        failWaiters()
        logger.notice("following", metadata: ["leader": "\(leader ?? "unknown")", "reason": "\(reason)"])
    }

    /// A member showed its epoch: if it is newer than this leader's, step down. Two
    /// leaders of the same epoch (only a forced promotion or a misconfiguration makes
    /// them) are resolved by address: the one with the greater address steps down.
    func observe(epoch: UInt64, from address: String, leading: Bool) {
        guard role == .leader, address != config.address else { return }
        if epoch > store.epoch {
            becomeFollower(of: leading ? address : nil, reason: "\(address) has epoch \(epoch), newer than \(store.epoch)")
        } else if leading, epoch == store.epoch, address < config.address {
            becomeFollower(of: address, reason: "\(address) also leads epoch \(epoch)")
        }
    }

    /// A follower showed its epoch over a connection from `source`: if the follower is a
    /// member (checked with ``checkSource(_:_:)``) and its epoch is newer than this
    /// node's, a new leader was promoted, and this node steps down.
    public func observeEpoch(_ epoch: UInt64, from address: String) {
        guard config.peers.contains(address) else { return }
        observe(epoch: epoch, from: address, leading: false)
    }

    /// Throws `permissionDenied` unless a connection from `source` (an IP address) may
    /// speak for the follower at `address` (see ``QuorumState/mayActAs(_:from:)``). On a
    /// refusal the member's host is resolved again in the background (at most every 5 s),
    /// in case its addresses changed: a later call sees the result. Resolving never holds
    /// up a call: a slow name server would otherwise stall the threads that serve them.
    public func checkSource(_ address: String, _ source: String) throws(ChordStoreError) {
        if state.withLock({ $0.quorum.mayActAs(address, from: source) }) { return }
        let due = state.withLock { state -> Bool in
            let now = ContinuousClock.now
            if let last = state.resolved[address], now - last < .seconds(5) { return false }
            state.resolved[address] = now
            return true
        }
        if due {
            logger.warning("refused a replication call naming a member from another address", metadata: [
                "member": "\(address)", "from": "\(source)",
            ])
            Thread.detachNewThread { [self] in
                let fresh = HostAddresses.resolve(HostAddresses.host(of: address))
                if !fresh.isEmpty { state.withLock { $0.quorum.setSources(fresh, for: address) } }
            }
        }
        throw Self.cannotSpeak(for: address, from: source)
    }

    static func cannotSpeak(for address: String, from source: String) -> ChordStoreError {
        ChordStoreError(
            .permissionDenied,
            "a connection from \(source) cannot speak for member \(address): a member's replication connections come from its advertised host")
    }

    /// The leader's checks: a peer that leads with a newer epoch makes this node step down.
    private func monitorPeers() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: config.probeInterval)
            guard !Task.isCancelled, role == .leader else { return }
            for status in await probe.statuses(config.peers) where status.role == Role.leader.rawValue {
                observe(epoch: status.epoch, from: status.address, leading: true)
            }
        }
    }

    // MARK: Writes

    /// Why this node refuses a write now: `nil` if it leads, else the leader's address
    /// (empty if unknown).
    public func writeRefusal() -> String? {
        state.withLock { $0.role == .leader ? nil : ($0.leader ?? "") }
    }

    /// Records a follower's durable position, reported over a connection from `source`
    /// (an IP address); wakes the quorum writes it completes. Returns this node's epoch.
    /// Refused with `permissionDenied` when that connection cannot speak for `address`
    /// (``checkSource(_:_:)``): it then counts for nothing.
    public func acknowledge(address: String, from source: String, node: String, sequence: UInt64, epoch: UInt64) throws(ChordStoreError) -> UInt64 {
        try checkSource(address, source)
        observeEpoch(epoch, from: address)
        let current = store.epoch
        let counted = state.withLock { state -> QuorumState? in
            // The sources may have been resolved again since the check: decided here.
            guard state.quorum.ack(address: address, from: source, node: node, sequence: sequence, epoch: epoch, at: .now) else {
                return nil
            }
            return state.quorum
        }
        guard let counted else { throw Self.cannotSpeak(for: address, from: source) }
        ackWaiters.resume { $0.isMet(by: counted, epoch: current) ? true : nil }
        return current
    }

    /// Counts a Replicate stream to a follower opening or closing (for status).
    public func streamChanged(address: String, node: String, delta: Int) {
        state.withLock { $0.quorum.stream(address: address, node: node, delta: delta, at: .now) }
    }

    /// Waits until a majority of members hold event `sequence`. Returns `false` when
    /// ``ReplicationConfig/quorumTimeout`` passes, the task is cancelled (its call's
    /// deadline) or the node stops leading first.
    public func waitForQuorum(_ sequence: UInt64) async -> Bool {
        await wait(for: .quorum(sequence), timeout: config.quorumTimeout)
    }

    /// Waits until the follower at `address` acknowledged event `sequence`, at most
    /// `timeout`: a Replicate stream sends its next batch once the last one is applied,
    /// so that records arriving meanwhile travel, and are committed, together.
    public func waitForAcknowledgement(from address: String, of sequence: UInt64, timeout: Duration) async -> Bool {
        await wait(for: .follower(address, sequence), timeout: timeout)
    }

    private func wait(for goal: AckGoal, timeout: Duration) async -> Bool {
        let epoch = store.epoch
        return await ackWaiters.wait(for: goal, timeout: timeout, otherwise: false) { goal in
            state.withLock { state -> Bool? in
                if state.role != .leader { return false }
                return goal.isMet(by: state.quorum, epoch: epoch) ? true : nil
            }
        }
    }

    private func failWaiters() {
        ackWaiters.resumeAll(with: false)
    }

    // MARK: Status and promotion

    /// What this node reports through `GetNodeStatus` and `chordstore status`.
    public func status() throws(ChordStoreError) -> Chordstore_V1_NodeStatus {
        let head = try store.head()
        let epoch = store.epoch
        let snapshot = state.withLock { $0 }
        var status = Chordstore_V1_NodeStatus()
        status.node = config.node
        status.address = config.address
        status.role = snapshot.role.rawValue
        status.epoch = epoch
        status.lastEpoch = head.epoch
        status.lastSequence = head.sequence
        status.lastChecksum = head.checksum
        status.leader = snapshot.leader ?? ""
        status.members = UInt32(config.members)
        status.replication = snapshot.replication
        status.parkedEvents = snapshot.parked
        guard snapshot.role == .leader else { return status }
        status.quorumSequence = min(head.sequence, snapshot.quorum.quorumSequence(epoch: epoch))
        let now = ContinuousClock.now
        let wallNow = Instant.now
        for (address, follower) in snapshot.quorum.followers.sorted(by: { $0.key < $1.key }) {
            var entry = Chordstore_V1_FollowerStatus()
            entry.node = follower.node
            entry.address = address
            entry.ackedSequence = min(follower.acked, head.sequence)
            entry.lagEvents = head.sequence - entry.ackedSequence
            if entry.lagEvents > 0, let oldest = try store.logEvents(from: entry.ackedSequence + 1, limit: 1).first {
                entry.lagMillis = UInt64(max(0, wallNow.microsecondsSince1970 - oldest.timestamp.microsecondsSince1970) / 1_000)
            }
            entry.lastSeenMillis = UInt64(max(0, (now - follower.lastSeen) / .milliseconds(1)))
            entry.streaming = follower.streams > 0
            status.followers.append(entry)
        }
        return status
    }

    /// Whether `status`'s log is ahead of `head`: logs compare by their last event's
    /// epoch, then by length (Raft's "at least as up to date").
    static func isAhead(_ status: Chordstore_V1_NodeStatus, of head: LogPosition) -> Bool {
        (status.lastEpoch, status.lastSequence) > (head.epoch, head.sequence)
    }

    /// Makes this follower the leader, in four steps:
    /// 1. a reachable member whose log is ahead of this one refuses it (unless `force`);
    /// 2. it takes an epoch above every one it knows or can reach, persisted;
    /// 3. it fences the others with it (``fence(epoch:leader:)``): a majority of members,
    ///    itself included, must adopt the epoch, after which none of them acknowledges
    ///    the old leader, whose quorum writes can no longer succeed;
    /// 4. none of the fenced members may be ahead of it (unless `force`).
    /// On refusal it follows again (whoever leads).
    public func promote(force: Bool) async throws(ChordStoreError) -> Chordstore_V1_NodeStatus {
        let task = state.withLock { state -> Task<Void, Never>?? in
            guard state.role == .follower, !state.stopped, state.replication != Self.promoting else { return .none }
            state.replication = Self.promoting
            defer { state.task = nil }
            return .some(state.task)
        }
        guard let task else {
            if role == .leader { return try status() }
            throw ChordStoreError(.failedPrecondition, "this node is already being promoted, or is stopping")
        }
        task?.cancel()
        await task?.value
        do throws(ChordStoreError) {
            if let refusal = store.writeRefusal, refusal.code == .dataLoss {
                throw ChordStoreError(.failedPrecondition, "this node's log is damaged, it could not lead: \(refusal.message)")
            }
            let head = try store.head()
            let reachable = await probe.statuses(config.peers)
            try Self.checkAhead(reachable, of: head, force: force)
            let highest = max(store.epoch, reachable.map(\.epoch).max() ?? 0)
            guard highest < LogPosition.maxEpoch else {
                throw ChordStoreError(
                    .failedPrecondition,
                    "epoch \(highest) is the largest possible (\(LogPosition.maxEpoch)): no epoch is left to promote with")
            }
            let epoch = try await store.adoptEpoch(highest + 1)
            state.withLock { $0.granted = (epoch, config.address) }
            let fenced = await probe.fence(config.peers, epoch: epoch, leader: config.address)
            guard fenced.count + 1 >= config.majority || force else {
                throw ChordStoreError(
                    .unavailable,
                    "only \(fenced.count + 1) of \(config.members) members took epoch \(epoch); a majority (\(config.majority)) is needed")
            }
            try Self.checkAhead(fenced, of: head, force: force)
            logger.notice("promoted", metadata: ["epoch": "\(epoch)", "last": "\(head.sequence)", "fenced": "\(fenced.count)", "forced": "\(force)"])
            becomeLeader()
            return try status()
        } catch {
            logger.warning("promotion refused", metadata: ["error": "\(error)"])
            state.withLock { $0.replication = "promotion refused: \(error.message)" }
            becomeFollower(of: nil, reason: "promotion refused")
            throw error
        }
    }

    private static let promoting = "being promoted"

    private static func checkAhead(_ statuses: [Chordstore_V1_NodeStatus], of head: LogPosition, force: Bool) throws(ChordStoreError) {
        let ahead = statuses.filter { isAhead($0, of: head) }
        guard !ahead.isEmpty, !force else { return }
        let names = ahead.map { "\($0.address) (\($0.lastSequence) events, last of epoch \($0.lastEpoch))" }.joined(separator: ", ")
        throw ChordStoreError(
            .failedPrecondition,
            "\(names) is ahead of this node (\(head.sequence) events, last of epoch \(head.epoch)): promote the member that is furthest ahead, or pass force")
    }

    /// Adopts `epoch` for `leader`, which is being promoted: persisted, after which this
    /// node refuses the batches of older epochs and acknowledges nothing to their leader.
    /// Refused for an older epoch, or for this node's epoch granted to another leader.
    public func fence(epoch: UInt64, leader: String) async throws(ChordStoreError) -> Chordstore_V1_NodeStatus {
        try LogPosition.checkEpoch(epoch)  // before it is granted
        let refusal = state.withLock { state -> String? in
            if epoch < store.epoch { return "epoch \(epoch) is older than this node's (\(store.epoch))" }
            if let granted = state.granted, granted.epoch == epoch, granted.leader != leader {
                return "epoch \(epoch) was already granted to \(granted.leader)"
            }
            if epoch == store.epoch, state.role == .leader { return "this node leads epoch \(epoch)" }
            state.granted = (epoch, leader)
            return nil
        }
        if let refusal { throw ChordStoreError(.failedPrecondition, refusal) }
        try await store.adoptEpoch(epoch)
        if role == .leader {
            becomeFollower(of: leader, reason: "fenced by \(leader) with epoch \(epoch)")
        } else {
            state.withLock { $0.leader = leader }
        }
        return try status()
    }
}
