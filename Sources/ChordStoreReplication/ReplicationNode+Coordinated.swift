import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Logging
import Synchronization

/// The coordinated mode's work: joining and watching the cluster in the coordinator,
/// polling the members during an election, taking the leader key, and keeping the lease.
extension ReplicationNode {
    /// Joins the cluster (creating its member list from the configured members if it has
    /// none), then feeds the machine every change the coordinator's watch shows; when the
    /// coordinator cannot be reached, tries again with a backoff, for as long as the node
    /// runs.
    func watchCluster() async {
        guard let coordinator = config.coordinator else { return }
        var backoff = Backoff(first: .milliseconds(100), limit: .seconds(2), jitter: 0.2)
        var lost = false
        var first = true
        while !Task.isCancelled {
            do throws(ChordStoreError) {
                let view = try await coordinator.join(initial: config.membership)
                let known = try await coordinator.claimIncarnation(config.incarnation, for: config.address, replace: false)
                handle(.incarnationChecked(known))
                if lost || first {
                    logger.notice("joined the cluster", metadata: ["coordinator": "\(coordinator.description)", "members": "\(view.members)"])
                }
                lost = false
                first = false
                backoff.reset()
                handle(.clusterSeen(view))
                do {
                    for try await next in coordinator.watch(after: view) { handle(.clusterSeen(next)) }
                    if Task.isCancelled { return }
                    throw ChordStoreError(.unavailable, "the watch ended")
                } catch let error as ChordStoreError {
                    throw error
                } catch {
                    throw ChordStoreError(.unavailable, "\(error)")
                }
            } catch {
                if Task.isCancelled { return }
                if !lost { handle(.coordinatorLost(error.message)) }
                lost = true
                try? await Task.sleep(for: backoff.next())
            }
        }
    }

    /// Asks the members for their positions and hands them, with this node's own, to the
    /// election (at most ``LeaseTiming/stagger`` × 2 for the answers: a frozen member never
    /// answers, and the election must not wait for it).
    func probeMembers(generation: UInt64) async {
        let members = state.withLock { $0.machine.members }
        let statuses = await probe.statuses(members.others(than: config.address), within: config.lease.stagger * 2)
        // A member of another cluster (a --cluster typo, here or there) is no member of
        // this one: said once, and left out.
        let foreign = statuses.filter { $0.cluster != config.cluster }
        let unsaid = state.withLock { state in
            let new = foreign.filter { !state.foreignMembers.contains($0.address) }
            state.foreignMembers.formUnion(new.map(\.address))
            return new
        }
        for status in unsaid {
            logger.error("a member answers for another cluster: check --cluster on both", metadata: [
                "member": "\(status.address)", "its cluster": "\(status.cluster)", "this cluster": "\(config.cluster)",
            ])
        }
        let answered = statuses.filter { $0.cluster == config.cluster }.map(Self.view)
        handle(.membersProbed(own: ownView(), answered, generation: generation))
    }

    /// Tries to take the leader key with an epoch above `floor`.
    func campaign(floor: UInt64, generation: UInt64) async {
        guard let coordinator = config.coordinator else { return }
        let outcome: RoleMachine.CampaignOutcome
        do {
            let timing = config.lease
            let granted: @Sendable (Int64, ContinuousClock.Instant, Duration) -> Void = { [self] id, sentAt, ttl in
                handle(.leaseGranted(HeldLease(id: id, validUntil: timing.validUntil(sentAt: sentAt, granted: ttl))))
            }
            if let won = try await coordinator.campaign(address: config.address, node: config.node, floor: floor, ttl: timing.ttl, granted: granted) {
                let lease = HeldLease(id: won.lease, validUntil: config.lease.validUntil(sentAt: won.sentAt, granted: won.granted))
                outcome = .won(epoch: won.epoch, lease: lease)
            } else {
                outcome = .lost
            }
        } catch {
            outcome = .failed(error.message)
        }
        handle(.campaignEnded(outcome, generation: generation))
    }

    /// How many members (this node included, if it is one) acknowledged something within
    /// ``LeaseTiming/touchWindow`` (followers acknowledge every batch and the heartbeat
    /// sent each second). An open stream does not count: a cut-off follower's stays open.
    func membersInTouch() -> Int {
        let now = ContinuousClock.now
        return state.withLock { state in
            let members = state.machine.members
            let heard = state.quorum.followers.count { address, follower in
                members.contains(address) && address != config.address && now - follower.lastSeen < config.lease.touchWindow
            }
            return heard + (members.contains(config.address) ? 1 : 0)
        }
    }

    /// Keeps lease `id` alive every ``LeaseTiming/renewInterval`` while the machine holds
    /// it; a renewal that fails is tried again at once (each within
    /// ``LeaseTiming/renewTimeout``), and the machine learns each new validity, or that
    /// the coordinator no longer knows the lease.
    func renewLease(_ id: Int64) async {
        guard let coordinator = config.coordinator else { return }
        var failing = false
        // A failed renewal is tried again at once, then after short waits: well within
        // the margin either way (the renewal timeout bounds each try).
        var retries = Backoff(first: .milliseconds(20), limit: .milliseconds(100), jitter: 0.2)
        while !Task.isCancelled, state.withLock({ $0.machine.lease?.id == id }) {
            if !failing { try? await Task.sleep(for: config.lease.renewInterval) }
            let sentAt = ContinuousClock.now
            do {
                guard let ttl = try await coordinator.renew(lease: id, timeout: config.lease.renewTimeout) else {
                    handle(.leaseGone(id: id))
                    return
                }
                if failing { logger.notice("renewed the leader lease again", metadata: ["lease": "\(id)"]) }
                failing = false
                retries.reset()
                handle(.leaseRenewed(id: id, validUntil: config.lease.validUntil(sentAt: sentAt, granted: ttl)))
                handle(.quorumChecked(inTouch: membersInTouch()))
            } catch {
                if Task.isCancelled { return }
                if !failing { logger.warning("cannot renew the leader lease", metadata: ["lease": "\(id)", "error": "\(error)"]) }
                failing = true
                if ContinuousClock.now - sentAt < config.lease.renewTimeout { try? await Task.sleep(for: retries.next()) }
            }
        }
    }
}
