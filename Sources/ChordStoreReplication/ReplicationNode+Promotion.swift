import ChordStoreRecords
import ChordStoreClient
public import ChordStoreDomain
import ChordStoreEngine
public import ChordStoreProto
import Logging
import Synchronization

/// Promotion (manual) and fencing (both modes): taking an epoch above every one known,
/// making a majority adopt it, and refusing to lead when a member holds more.
extension ReplicationNode {
    /// Makes this follower the leader (manual mode), in four steps:
    /// 1. a reachable member whose log is ahead of this one refuses it (unless `force`);
    /// 2. it takes an epoch above every one it knows or can reach, persisted;
    /// 3. it fences the others with it (``fence(epoch:leader:)``): a majority of members,
    ///    itself included, must adopt the epoch, after which none of them acknowledges
    ///    the old leader, whose quorum writes can no longer succeed;
    /// 4. none of the fenced members may be ahead of it (unless `force`).
    /// On refusal it follows again (whoever leads). Refused in a coordinated cluster,
    /// where the coordinator decides who leads.
    public func promote(force: Bool) async throws(ChordStoreError) -> Chordstore_V1_NodeStatus {
        let actions = handle(.promoteRequested(force: force))
        if let reason = Self.refusal(in: actions) { throw ChordStoreError(.failedPrecondition, reason) }
        guard let generation = actions.lazy.compactMap({ if case .runPromotion(_, let generation) = $0 { generation } else { nil } }).first else {
            return try status()  // already the leader
        }
        await state.withLock { $0.stoppingFollow }?.value
        do throws(ChordStoreError) {
            let epoch = try await runPromotion(force: force)
            handle(.promotionEnded(.promoted(epoch: epoch), generation: generation))
            return try status()
        } catch {
            logger.warning("promotion refused", metadata: ["error": "\(error)"])
            setReplication("promotion refused: \(error.message)")
            handle(.promotionEnded(.refused, generation: generation))
            throw error
        }
    }

    private func runPromotion(force: Bool) async throws(ChordStoreError) -> UInt64 {
        try checkLogCanLead()
        let head = try store.head()
        let reachable = await probe.statuses(config.peers)
        try Self.checkAhead(reachable, of: head, force: force)
        let highest = max(store.epoch, reachable.map(\.epoch).max() ?? 0)
        guard highest < LogPosition.maxEpoch else {
            throw ChordStoreError(
                .failedPrecondition, "epoch \(highest) is the largest possible (\(LogPosition.maxEpoch)): no epoch is left to promote with")
        }
        // Claimed before it is adopted, and kept with it: a fence with it from another
        // member being promoted at the same time is refused from now on, restarts included.
        if let reason = Self.refusal(in: handle(.epochClaimed(highest + 1))) { throw ChordStoreError(.failedPrecondition, reason) }
        let epoch = try await adopt(highest + 1, grantedTo: config.address)
        let members = state.withLock { $0.machine.members }
        let fenced = await probe.fence(config.peers, epoch: epoch, leader: config.address, enough: .max)
        guard fenced.count + 1 >= members.majority || force else {
            throw ChordStoreError(
                .unavailable,
                "only \(fenced.count + 1) of \(members.addresses.count) members took epoch \(epoch); a majority (\(members.majority)) is needed")
        }
        try Self.checkAhead(fenced, of: head, force: force)
        logger.notice("promoted", metadata: ["epoch": "\(epoch)", "last": "\(head.sequence)", "fenced": "\(fenced.count)", "forced": "\(force)"])
        return epoch
    }

    /// A coordinated takeover, once the leader key is this node's with `epoch`: adopt the
    /// epoch (persisted), fence the other members with it (a majority, this node
    /// included, must take it), and check that none of them is ahead: then every write
    /// a majority acknowledged before is in this log.
    func takeOver(epoch: UInt64) async -> RoleMachine.TakeoverOutcome {
        await state.withLock { $0.stoppingFollow }?.value
        do {
            try checkLogCanLead()
            try await adopt(epoch, grantedTo: config.address)
            let head = try store.head()
            let members = state.withLock { $0.machine.members }
            let own = members.contains(config.address) ? 1 : 0
            // A frozen or cut-off member never answers: a majority is enough, the others
            // are still asked (and take the epoch from the first batch anyway).
            let fenced = await probe.fence(
                members.others(than: config.address), epoch: epoch, leader: config.address, enough: members.majority - own)
            let holding = fenced.count + own
            guard holding >= members.majority else {
                return .refused("only \(holding) of \(members.addresses.count) members took epoch \(epoch); a majority (\(members.majority)) is needed")
            }
            try Self.checkAhead(fenced, of: head, force: false)
            logger.notice("fenced the members", metadata: ["epoch": "\(epoch)", "last": "\(head.sequence)", "fenced": "\(fenced.count)"])
            return .ready
        } catch {
            return .refused(error.message)
        }
    }

    /// The reason of a refusal among `actions`, if the machine refused.
    static func refusal(in actions: [RoleMachine.Action]) -> String? {
        actions.lazy.compactMap { if case .refuse(let reason) = $0 { reason } else { nil } }.first
    }

    /// Refuses to lead on a damaged log (the store refuses writes with `DATA_LOSS`) or on
    /// views that could not fold events the log holds.
    private func checkLogCanLead() throws(ChordStoreError) {
        if let refusal = store.leadRefusal {
            throw ChordStoreError(.failedPrecondition, "this node's log or views are damaged, it could not lead: \(refusal.message)")
        }
    }

    /// Refuses (unless `force`) when a member in `statuses` is ahead of `head`
    /// (``PeerView/isAhead(of:)``).
    static func checkAhead(_ statuses: [Chordstore_V1_NodeStatus], of head: LogPosition, force: Bool) throws(ChordStoreError) {
        let own = PeerView(address: "", leading: false, epoch: head.epoch, lastEpoch: head.epoch, lastSequence: head.sequence)
        let ahead = statuses.filter { view($0).isAhead(of: own) }
        guard !ahead.isEmpty, !force else { return }
        let names = ahead.map { "\($0.address) (\($0.lastSequence) events, last of epoch \($0.lastEpoch))" }.joined(separator: ", ")
        throw ChordStoreError(
            .failedPrecondition,
            "\(names) is ahead of this node (\(head.sequence) events, last of epoch \(head.epoch)): promote the member that is furthest ahead, or pass force")
    }

    /// Adopts `epoch` for `leader`, which is being promoted (or took the leader key):
    /// persisted, after which this node refuses the batches of older epochs and
    /// acknowledges nothing to their leader. Refused for an older epoch, or for an epoch
    /// granted to another leader.
    public func fence(epoch: UInt64, leader: String) async throws(ChordStoreError) -> Chordstore_V1_NodeStatus {
        try LogPosition.checkEpoch(epoch)  // before it is granted
        if let reason = Self.refusal(in: handle(.fenceRequested(epoch: epoch, leader: leader))) {
            throw ChordStoreError(.failedPrecondition, reason)
        }
        try await adopt(epoch, grantedTo: leader)  // kept with the epoch: a restart refuses it to others too
        handle(.fenced(epoch: epoch, leader: leader))
        return try status()
    }
}
