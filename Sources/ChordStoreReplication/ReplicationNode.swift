import ChordStoreRecords
public import ChordStoreEngine
import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
public import Logging
import Synchronization

/// One member of a replicated cluster: the driver of its ``RoleMachine``. It feeds the
/// machine what happens (peers' answers, the coordinator's view, the lease, the copy
/// loop's turns) and carries out its actions: the store's write gate, the follower's copy
/// of the leader's log, the leader's quorum waits, promotion, the coordinated election
/// and lease. See docs/REPLICATION.md for the failure model.
///
/// The leader serves `Replicate` streams and counts acknowledgements; a follower runs
/// ``followLoop()`` (copy, apply, acknowledge, and after a divergence park and truncate).
public final class ReplicationNode: Sendable {
    /// Leading or following.
    public enum Role: String, Sendable {
        case leader, follower
    }

    /// A quorum wait registered by ``whenQuorum(_:_:)``.
    public struct QuorumWait: Sendable {
        let waiters: SequenceWaiters
        let registration: SequenceWaiters.Registration

        /// Ends the wait, calling its closure with `false`, unless it has ended already.
        public func cancel() { waiters.cancel(registration) }
    }

    /// What a waiting call needs acknowledged.
    enum AckGoal: Sendable {
        /// A majority holds this event (a quorum write).
        case quorum(UInt64)
        /// A majority of this membership holds this event (a membership change).
        case majorityOf(Membership, UInt64)
        /// This follower holds this event (a Replicate stream's flow control).
        case follower(String, UInt64)

        func isMet(by quorum: QuorumState, epoch: UInt64) -> Bool {
            isMet(by: quorum, epoch: epoch, quorumSequence: quorum.quorumSequence(epoch: epoch))
        }

        /// Whether `quorum` meets the goal, given `quorum.quorumSequence(epoch:)`: an
        /// acknowledgement computes it once for every waiting write, not once for each.
        func isMet(by quorum: QuorumState, epoch: UInt64, quorumSequence: UInt64) -> Bool {
            switch self {
            case .quorum(let sequence): quorumSequence >= sequence
            case .majorityOf(let members, let sequence): quorum.quorumSequence(of: members, epoch: epoch) >= sequence
            case .follower(let address, let sequence): (quorum.followers[address]?.acked ?? 0) >= sequence
            }
        }
    }

    struct State {
        var machine: RoleMachine
        var quorum: QuorumState
        /// What replication is doing now, for status.
        var replication = "starting"
        var parked: UInt64 = 0
        /// The copy loop, while the machine follows (or stands for election).
        var follow: Task<Void, Never>?
        /// A copy loop being stopped: a promotion or takeover waits for it to end.
        var stoppingFollow: Task<Void, Never>?
        /// The leader the copy loop is copying from right now.
        var followingFrom: String?
        /// Every task the driver started (the coordinator's watch, lease renewals, polls,
        /// campaigns, timers), by id, each removing itself when done: ``stop()`` cancels
        /// and awaits them.
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0
        /// Leases to give up once every task has ended (a key won while stopping, say).
        var lateResigns: [Int64] = []
        /// A membership change under way (one at a time).
        var changingMembers = false
        /// Members found answering for another cluster (said once each).
        var foreignMembers: Set<String> = []
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

    /// The configuration.
    public let config: ReplicationConfig
    let store: ChordStore
    let logger: Logger
    let state: Mutex<State>
    /// Reaches the other members.
    let probe: PeerProbe
    /// Membership changes waiting for a majority's acknowledgements (quorum writes and
    /// Replicate streams wait in ``quorumWaiters`` and ``followerWaiters``).
    let ackWaiters = Waiters<AckGoal, Bool>()
    /// The quorum writes' waits, in the order of their sequence numbers: an
    /// acknowledgement ends those a majority now holds without looking at the others.
    let quorumWaiters = SequenceWaiters()
    /// Each follower's Replicate streams wait here for its acknowledgements (flow
    /// control), by the follower's address: an acknowledgement ends its own follower's
    /// waits, without asking any other. An address's registry lives while one of its
    /// streams is open (``streamChanged(address:node:delta:)`` counts them).
    let followerWaiters = Mutex<[String: StreamWaits]>([:])
    /// How many of those waits ended by their timeout, not by an acknowledgement.
    let flowControlTimeouts = Atomic(0)

    /// A follower's open Replicate streams and the registry they wait in.
    struct StreamWaits {
        var streams = 0
        let waiters = SequenceWaiters()
    }
    /// The copy loop waiting for a leader to be named: woken when the machine's
    /// generation moves past the one it saw.
    let leaderNamed = Waiters<UInt64, Void>()
    /// A membership change's reply waiting for the watch to bring the new list: woken
    /// when the machine takes a member list.
    let membersSeen = Waiters<[String], Void>()
    /// The address this node's replication connections come from: its advertised host's,
    /// when this machine owns it (the leader checks it, see ``QuorumState``).
    let sourceAddress: String?

    /// Creates the node; ``start()`` takes its role. Resolves the members' hosts (a
    /// member's acknowledgements must come from one of its host's addresses).
    public init(config: ReplicationConfig, store: ChordStore, logger: Logger) {
        self.config = config
        self.store = store
        self.logger = logger
        self.probe = PeerProbe(credentials: config.credentials)
        let members = config.membership
        var sources: [String: Set<String>] = [:]
        for peer in config.peers { sources[peer] = HostAddresses.resolve(HostAddresses.host(of: peer)) }
        // A grant that cannot be read is taken as one of the current epoch to nobody this
        // node knows: it then refuses that epoch to every leader rather than grant it twice.
        var grant: EpochGrant?
        do {
            grant = try store.epochGrant()
        } catch {
            logger.error("the epoch this node granted last cannot be read: it grants its current epoch to no leader", metadata: ["error": "\(error)"])
            grant = EpochGrant(epoch: store.epoch, leader: "a leader this node cannot name (its grant is unreadable)")
        }
        let machine = RoleMachine(
            me: config.address, mode: config.coordinator == nil ? .manual(follow: config.follow) : .coordinated, epoch: store.epoch,
            members: config.coordinator == nil ? members : Membership([]), timing: config.lease, probeInterval: config.probeInterval,
            granted: grant.map { ($0.epoch, $0.leader) })
        self.state = Mutex(State(machine: machine, quorum: QuorumState(me: config.address, members: machine.members, sources: sources)))
        // IPv4 first: a leader reached over IPv4 cannot be dialled from an IPv6 address.
        self.sourceAddress = HostAddresses.resolve(HostAddresses.host(of: config.address))
            .sorted { $0.contains(".") != $1.contains(".") ? $0.contains(".") : $0 < $1 }
            .first(where: HostAddresses.isLocal)
        store.acceptsCommands = false
    }

    /// Takes the configured role (see ``RoleMachine``): in the manual mode, returns once
    /// it has one (it may ask the peers first); in the coordinated mode, at once (the
    /// coordinator's view decides).
    public func start() async {
        if sourceAddress == nil, !config.peers.isEmpty || config.coordinator != nil {
            logger.warning("this node's advertised host is not an address of this machine", metadata: [
                "advertise": "\(config.address)",
                "effect": "its replication connections come from the address the system picks; a leader counts its acknowledgements only if that is an address of the advertised host",
            ])
        }
        for case .probeAtStart(let generation) in handle(.start) {
            let views = await probe.statuses(config.peers).map(Self.view)
            handle(.startProbed(views, generation: generation))
        }
    }

    /// Stops replication, the leader's checks and the coordinator's work: writes are
    /// refused and quorum waits fail. A coordinated leader gives its key up at once, so
    /// that the others need not wait for its lease to lapse.
    public func stop() async {
        for case .resign(let lease) in handle(.stop) { state.withLock { $0.lateResigns.append(lease) } }
        // Tasks may end by feeding the machine (a won key answered with `.resign`): keep
        // cancelling and awaiting until none is left.
        while true {
            let tasks = state.withLock { Array($0.tasks.values) }
            if tasks.isEmpty { break }
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
        }
        await state.withLock { $0.stoppingFollow }?.value
        for lease in state.withLock({ $0.lateResigns }) { try? await config.coordinator?.resign(lease: lease) }
        await config.coordinator?.close()
        await probe.close()
    }

    // MARK: The machine

    /// Feeds `event` to the machine and carries out its actions: those that only change
    /// state (the write gate, the followers' positions) under the lock, so two events'
    /// actions never interleave there; the rest (tasks, logs) after it. Returns the
    /// actions, for callers that decide on them (a fence, a promotion).
    @discardableResult
    func handle(_ event: RoleMachine.Event) -> [RoleMachine.Action] {
        let now = ContinuousClock.now
        let (actions, later) = state.withLock { state -> ([RoleMachine.Action], [RoleMachine.Action]) in
            let actions = state.machine.handle(event, at: now)
            var later: [RoleMachine.Action] = []
            for action in actions {
                switch action {
                case .setWritable(let writable):
                    store.acceptsCommands = writable
                case .setWriteDeadline(let deadline):
                    store.writeDeadline = deadline
                case .resetFollowers:
                    state.quorum.reset()
                case .setMembers(let members):
                    state.quorum.setMembers(members)
                    later.append(action)
                case .follow(let leader):
                    if let running = state.follow, let from = state.followingFrom, from != leader {
                        // Copying from a member that no longer leads: stop at once.
                        running.cancel()
                        state.stoppingFollow = running
                        state.follow = nil
                    }
                    if state.follow == nil {
                        let previous = state.stoppingFollow
                        state.follow = Task { [self] in
                            await previous?.value
                            await followLoop()
                        }
                    }
                    if state.machine.phase != .stopped { state.replication = "following" }
                    later.append(action)
                case .stopFollowing:
                    if let follow = state.follow {
                        follow.cancel()
                        state.stoppingFollow = follow
                        state.follow = nil
                    }
                default:
                    later.append(action)
                }
            }
            return (actions, later)
        }
        for action in later { perform(action) }
        return actions
    }

    /// Carries out an action outside the lock.
    private func perform(_ action: RoleMachine.Action) {
        switch action {
        case .failQuorumWaits:
            quorumWaiters.resumeAll(with: false)
            for waits in followerWaiters.withLock({ Array($0.values) }) { waits.waiters.resumeAll(with: false) }
            ackWaiters.resumeAll(with: false)
        case .follow:
            let generation = state.withLock { $0.machine.generation }
            leaderNamed.resume { $0 < generation ? () : nil }
        case .setMembers(let members):
            resolveSources(of: members)
            membersSeen.resume { $0 == members.addresses ? () : nil }
        case .monitorPeers(let generation):
            spawn { [self] in await monitorPeers(generation: generation) }
        case .findLeader(let generation):
            spawn { [self] in handle(.leaderFound(await findLeader(), generation: generation)) }
        case .after(let delay, let event):
            spawn { [self] in
                do { try await Task.sleep(for: delay) } catch { return }
                handle(event)
            }
        case .watchCluster:
            spawn(onCoordinator: true) { [self] in await watchCluster() }
        case .probeMembers(let generation):
            spawn { [self] in await probeMembers(generation: generation) }
        case .campaign(let floor, let generation):
            spawn(onCoordinator: true) { [self] in await campaign(floor: floor, generation: generation) }
        case .renewLease(let id):
            spawn(onCoordinator: true) { [self] in await renewLease(id) }
        case .takeOver(let epoch, let generation):
            spawn { [self] in handle(.takeoverEnded(await takeOver(epoch: epoch), generation: generation)) }
        case .resign(let lease):
            // Once stopping, ``stop()`` resigns before it closes the coordinator.
            let stopping = state.withLock { state -> Bool in
                guard state.machine.phase == .stopped else { return false }
                state.lateResigns.append(lease)
                return true
            }
            if !stopping { spawn { [self] in try? await config.coordinator?.resign(lease: lease) } }
        case .recordIncarnation:
            spawn(onCoordinator: true) { [self] in
                do {
                    _ = try await config.coordinator?.claimIncarnation(config.incarnation, for: config.address, replace: true)
                    logger.notice("copied a leader: this data directory vouches for this member again")
                } catch {
                    logger.warning("cannot record this data directory in the coordinator; it vouches until the next start", metadata: ["error": "\(error)"])
                }
            }
        case .revokeStale(let claim):
            spawn { [self] in await revokeStale(claim) }
        case .log(let line):
            let metadata = line.metadata.mapValues { Logger.MetadataValue.string($0) }
            switch line.level {
            case .info: logger.info("\(line.message)", metadata: metadata)
            case .notice: logger.notice("\(line.message)", metadata: metadata)
            case .warning: logger.warning("\(line.message)", metadata: metadata)
            }
        case .setWritable, .setWriteDeadline, .resetFollowers, .stopFollowing, .probeAtStart, .runPromotion, .refuse:
            break  // done under the lock, or by the caller that asked
        }
    }

    /// Revokes the lease under which the leader key names this node's address, unless a
    /// process answering at that address leads with the key's epoch: another node started
    /// with the same `--advertise`, whose key must not be taken from it (it would take it
    /// back, and the two would trade it for ever).
    private func revokeStale(_ claim: LeaderClaim) async {
        if let answer = await probe.statuses([claim.address]).first, answer.role == Role.leader.rawValue, answer.epoch == claim.epoch {
            logger.error("another process at this node's advertised address leads: two nodes advertise one address", metadata: [
                "advertise": "\(config.address)", "node": "\(answer.node)", "epoch": "\(answer.epoch)",
            ])
            return
        }
        do {
            try await config.coordinator?.resign(lease: claim.lease)
            logger.notice("revoked the lease an earlier run of this node held the leader key with", metadata: ["lease": "\(claim.lease)"])
        } catch {
            logger.warning("cannot revoke an earlier run's lease; it lapses by itself", metadata: ["error": "\(error)"])
        }
    }

    /// Runs `work` in a task that ``stop()`` cancels and awaits; on the coordinator's own
    /// executor when asked (a renewal must not wait for a thread busy requests hold).
    private func spawn(onCoordinator: Bool = false, _ work: @escaping @Sendable () async -> Void) {
        let executor = onCoordinator ? config.coordinator?.executor : nil
        state.withLock { state in
            let id = state.nextTask
            state.nextTask += 1
            // Registered before it can end: its own removal waits for this lock.
            state.tasks[id] = Task(executorPreference: executor) { [self] in
                await work()
                _ = self.state.withLock { $0.tasks.removeValue(forKey: id) }
            }
        }
    }

    /// A member's status as the machine sees it.
    static func view(_ status: Chordstore_V1_NodeStatus) -> PeerView {
        PeerView(
            address: status.address, leading: status.role == Role.leader.rawValue, epoch: status.epoch, lastEpoch: status.lastEpoch,
            lastSequence: status.lastSequence)
    }

    /// This node as the machine sees it.
    func ownView() -> PeerView? {
        guard let head = try? store.head() else { return nil }
        return PeerView(address: config.address, leading: role == .leader, epoch: store.epoch, lastEpoch: head.epoch, lastSequence: head.sequence)
    }

    /// Adopts `epoch` in the store (persisted, with its grant to `leader` when a fence
    /// granted it) and tells the machine.
    @discardableResult
    func adopt(_ epoch: UInt64, grantedTo leader: String? = nil) async throws(ChordStoreError) -> UInt64 {
        let adopted = try await store.adoptEpoch(epoch, grantedTo: leader)
        handle(.epochAdopted(adopted))
        return adopted
    }

    /// Resolves the hosts of members whose source addresses are not known yet.
    private func resolveSources(of members: Membership) {
        let unknown = state.withLock { state in members.others(than: config.address).filter { state.quorum.sources[$0] == nil } }
        for member in unknown {
            spawn { [self] in
                let addresses = await HostAddresses.sources(of: member)
                state.withLock { $0.quorum.setSources(addresses, for: member) }
            }
        }
    }

    // MARK: Reading the role

    /// The role now.
    public var role: Role { state.withLock { $0.machine.isLeading ? .leader : .follower } }

    /// The role now, or "starting" before the node has taken one (it may ask its peers
    /// or the coordinator first): what a log line says.
    public var roleDescription: String {
        state.withLock { $0.machine.hasDecided ? ($0.machine.isLeading ? Role.leader.rawValue : Role.follower.rawValue) : "starting" }
    }

    /// The leader's address as this node knows it (itself when it leads, unless its
    /// coordinated lease has lapsed).
    public var leader: String? {
        let now = ContinuousClock.now
        return state.withLock { $0.machine.leader(at: now) }
    }

    /// A follower's last word from its leader (`nil` on a leader, or before the first).
    public var followProgress: FollowProgress? { state.withLock { $0.machine.isLeading ? nil : $0.heard } }

    /// Why this node refuses a write now: `nil` if it leads (coordinated: with a valid
    /// lease), else the leader's address (empty if unknown).
    public func writeRefusal() -> String? {
        let now = ContinuousClock.now
        return state.withLock { $0.machine.writeRefusal(at: now) }
    }

    /// Whether it serves `Replicate` streams: while it leads (coordinated: while it holds
    /// the leader key, its lease valid or not, so followers keep up during a handover).
    public var servesReplication: Bool { state.withLock { $0.machine.servesReplication } }

    func setReplication(_ text: String) {
        state.withLock { $0.replication = text }
    }

    /// What `GetNodeStatus` says replication is doing, on a node that is not started:
    /// one that serves a new copy's views while the log arrives
    /// (``FollowerBootstrap``) says so.
    public static let receivingLogDescription = "receiving the leader's log; serving reads from the copy's views"

    /// A node for a store over a new copy's views alone, never started: it knows no
    /// leader yet, and its status says the log is arriving (``receivingLogDescription``).
    public static func receivingLog(config: ReplicationConfig, store: ChordStore, logger: Logger) -> ReplicationNode {
        let node = ReplicationNode(config: config, store: store, logger: logger)
        node.setReplication(receivingLogDescription)
        return node
    }

    /// Closes the connections a node that was never started opened to ask its peers
    /// (`GetClusterStatus`); ``stop()`` does this for a started one, and more.
    public func closePeerConnections() async {
        await probe.close()
    }
}
