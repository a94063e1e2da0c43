/// One member's replication role as a pure state machine, in the manner of etcd raft's
/// `Step`: ``handle(_:at:)`` takes what happened and returns what must be done
/// (``Action``), and the driver (``ReplicationNode``) does it: sockets, timers, the
/// coordinator and the store stay out, so scenario tests drive the machine with events
/// and a made-up clock. The role lives here and nowhere else: the store's write gate and
/// the follower's copy loop only carry out its actions.
///
/// Two modes:
/// - **manual** (no coordinator): a member given `--follow` follows; one without leads
///   unless a reachable peer leads with a newer epoch; `promote` makes a follower lead;
///   a leader that sees a newer epoch steps down.
/// - **coordinated**: the coordinator (etcd) holds the leader key, a lease and the
///   membership. Members watch the key; when it is free, the member whose log is furthest
///   ahead takes it (``Election``), fences a majority with the new epoch and leads while
///   its lease is valid (``LeaseTiming``).
///
/// Every asynchronous action carries the machine's ``generation``; its result comes back
/// as an event with it, and is ignored if the machine has moved on since.
public struct RoleMachine: Sendable {
    /// How a member learns who leads.
    public enum Mode: Sendable, Hashable {
        /// By hand: follow this leader, or (`nil`) lead unless a reachable peer leads with
        /// a newer epoch.
        case manual(follow: String?)
        /// From the coordinator's leader key.
        case coordinated
    }

    /// Where the member stands.
    public enum Phase: Sendable, Hashable {
        /// Not started.
        case idle
        /// Manual start: asking the peers whether one leads with a newer epoch.
        case probing
        /// Copying from `leader` (`nil`: none known now).
        case following(leader: String?)
        /// Manual: being promoted.
        case promoting
        /// Coordinated: the leader key is free and this member decides whether to stand.
        case electing(ElectionStep)
        /// Coordinated: trying to take the leader key.
        case campaigning
        /// Coordinated: the key is this member's with `epoch`; fencing the members.
        case takingOver(epoch: UInt64)
        /// Taking writes (coordinated: while the lease is valid).
        case leading
        /// Coordinated: a leader removing itself from the members; it takes no writes,
        /// serves its followers until one holds everything, then gives the key up.
        case handingOver
        /// Stopped for good.
        case stopped
    }

    /// The steps of an election while the key is free.
    public enum ElectionStep: Sendable, Hashable {
        /// Asking the members for their positions.
        case ranking
        /// Level with members before it in line: standing after their turn, above `floor`.
        case waiting(floor: UInt64)
        /// A member is ahead: looking again later.
        case yielding
    }

    /// How a turn of the follower's copy loop ended.
    public enum FollowOutcome: Sendable, Hashable {
        /// Batches arrived and were applied.
        case progressed
        /// The stream broke, or the leader could not be reached.
        case failed
        /// The member asked is not the leader; it named this one (or none).
        case redirected(to: String?)
    }

    /// How a manual promotion ended.
    public enum PromotionOutcome: Sendable, Hashable {
        /// It leads with `epoch`.
        case promoted(epoch: UInt64)
        /// It did not take place (a member ahead, no majority fenced, ...).
        case refused
    }

    /// How an attempt to take the leader key ended.
    public enum CampaignOutcome: Sendable, Hashable {
        /// The key is this member's, with `epoch`, under `lease`.
        case won(epoch: UInt64, lease: HeldLease)
        /// Another member holds the key.
        case lost
        /// The coordinator could not be asked.
        case failed(String)
    }

    /// How a takeover (fencing a majority, checking none is ahead) ended.
    public enum TakeoverOutcome: Sendable, Hashable {
        /// A majority took the epoch and none is ahead: it may lead.
        case ready
        /// It may not lead, for this reason.
        case refused(String)
    }

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// The node starts serving.
        case start
        /// The node stops for good.
        case stop
        /// Manual start: the peers that answered.
        case startProbed([PeerView], generation: UInt64)
        /// A manual leader's periodic look at its peers.
        case peersProbed([PeerView])
        /// A turn of the copy loop from `leader` ended.
        case followEnded(leader: String?, FollowOutcome)
        /// Manual: the member found leading with the newest epoch, if any.
        case leaderFound(String?, generation: UInt64)
        /// Manual: look for the leader again.
        case lookAgain(generation: UInt64)
        /// Manual: `Promote` was called (`force` skips its checks).
        case promoteRequested(force: Bool)
        /// Manual: the promotion running takes `epoch` for this member, before it adopts it
        /// and fences the others with it; refused if a fence granted it, or a newer one, to
        /// another leader.
        case epochClaimed(UInt64)
        /// Manual: the promotion started with `generation` ended.
        case promotionEnded(PromotionOutcome, generation: UInt64)
        /// A member showed its epoch (a Replicate call, an acknowledgement, a status).
        case epochSeen(UInt64, from: String, leading: Bool)
        /// The store's epoch rose to this (a batch of a newer leader, a fence, a takeover).
        case epochAdopted(UInt64)
        /// A member being promoted asks this one to adopt `epoch` for it.
        case fenceRequested(epoch: UInt64, leader: String)
        /// The fence's epoch is persisted.
        case fenced(epoch: UInt64, leader: String)
        /// Coordinated: the cluster as the coordinator holds it now.
        case clusterSeen(ClusterView)
        /// Coordinated: the coordinator cannot be reached (the driver keeps trying).
        case coordinatorLost(String)
        /// Coordinated election: this member's own position (`nil`: its log could not be
        /// read) and the members that answered.
        case membersProbed(own: PeerView?, [PeerView], generation: UInt64)
        /// Coordinated election: a timer set by ``Action/after(_:_:)`` came due.
        case electionDue(generation: UInt64)
        /// Coordinated: the coordinator granted this process `lease` for a campaign, about
        /// to write the key with it.
        case leaseGranted(HeldLease)
        /// Coordinated: the attempt to take the leader key started with `generation` ended.
        case campaignEnded(CampaignOutcome, generation: UInt64)
        /// Coordinated: the takeover started with `generation` ended.
        case takeoverEnded(TakeoverOutcome, generation: UInt64)
        /// The coordinator renewed lease `id`: it may be acted on until `validUntil`.
        case leaseRenewed(id: Int64, validUntil: ContinuousClock.Instant)
        /// The coordinator no longer knows lease `id` (it expired).
        case leaseGone(id: Int64)
        /// Coordinated: the leader starts removing itself from the members.
        case handOverStarted
        /// The handover ended: the member list no longer holds this node and the key is
        /// given up (`true`), or it did not happen.
        case handOverEnded(Bool)
        /// Coordinated: whether the coordinator knows this data directory as this
        /// member's (its incarnation was recorded, or first recorded now).
        case incarnationChecked(Bool)
        /// Coordinated: this node's log matched a leader's (it applied a batch, or a
        /// heartbeat, of one): it may vouch for what it holds again.
        case caughtUp
        /// Coordinated leader: `inTouch` members (itself included) were heard from
        /// within ``LeaseTiming/touchWindow``.
        case quorumChecked(inTouch: Int)
    }

    /// What the driver must do, in order.
    public enum Action: Sendable, Hashable {
        /// Open or close the store's write gate.
        case setWritable(Bool)
        /// Refuse writes from this moment on (the lease's end; `nil`: no end).
        case setWriteDeadline(ContinuousClock.Instant?)
        /// Forget the followers' positions (a new term of leading).
        case resetFollowers
        /// Fail the quorum writes waiting for acknowledgements.
        case failQuorumWaits
        /// Copy the log from this leader (`nil`: none known; copy from no one).
        case follow(String?)
        /// Stop copying, now.
        case stopFollowing
        /// Manual start: ask the peers for their status.
        case probeAtStart(generation: UInt64)
        /// Manual leader: ask the peers now and then whether one leads with a newer epoch.
        case monitorPeers(generation: UInt64)
        /// Manual: ask the peers who leads with the newest epoch.
        case findLeader(generation: UInt64)
        /// Manual: promote this member (fence the others, check none is ahead).
        case runPromotion(force: Bool, generation: UInt64)
        /// The request being decided (a fence, a promotion) is refused, for this reason.
        case refuse(String)
        /// Coordinated: join the cluster in the coordinator and watch it.
        case watchCluster
        /// Coordinated: the voting members changed.
        case setMembers(Membership)
        /// Coordinated election: ask the members for their positions.
        case probeMembers(generation: UInt64)
        /// Deliver `event` after `delay`.
        case after(Duration, Event)
        /// Coordinated: try to take the leader key with an epoch above `floor`.
        case campaign(floor: UInt64, generation: UInt64)
        /// Coordinated: keep lease `id` alive for as long as the machine holds it.
        case renewLease(id: Int64)
        /// Coordinated: adopt `epoch`, fence a majority with it, check none is ahead.
        case takeOver(epoch: UInt64, generation: UInt64)
        /// Coordinated: give the leader key up (deleted if held under this lease) and
        /// revoke the lease.
        case resign(lease: Int64)
        /// Coordinated: record this data directory as this member's in the coordinator.
        case recordIncarnation
        /// Coordinated: revoke the lease of a claim an earlier run of this member left
        /// holding the key (unless a process at its address still leads with it).
        case revokeStale(LeaderClaim)
        /// Write a log line.
        case log(LogLine)
    }

    /// A line for the node's log.
    public struct LogLine: Sendable, Hashable {
        /// How much it matters, as swift-log's levels.
        public enum Level: Sendable, Hashable { case info, notice, warning }
        /// Its level.
        public var level: Level
        /// What happened.
        public var message: String
        /// Details, by key.
        public var metadata: [String: String]

        /// A line.
        public init(_ level: Level, _ message: String, _ metadata: [String: String] = [:]) {
            self.level = level
            self.message = message
            self.metadata = metadata
        }
    }

    /// This member's advertised address.
    public let me: String
    /// How it learns who leads.
    public let mode: Mode
    /// The coordinated lease's timing.
    public let timing: LeaseTiming
    /// How long a manual member waits between looks for a leader.
    public let probeInterval: Duration
    /// Where it stands.
    public internal(set) var phase: Phase = .idle
    /// The newest epoch it adopted (the store's).
    public internal(set) var epoch: UInt64
    /// The voting members.
    public internal(set) var members: Membership
    /// Coordinated: the cluster as last seen.
    public internal(set) var cluster: ClusterView?
    /// Coordinated: the lease it holds (while campaigning won, taking over, leading).
    public internal(set) var lease: HeldLease?
    /// Coordinated: leases this process was granted for campaigns whose outcome it has not
    /// taken (at most ``maxGrantedLeases``, the newest): a key seen under one of them is
    /// this process's own, not an earlier run's.
    var grantedLeases: [HeldLease] = []
    static let maxGrantedLeases = 8
    /// The epoch it granted by a fence (or took), and to whom: each epoch goes to one
    /// leader only.
    public internal(set) var granted: (epoch: UInt64, leader: String)?
    /// Bumped whenever an asynchronous action's result would no longer apply.
    public internal(set) var generation: UInt64 = 0
    var followFailures = 0
    /// Coordinated: no campaign before this (after a refused takeover).
    var notBefore: ContinuousClock.Instant?
    /// When it began to lead (coordinated: its majority is checked after a grace).
    var leadingSince: ContinuousClock.Instant?
    /// Whether its log may vouch for the writes acknowledged before (grant a fence,
    /// stand for election). A coordinated member vouches once the coordinator knows its
    /// data directory as this member's; one that differs (lost and started again, or
    /// restored from a backup: writes it acknowledged may be gone) vouches again only
    /// once it has copied a leader.
    public internal(set) var vouches: Bool

    /// A machine for the member at `me`, whose store is at `epoch`, among `members`;
    /// `granted`: the epoch a `Fence` granted before a restart, and to whom, as the store
    /// kept it.
    public init(
        me: String, mode: Mode, epoch: UInt64, members: Membership, timing: LeaseTiming, probeInterval: Duration,
        granted: (epoch: UInt64, leader: String)? = nil
    ) {
        self.me = me
        self.mode = mode
        self.epoch = epoch
        self.granted = granted
        self.members = members
        self.timing = timing
        self.probeInterval = probeInterval
        self.vouches = mode != .coordinated  // a coordinated one waits for the coordinator's word
    }

    var isCoordinated: Bool { mode == .coordinated }

    /// Whether it leads (and takes writes, within its lease when coordinated).
    public var isLeading: Bool { phase == .leading }

    /// Whether it has taken a role since it started.
    public var hasDecided: Bool { phase != .idle && phase != .probing }

    /// Whether it is a voting member.
    public var isMember: Bool { members.contains(me) }

    /// Whether it may stand for election and grant fences: a member that ``vouches``.
    public var mayVote: Bool { isMember && vouches }

    /// The leader's address as this member knows it (itself when it leads).
    public var leader: String? {
        switch phase {
        case .leading: me
        case .following(let leader): leader
        default: nil
        }
    }

    /// The leader's address as this member knows it at `now`: not itself once its lease
    /// has lapsed (it takes no writes then, and a client must look elsewhere).
    public func leader(at now: ContinuousClock.Instant) -> String? {
        if phase == .leading, isCoordinated, let lease, now >= lease.validUntil { return nil }
        return leader
    }

    /// Why a write is refused at `now`: `nil` while it leads with a valid lease, else the
    /// leader to send it to (empty: none known now).
    public func writeRefusal(at now: ContinuousClock.Instant) -> String? {
        if case .leading = phase {
            guard isCoordinated, let lease, now >= lease.validUntil else { return nil }
            return ""
        }
        return leader ?? ""
    }

    /// Whether it serves its followers' copies: while it leads, and while it hands over.
    public var servesReplication: Bool { phase == .leading || phase == .handingOver }

    /// Handles `event`, which happened at `now`.
    public mutating func handle(_ event: Event, at now: ContinuousClock.Instant) -> [Action] {
        if phase == .stopped { return whileStopped(event) }
        switch event {
        case .start: return start()
        case .stop: return stop()
        case .startProbed(let peers, let generation): return startProbed(peers, generation: generation)
        case .peersProbed(let peers):
            return peers.filter(\.leading).flatMap { handle(.epochSeen($0.epoch, from: $0.address, leading: true), at: now) }
        case .followEnded(let leader, let outcome): return followEnded(leader, outcome)
        case .leaderFound(let found, let generation): return leaderFound(found, generation: generation)
        case .lookAgain(let generation):
            guard generation == self.generation, phase == .following(leader: nil) else { return [] }
            return [.findLeader(generation: generation)]
        case .promoteRequested(let force): return promoteRequested(force: force)
        case .epochClaimed(let claimed): return epochClaimed(claimed)
        case .promotionEnded(let outcome, let generation): return promotionEnded(outcome, generation: generation)
        case .epochSeen(let seen, let from, let leading): return epochSeen(seen, from: from, leading: leading)
        case .epochAdopted(let adopted):
            epoch = max(epoch, adopted)
            return []
        case .fenceRequested(let epoch, let leader): return fenceRequested(epoch: epoch, leader: leader)
        case .fenced(let epoch, let leader): return fenced(epoch: epoch, leader: leader)
        case .clusterSeen(let view): return clusterSeen(view, at: now)
        case .coordinatorLost(let reason):
            return [.log(LogLine(.warning, "cannot reach the coordinator", ["reason": reason]))]
        case .membersProbed(let own, let answered, let generation): return membersProbed(own: own, answered, generation: generation)
        case .electionDue(let generation): return electionDue(generation: generation, at: now)
        case .leaseGranted(let granted):
            grantedLeases.append(granted)
            if grantedLeases.count > Self.maxGrantedLeases { grantedLeases.removeFirst() }
            return []
        case .campaignEnded(let outcome, let generation): return campaignEnded(outcome, generation: generation, at: now)
        case .takeoverEnded(let outcome, let generation): return takeoverEnded(outcome, generation: generation, at: now)
        case .leaseRenewed(let id, let validUntil): return leaseRenewed(id: id, validUntil: validUntil)
        case .leaseGone(let id): return leaseGone(id: id)
        case .handOverStarted:
            guard phase == .leading, isCoordinated else { return [.refuse("this node does not lead")] }
            phase = .handingOver
            return [.setWritable(false), .log(LogLine(.notice, "handing leadership over: writes are refused until another member leads"))]
        case .incarnationChecked(let known):
            let was = vouches
            vouches = known
            guard !known else { return was || !isMember || phase != .following(leader: nil) ? [] : lookForLeader() }
            return [.log(LogLine(
                .warning, "this data directory is not the one the cluster knew for this member (lost and started again, or restored from a backup): it neither stands for election nor grants fences until it has copied a leader"))]
        case .caughtUp:
            guard isCoordinated, !vouches else { return [] }
            vouches = true
            return [.recordIncarnation]
        case .quorumChecked(let inTouch):
            return quorumChecked(inTouch: inTouch, at: now)
        case .handOverEnded(let done):
            guard phase == .handingOver else { return [] }
            if done { return stepDown(to: nil, reason: "removed from the members; leadership handed over") }
            phase = .leading
            var actions: [Action] = lease.map { [.setWriteDeadline($0.validUntil)] } ?? []
            actions += [.setWritable(true), .log(LogLine(.notice, "leading again: the handover did not happen"))]
            return actions
        }
    }

    // MARK: Shared transitions

    private mutating func start() -> [Action] {
        guard phase == .idle else { return [] }
        switch mode {
        case .manual(let follow?):
            phase = .following(leader: follow)
            return [.setWritable(false), .follow(follow), following(follow, reason: "configured with --follow")]
        case .manual(nil):
            phase = .probing
            generation += 1
            return [.setWritable(false), .probeAtStart(generation: generation)]
        case .coordinated:
            phase = .following(leader: nil)
            return [.setWritable(false), .watchCluster]
        }
    }

    private mutating func stop() -> [Action] {
        var actions: [Action] = [.setWritable(false), .stopFollowing, .failQuorumWaits]
        if let lease { actions.append(.resign(lease: lease.id)) }
        lease = nil
        phase = .stopped
        generation += 1
        return actions
    }

    /// After ``stop()``: only a fence is still answered (refused), so a caller is not left
    /// waiting.
    private func whileStopped(_ event: Event) -> [Action] {
        switch event {
        case .fenceRequested, .promoteRequested, .epochClaimed: [.refuse("this node is stopping")]
        case .campaignEnded(.won(_, let lease), _): [.resign(lease: lease.id)]
        default: []
        }
    }

    /// Becomes the leader: forgets the followers' old positions, opens the gate.
    mutating func lead(reason: String) -> [Action] {
        phase = .leading
        generation += 1
        followFailures = 0
        leadingSince = nil  // set by the first majority check
        var actions: [Action] = [.resetFollowers]
        if isCoordinated, let lease { actions.append(.setWriteDeadline(lease.validUntil)) }
        actions.append(.setWritable(true))
        if !isCoordinated { actions.append(.monitorPeers(generation: generation)) }
        actions.append(.log(LogLine(.notice, "leading", ["epoch": "\(epoch)", "members": "\(members.addresses.count)", "reason": reason])))
        return actions
    }

    /// Stops leading (or taking over, or standing) and follows `leader`: the gate closes
    /// in the writer, so no batch starts after the change and one that ends after it is
    /// not acknowledged, and quorum writes waiting on this node fail. A coordinated lease
    /// is given up; its deadline stays in the writer (only ``lead(reason:)`` sets a new
    /// one), so a commit in flight is judged by it.
    mutating func stepDown(to leader: String?, reason: String) -> [Action] {
        var actions: [Action] = [.setWritable(false)]
        if let lease { actions.append(.resign(lease: lease.id)) }
        lease = nil
        phase = .following(leader: leader)
        generation += 1
        followFailures = 0
        actions += [.failQuorumWaits, .resetFollowers, .follow(leader), following(leader, reason: reason)]
        if leader == nil { actions += lookForLeader() }
        return actions
    }

    /// Follows `leader` from now on (already following: a new leader for the loop).
    mutating func switchLeader(to leader: String?, reason: String) -> [Action] {
        if phase == .following(leader: leader) { return [] }
        phase = .following(leader: leader)
        generation += 1
        followFailures = 0
        var actions: [Action] = [.follow(leader), following(leader, reason: reason)]
        if leader == nil { actions += lookForLeader() }
        return actions
    }

    /// With no leader known: a manual member asks its peers; a coordinated voting member
    /// looks at the coordinator's view again after ``LeaseTiming/recheck``, in case the
    /// watch showed no change that would wake it (a key taken and given up in one
    /// answer, say).
    func lookForLeader() -> [Action] {
        if !isCoordinated { return [.findLeader(generation: generation)] }
        return mayVote ? [.after(timing.recheck, .electionDue(generation: generation))] : []
    }

    func following(_ leader: String?, reason: String) -> Action {
        .log(LogLine(.notice, "following", ["leader": leader ?? "unknown", "reason": reason]))
    }

    var isLeadingOrTakingOver: Bool {
        switch phase {
        case .leading, .takingOver, .handingOver: true
        default: false
        }
    }

    /// A member showed a newer epoch: a leader steps down. Two leaders of the same epoch
    /// (only a forced promotion or a misconfiguration makes them) are resolved by
    /// address: the one with the greater address steps down.
    private mutating func epochSeen(_ seen: UInt64, from address: String, leading: Bool) -> [Action] {
        guard isLeadingOrTakingOver, address != me, members.contains(address) else { return [] }
        if seen > epoch {
            return stepDown(to: leading ? address : nil, reason: "\(address) has epoch \(seen), newer than \(epoch)")
        }
        if leading, seen == epoch, address < me, !isCoordinated {
            return stepDown(to: address, reason: "\(address) also leads epoch \(seen)")
        }
        return []
    }

    /// A fence granted to another leader: a leader steps down at once, before the epoch
    /// is adopted, so that no command it still commits carries the new epoch (its
    /// divergent events must be of an older epoch than the new leader's, to be parked).
    private mutating func fenceRequested(epoch requested: UInt64, leader: String) -> [Action] {
        if requested < epoch { return [.refuse("epoch \(requested) is older than this node's (\(epoch))")] }
        if let claim = replacingClaim(ofFenceBy: leader, epoch: requested) {
            return [.refuse("epoch \(requested) is not newer than the leader key's (\(claim.address), epoch \(claim.epoch))")]
        }
        if let granted, granted.epoch == requested, granted.leader != leader {
            return [.refuse("epoch \(requested) was already granted to \(granted.leader)")]
        }
        // A fence that arrives after a newer one was granted (before the node adopted it)
        // must not take the grant back: the newer epoch would be free to grant again.
        if let granted, requested < granted.epoch {
            return [.refuse("epoch \(requested) is older than epoch \(granted.epoch), granted to \(granted.leader)")]
        }
        if requested == epoch, isLeadingOrTakingOver { return [.refuse("this node leads epoch \(requested)")] }
        if isCoordinated, !vouches {
            return [.refuse(
                "this node's data directory is not the one the cluster knew for it (lost and started again, or restored from a backup): it cannot vouch for the writes acknowledged before, and counts again once it has copied a leader")]
        }
        granted = (requested, leader)
        guard isLeadingOrTakingOver, leader != me else { return [] }
        return stepDown(to: leader, reason: "fenced by \(leader) with epoch \(requested)")
    }

    /// Coordinated: the leader key's claim, held by another member than `leader` with an
    /// epoch at least `epoch`, that makes `leader`'s fence a late one (its claim was
    /// replaced since).
    private func replacingClaim(ofFenceBy leader: String, epoch: UInt64) -> LeaderClaim? {
        guard isCoordinated, let claim = cluster?.leader, claim.address != leader, epoch <= claim.epoch else { return nil }
        return claim
    }

    private mutating func fenced(epoch adopted: UInt64, leader: String) -> [Action] {
        epoch = max(epoch, adopted)
        if isLeadingOrTakingOver {
            return stepDown(to: leader, reason: "fenced by \(leader) with epoch \(adopted)")
        }
        // A fence that lost its race with a newer claim does not move this member off
        // the key's holder.
        if replacingClaim(ofFenceBy: leader, epoch: adopted) != nil { return [] }
        switch phase {
        case .following, .electing, .campaigning:
            return switchLeader(to: leader, reason: "fenced by \(leader) with epoch \(adopted)")
        default:
            return []
        }
    }

    private mutating func followEnded(_ leader: String?, _ outcome: FollowOutcome) -> [Action] {
        guard case .following(let current) = phase, current == leader else { return [] }
        if outcome == .progressed {
            followFailures = 0
            return []
        }
        followFailures += 1
        if isCoordinated {
            // The coordinator names the leader, not a member's hint. A member followed
            // other than the key's holder (a fence's, before the key changed) that stops
            // serving: back to the holder.
            guard let claim = cluster?.leader, claim.address != me, claim.address != leader else { return [] }
            return switchLeader(to: claim.address, reason: "\(claim.address) holds the leader key, epoch \(claim.epoch)")
        }
        switch outcome {
        case .progressed:
            return []
        case .redirected(let next):
            return switchLeader(to: next.flatMap { $0.isEmpty ? nil : $0 }, reason: "\(leader ?? "the member asked") is not the leader")
        case .failed:
            return followFailures >= 3 ? [.findLeader(generation: generation)] : []
        }
    }
}
