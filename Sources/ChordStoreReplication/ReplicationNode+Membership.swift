import ChordStoreRecords
import ChordStoreClient
public import ChordStoreDomain
import ChordStoreEngine
public import ChordStoreProto
import Foundation
import Logging
import SwiftProtobuf
import Synchronization

/// The cluster as a whole: its status, and membership changes (coordinated mode).
extension ReplicationNode {
    /// The cluster as this node sees it (`GetClusterStatus`): the leader, the members
    /// (each asked for its status, within a second), and the nodes that follow the
    /// leader without voting.
    public func clusterStatus() async throws(ChordStoreError) -> Chordstore_V1_ClusterStatus {
        let machine = state.withLock { $0.machine }
        var status = Chordstore_V1_ClusterStatus()
        status.cluster = config.cluster
        status.coordinated = config.coordinator != nil
        if config.coordinator != nil {
            guard let view = machine.cluster else {
                throw ChordStoreError(.unavailable, "this node has not reached the coordinator yet (\(config.coordinator?.description ?? ""))")
            }
            status.leader = view.leader?.address ?? ""
            status.epoch = view.leader?.epoch ?? 0
            status.membershipRevision = view.members.revision
        } else {
            status.leader = machine.leader ?? ""
        }
        let members = machine.members
        status.majority = UInt32(members.majority)
        let own = try self.status()
        var answers: [String: Chordstore_V1_NodeStatus] = [config.address: own]
        for answer in await probe.statuses(members.others(than: config.address)) { answers[answer.address] = answer }
        for address in members.addresses {
            status.members.append(.with { member in
                member.address = address
                if let answer = answers[address] {
                    member.reachable = true
                    member.status = answer
                }
            })
        }
        var leaderStatus = answers[status.leader]
        if leaderStatus == nil, !status.leader.isEmpty { leaderStatus = await probe.statuses([status.leader]).first }
        if let leaderStatus {
            if config.coordinator == nil { status.epoch = leaderStatus.epoch }
            // Learners: followers heard from lately, not every one that ever followed.
            status.learners = leaderStatus.followers.filter { $0.streaming || $0.lastSeenMillis < 10_000 }.map(\.address)
                .filter { !members.contains($0) }.sorted()
        }
        return status
    }

    /// Adds the node at `address` to the voting members (`AddMember`), on the leader of a
    /// coordinated cluster. While it waits (at most `timeout`), quorum writes need a
    /// majority of the old members and of the new ones; the change is made in the
    /// coordinator only once a majority of the new members hold every event this leader
    /// holds, so no acknowledged write can be missed by a later election.
    public func addMember(_ address: String, timeout: Duration) async throws(ChordStoreError) -> Chordstore_V1_ClusterStatus {
        try await changeMembers(adding: address, timeout: timeout)
    }

    /// Removes the node at `address` from the voting members (`RemoveMember`). Removing
    /// the leader itself hands leadership over first: it stops taking writes, waits until
    /// a majority of the remaining members hold all of its log, then removes itself and
    /// gives the leader key up in one transaction; the member furthest ahead takes it.
    public func removeMember(_ address: String, timeout: Duration) async throws(ChordStoreError) -> Chordstore_V1_ClusterStatus {
        try await changeMembers(removing: address, timeout: timeout)
    }

    private func changeMembers(adding: String? = nil, removing: String? = nil, timeout: Duration) async throws(ChordStoreError) -> Chordstore_V1_ClusterStatus {
        guard let coordinator = config.coordinator else {
            throw ChordStoreError(
                .failedPrecondition,
                "this cluster has no coordinator: its members are the --peer lists, changed by restarting each member (docs/REPLICATION.md)")
        }
        let address = adding ?? removing ?? ""
        if adding != nil { try Self.checkAddress(address) }
        guard writeRefusal() == nil else {
            throw ChordStoreError.notLeader("membership changes are made by the leader")
        }
        let current = try state.withLock { state throws(ChordStoreError) -> Membership in
            guard !state.changingMembers else { throw ChordStoreError(.aborted, "another membership change is under way; retry when it is done") }
            state.changingMembers = true
            return state.machine.members
        }
        defer { state.withLock { $0.changingMembers = false } }
        let target = Membership(adding.map { current.addresses + [$0] } ?? current.addresses.filter { $0 != removing })
        if target.addresses == current.addresses { return try await clusterStatus() }
        guard !target.addresses.isEmpty else { throw ChordStoreError(.failedPrecondition, "a cluster keeps at least one member") }
        if let adding {
            try await checkNotAnAlias(adding, of: current)
            try checkFollowing(adding)
        }
        try checkInTouch(target)
        if removing == config.address {
            try await handOver(from: current, to: target, timeout: timeout, coordinator: coordinator)
        } else {
            try await change(from: current, to: target, timeout: timeout, coordinator: coordinator)
            logger.notice(adding != nil ? "member added" : "member removed", metadata: ["member": "\(address)", "members": "\(target)"])
        }
        // The reply shows the new list: wait (briefly) for the watch to bring it.
        await membersSeen.wait(for: target.addresses, timeout: .seconds(2), otherwise: ()) { goal in
            state.withLock { $0.machine.members.addresses == goal ? () : nil }
        }
        return try await clusterStatus()
    }

    /// Refuses an address that is not `HOST:PORT` with a host of letters, digits, '.',
    /// '-' or an IPv6 address in brackets, and a port 1-65535, 255 characters at most.
    static func checkAddress(_ address: String) throws(ChordStoreError) {
        let shown = address.count > 100 ? String(address.prefix(100)) + "…" : address
        let refusal = ChordStoreError(.invalidArgument, "'\(shown)' is not a member's HOST:PORT (a host name or IP address, and a port 1-65535)")
        guard address.utf8.count <= 255, let (host, port) = Client.split(address), (1...65_535).contains(port), !host.isEmpty else { throw refusal }
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        let name = bracketed ? host.dropFirst().dropLast() : Substring(host)
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "." || scalar == "-" || (bracketed && scalar == ":"))
        }
        guard allowed, !name.isEmpty, bracketed || !host.contains(":") else { throw refusal }
    }

    /// Refuses a new member that is another name of a member (the same addresses and port).
    private func checkNotAnAlias(_ address: String, of current: Membership) async throws(ChordStoreError) {
        guard let (_, port) = Client.split(address) else { return }
        let resolved = await HostAddresses.sources(of: address)
        for member in current.addresses {
            guard let (_, memberPort) = Client.split(member), memberPort == port else { continue }
            if !resolved.isDisjoint(with: await HostAddresses.sources(of: member)) {
                throw ChordStoreError(.alreadyExists, "\(address) is \(member), a member already, by another name")
            }
        }
    }

    /// Refuses to add a node that is not following this leader now: it must be running,
    /// with the cluster's coordinator, and copying this leader's log.
    private func checkFollowing(_ address: String) throws(ChordStoreError) {
        let now = ContinuousClock.now
        let following = state.withLock { state in
            guard let follower = state.quorum.followers[address] else { return false }
            return follower.streams > 0 || now - follower.lastSeen < config.lease.touchWindow
        }
        guard following else {
            throw ChordStoreError(
                .failedPrecondition,
                "\(address) is not following this leader: start it with the cluster's --coordinator and --cluster and --advertise \(address), then add it")
        }
    }

    /// Refuses a change whose new list has no majority in touch with this leader now:
    /// quorum writes would stall until it failed.
    private func checkInTouch(_ target: Membership) throws(ChordStoreError) {
        let now = ContinuousClock.now
        let inTouch = state.withLock { state in
            target.addresses.count { address in
                address == config.address || state.quorum.followers[address].map { now - $0.lastSeen < config.lease.touchWindow } == true
            }
        }
        guard inTouch >= target.majority else {
            throw ChordStoreError(
                .failedPrecondition,
                "only \(inTouch) of the \(target.addresses.count) members of \(target) are in touch with the leader; the change needs \(target.majority)")
        }
    }

    /// A change that keeps this leader: joint quorums while a majority of `target` catches up.
    private func change(from current: Membership, to target: Membership, timeout: Duration, coordinator: any Coordinator) async throws(ChordStoreError) {
        for added in target.addresses where !current.contains(added) {
            let sources = await HostAddresses.sources(of: added)
            state.withLock { $0.quorum.setSources(sources, for: added) }
        }
        state.withLock { $0.quorum.beginChange(to: target) }
        var committed = false
        defer { if !committed { state.withLock { $0.quorum.abortChange() } } }
        let head = try store.head().sequence
        guard await wait(for: .quorum(head), timeout: timeout) else {
            throw ChordStoreError(
                .failedPrecondition,
                "a majority of \(target) did not hold event \(head) within \(timeout): a new member must run `chordstore serve --coordinator … --cluster \(config.cluster) --advertise HOST:PORT` and follow this leader first")
        }
        switch await Self.outcome(of: { () throws(ChordStoreError) in try await coordinator.changeMembers(from: current, to: target, resigningLease: nil) },
                                  applied: { $0.members.addresses == target.addresses }, coordinator: coordinator) {
        case .applied:
            committed = true
            state.withLock { $0.quorum.setMembers(Membership(target.addresses, revision: current.revision)) }
        case .notApplied:
            throw ChordStoreError(.aborted, "the member list changed in the coordinator meanwhile; look again and retry")
        case .unknown(let error):
            // Back to the old membership's quorums: any majority of it meets any majority
            // of a list one member apart, and the watch brings whichever list holds.
            throw ChordStoreError(.unavailable, "the member list may or may not have changed (\(error.message)); look with `cluster status`")
        }
    }

    /// The leader removes itself: no writes, a majority of the rest catches up, then the
    /// member list loses it and the leader key goes, in one transaction. If the
    /// transaction's outcome cannot be known, the node steps down rather than lead on:
    /// stepping down is always safe, leading on beside a successor is not.
    private func handOver(from current: Membership, to target: Membership, timeout: Duration, coordinator: any Coordinator) async throws(ChordStoreError) {
        if let reason = Self.refusal(in: handle(.handOverStarted)) { throw ChordStoreError(.failedPrecondition, reason) }
        var done = false
        defer { handle(.handOverEnded(done)) }
        try await store.waitForWriter()  // a commit in flight when the gate closed is in the log now
        let head = try store.head().sequence
        guard await wait(for: .majorityOf(target, head), timeout: timeout) else {
            throw ChordStoreError(.failedPrecondition, "a majority of \(target) did not hold event \(head) within \(timeout); this node leads on")
        }
        guard let lease = state.withLock({ $0.machine.lease }) else {
            throw ChordStoreError(.unavailable, "this node's lease lapsed during the handover")
        }
        switch await Self.outcome(of: { () throws(ChordStoreError) in try await coordinator.changeMembers(from: current, to: target, resigningLease: lease.id) },
                                  applied: { $0.leader?.lease != lease.id && !$0.members.contains(config.address) }, coordinator: coordinator) {
        case .applied:
            done = true
            logger.notice("removed this node from the members and gave the leader key up", metadata: ["members": "\(target)"])
        case .notApplied:
            throw ChordStoreError(.aborted, "the member list or the leader key changed in the coordinator meanwhile; look again and retry")
        case .unknown(let error):
            done = true
            throw ChordStoreError(.unavailable, "the handover may or may not have happened (\(error.message)); this node stepped down, look with `cluster status`")
        }
    }

    /// What became of a compare-and-swap in the coordinator.
    enum SwapOutcome {
        case applied, notApplied
        case unknown(ChordStoreError)
    }

    /// Runs `swap`; when it fails, or says it did not apply (a retry on another etcd
    /// endpoint finds its own earlier success a conflict), reads the cluster to see
    /// whether `applied` holds.
    static func outcome(
        of swap: () async throws(ChordStoreError) -> Bool, applied: (ClusterView) -> Bool, coordinator: any Coordinator
    ) async -> SwapOutcome {
        var failure: ChordStoreError?
        do {
            if try await swap() { return .applied }
        } catch {
            failure = error
        }
        do {
            return applied(try await coordinator.read()) ? .applied : (failure.map { .unknown($0) } ?? .notApplied)
        } catch {
            return .unknown(failure ?? error)
        }
    }
}
