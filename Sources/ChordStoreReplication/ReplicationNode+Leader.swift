import ChordStoreRecords
import ChordStoreClient
public import ChordStoreDomain
import ChordStoreEngine
public import ChordStoreProto
import Foundation
import Logging
import SwiftProtobuf
import Synchronization

/// The leader's side: acknowledgements and the quorum waits they complete, the members'
/// epochs, a manual leader's look at its peers, and the node's status.
extension ReplicationNode {
    /// A member showed its epoch over a connection that may speak for it (checked with
    /// ``checkSource(_:_:)``): if it is newer than this node's, another leader was
    /// chosen, and this node steps down.
    public func observeEpoch(_ epoch: UInt64, from address: String) {
        guard epoch > store.epoch else { return }  // the common case, without the lock
        handle(.epochSeen(epoch, from: address, leading: false))
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
            Task { [self] in
                let fresh = await HostAddresses.sources(of: address)
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
        let reached = counted.quorumSequence(epoch: current)
        // Quorum writes wait in the order of their sequence numbers: those `reached` meets
        // end without a look at the others; the few other waits are asked.
        quorumWaiters.resume(through: reached)
        if let waiters = followerWaiters.withLock({ $0[address]?.waiters }), let acked = counted.followers[address]?.acked {
            waiters.resume(through: acked)
        }
        ackWaiters.resume { $0.isMet(by: counted, epoch: current, quorumSequence: reached) ? true : nil }
        return current
    }

    /// Counts a Replicate stream to a follower opening or closing (for status).
    public func streamChanged(address: String, node: String, delta: Int) {
        state.withLock { $0.quorum.stream(address: address, node: node, delta: delta, at: .now) }
        followerWaiters.withLock { all in
            var waits = all[address] ?? StreamWaits()
            waits.streams += delta
            all[address] = waits.streams > 0 ? waits : nil
        }
    }

    /// The follower at `address`, whose connection may speak for it (``checkSource(_:_:)``),
    /// showed that its log holds at most `sequence` of this leader's events: its
    /// acknowledged position comes down to that (``QuorumState/holds(address:atMost:)``).
    public func followerHolds(address: String, atMost sequence: UInt64) {
        state.withLock { $0.quorum.holds(address: address, atMost: sequence) }
    }

    /// Waits until a majority of members hold event `sequence`. Returns `false` when
    /// ``ReplicationConfig/quorumTimeout`` passes, the task is cancelled (its call's
    /// deadline) or the node stops leading first.
    public func waitForQuorum(_ sequence: UInt64) async -> Bool {
        let epoch = store.epoch
        return await quorumWaiters.wait(for: sequence, timeout: config.quorumTimeout) { outcome(of: .quorum($0), epoch: epoch) }
    }

    /// Waits until the follower at `address` acknowledged event `sequence`, at most
    /// `timeout`: a Replicate stream sends its next batch once the last one is applied,
    /// so that records arriving meanwhile travel, and are committed, together. Says
    /// whether it waited: ``AcknowledgementWait/decidedAtOnce`` when nothing was left to
    /// wait for (the follower's position was there already, the node stopped serving
    /// replication, or no stream of `address` is open), so that the caller, not
    /// suspended, can yield.
    public func waitForAcknowledgement(from address: String, of sequence: UInt64, timeout: Duration) async -> AcknowledgementWait {
        let epoch = store.epoch
        // A stream counts itself open before it waits: without one, there is no flow to control.
        guard let waiters = followerWaiters.withLock({ $0[address]?.waiters }) else { return .decidedAtOnce }
        if outcome(of: .follower(address, sequence), epoch: epoch) != nil { return .decidedAtOnce }
        let reached = await waiters.wait(for: sequence, timeout: timeout) { outcome(of: .follower(address, $0), epoch: epoch) }
        if !reached, !Task.isCancelled, outcome(of: .follower(address, sequence), epoch: epoch) != false {
            flowControlTimeouts.add(1, ordering: .relaxed)
        }
        return .waited
    }

    func wait(for goal: AckGoal, timeout: Duration) async -> Bool {
        let epoch = store.epoch
        return await ackWaiters.wait(for: goal, timeout: timeout, otherwise: false) { outcome(of: $0, epoch: epoch) }
    }

    /// Calls `done` once a majority of members holds event `sequence` (`true`), or with
    /// `false` when ``ReplicationConfig/quorumTimeout`` passes, the node stops leading, or
    /// the returned wait is cancelled: ``waitForQuorum(_:)`` without a task, for a call
    /// answered on its event loop. `done` runs on the thread that ends the wait (at once,
    /// on this one, if the majority holds it already: then no wait is returned).
    public func whenQuorum(_ sequence: UInt64, _ done: @escaping @Sendable (Bool) -> Void) -> QuorumWait? {
        let epoch = store.epoch
        return quorumWaiters.register(for: sequence, timeout: config.quorumTimeout, check: { outcome(of: .quorum($0), epoch: epoch) }, done)
            .map { QuorumWait(waiters: quorumWaiters, registration: $0) }
    }

    /// How many waits for acknowledgements are registered (quorum writes, membership
    /// changes, Replicate streams' flow control).
    package var pendingAcknowledgementWaits: Int {
        quorumWaiters.count + followerWaiters.withLock { $0.values.reduce(0) { $0 + $1.waiters.count } } + ackWaiters.count
    }

    /// How many Replicate streams' waits for a follower's acknowledgement ended by their
    /// timeout while the node served replication: a follower late by more than the
    /// timeout, or a lost wake-up (which would end every one so).
    package var flowControlTimeoutCount: Int { flowControlTimeouts.load(ordering: .relaxed) }

    /// How many followers' registries of flow-control waits are kept (one per address
    /// with an open Replicate stream).
    package var followerWaitRegistries: Int { followerWaiters.withLock { $0.count } }

    /// A wait's outcome now: `false` once the node stops serving replication, `true` once
    /// the goal is met, else none yet.
    private func outcome(of goal: AckGoal, epoch: UInt64) -> Bool? {
        state.withLock { state -> Bool? in
            if !state.machine.servesReplication { return false }
            return goal.isMet(by: state.quorum, epoch: epoch) ? true : nil
        }
    }

    /// A manual leader's checks: a peer that leads with a newer epoch makes it step down.
    func monitorPeers(generation: UInt64) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: config.probeInterval)
            guard state.withLock({ $0.machine.generation == generation && $0.machine.isLeading }) else { return }
            handle(.peersProbed(await probe.statuses(config.peers).map(Self.view)))
        }
    }

    /// The address of the member that leads with the newest epoch, if any answers.
    func findLeader() async -> String? {
        let leaders = await probe.statuses(config.peers + (config.follow.map { [$0] } ?? []))
            .filter { $0.role == Role.leader.rawValue && $0.epoch >= store.epoch }
        return leaders.max { $0.epoch < $1.epoch }?.address
    }

    // MARK: Status

    /// What this node reports through `GetNodeStatus` and `chordstore status`.
    public func status() throws(ChordStoreError) -> Chordstore_V1_NodeStatus {
        let head = try store.head()
        let epoch = store.epoch
        let now = ContinuousClock.now
        let (machine, quorum, replication, parked) = state.withLock { ($0.machine, $0.quorum, $0.replication, $0.parked) }
        var status = Chordstore_V1_NodeStatus()
        status.node = config.node
        status.address = config.address
        // A coordinated leader past its lease takes no write: it reports no leader.
        let leading = machine.leader(at: now) == config.address
        status.role = leading ? Role.leader.rawValue : Role.follower.rawValue
        status.epoch = epoch
        status.lastEpoch = head.epoch
        status.lastSequence = head.sequence
        status.lastChecksum = head.checksum
        status.leader = machine.leader(at: now) ?? ""
        status.members = UInt32(machine.members.addresses.count)
        status.replication = machine.isLeading ? "leading" : replication
        status.parkedEvents = parked
        status.cluster = config.cluster
        status.learner = config.coordinator != nil && !machine.isMember
        if let lease = machine.lease, machine.isLeading {
            status.leaseMillis = UInt64(max(0, (lease.validUntil - now) / .milliseconds(1)))
        }
        guard machine.isLeading else { return status }
        status.quorumSequence = min(head.sequence, quorum.quorumSequence(epoch: epoch))
        let wallNow = Instant.now
        for (address, follower) in quorum.followers.sorted(by: { $0.key < $1.key }) {
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
}
