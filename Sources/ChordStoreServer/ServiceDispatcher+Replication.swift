import ChordStoreRecords
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
package import ChordStoreWire
import Foundation
import SwiftProtobuf

/// The leader's side of replication: the `Replicate` stream (the stored records, byte for
/// byte, in batches that each name the event before them), acknowledgements, quorum
/// waits, status, and read-your-writes waits.
extension ServiceDispatcher {
    /// Most records in one replication batch, and most bytes (a batch is one frame).
    static let maxBatchRecords = 2_048
    static let maxBatchBytes = 1 << 20
    /// The longest an idle Replicate stream stays silent.
    static let heartbeat: Duration = .seconds(1)

    /// Answers `Replicate`: checks that the follower's last event is this log's event at
    /// that position (else FAILED_PRECONDITION "diverged"), then sends the records after
    /// it, and each new one as it commits, until the follower goes, this node stops
    /// leading, or the server drains.
    /// A follower that names a configured member must connect from that member's host
    /// (`PERMISSION_DENIED` otherwise).
    package func replicate(
        payload: RequestPayload, context: CallContext, isDraining: @escaping @Sendable () -> Bool,
        emit: MethodHandler.Emit
    ) async throws(WireError) {
        let request: Chordstore_V1_ReplicateRequest
        do {
            request = try payload.decode(Chordstore_V1_ReplicateRequest.self)
        } catch {
            throw WireError(.invalidArgument, "the payload of Replicate is not a ReplicateRequest: \(error)")
        }
        try Self.checkEpoch(request.epoch)
        try checkServesReplication()
        do {
            try replication?.checkSource(request.address, context.peerAddress)
        } catch {
            throw WireError(error)
        }
        replication?.observeEpoch(request.epoch, from: request.address)
        try checkServesReplication()
        let from = max(request.fromSequence, 1)
        var previous: LogPosition
        do {
            // A log that differs from this one: how much of it is this one's is not known.
            guard let mine = try store.position(at: from - 1) else {
                replication?.followerHolds(address: request.address, atMost: 0)
                throw WireError(ChordStoreError.diverged("the follower has event \(from - 1); this leader's log ends at \(try store.head().sequence)"))
            }
            guard mine.epoch == request.previousEpoch, mine.checksum == request.previousChecksum else {
                replication?.followerHolds(address: request.address, atMost: 0)
                throw WireError(ChordStoreError.diverged(
                    "the follower's event \(from - 1) has epoch \(request.previousEpoch) and checksum \(request.previousChecksum); this leader's has \(mine)"))
            }
            previous = mine
        } catch {
            throw WireError.wrapping(error)
        }
        // What the follower's log holds: a position acknowledged before (by a node this
        // one replaced at the address, say) no longer counts above it.
        replication?.followerHolds(address: request.address, atMost: from - 1)
        replication?.streamChanged(address: request.address, node: request.node, delta: 1)
        defer { replication?.streamChanged(address: request.address, node: request.node, delta: -1) }
        var lastSent = ContinuousClock.now - Self.heartbeat  // the first batch leaves at once, even empty
        while true {
            var batch = Chordstore_V1_ReplicationBatch()
            batch.leaderEpoch = store.epoch
            batch.previousSequence = previous.sequence
            batch.previousEpoch = previous.epoch
            batch.previousChecksum = previous.checksum
            var bytes = 0
            var last = previous
            do {
                // The log's committed head: durable, whether or not the views hold it yet.
                let durable = try store.head().sequence
                try store.forEachLogRecord(from: previous.sequence + 1, through: durable) { sequence, record in
                    last = try RecordCodec.position(record, sequence: sequence)
                    batch.records.append(Data(record))
                    bytes += record.count
                    return batch.records.count < Self.maxBatchRecords && bytes < Self.maxBatchBytes
                }
                batch.leaderLastSequence = durable
            } catch {
                // The records before a damaged one still reach the follower.
                if !batch.records.isEmpty, let bytes = try? batch.serializedBytes() as [UInt8] { try await emit([.bytes(bytes)]) }
                throw WireError.wrapping(error)
            }
            if !batch.records.isEmpty || ContinuousClock.now - lastSent >= Self.heartbeat {
                // A batch, or a heartbeat (no records) that tells an idle follower the
                // leader is alive, and what it holds.
                lastSent = ContinuousClock.now
                do {
                    try await emit([.bytes(try batch.serializedBytes())])
                } catch let error as WireError {
                    throw error
                } catch {
                    throw WireError(.internal, "cannot encode a batch: \(error)")
                }
            }
            if !batch.records.isEmpty {
                previous = last
                // Flow control: the next batch leaves once this one is applied (or after
                // a second), carrying whatever committed meanwhile. A task that did not
                // wait for that (a follower's position already past the batch, a server
                // outside a cluster) yields, so that a stream never holds a thread of the
                // pool; one that waited does not (a second wake-up per batch).
                let waited = await replication?.waitForAcknowledgement(from: request.address, of: last.sequence, timeout: .seconds(1))
                if waited != .waited { await Task.yield() }
            }
            if isDraining() { throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown) }
            if Task.isCancelled { throw WireError(.cancelled, "the call ended") }
            try checkServesReplication()
            if batch.records.isEmpty { await store.waitForCommit(after: previous.sequence, timeout: Self.heartbeat) }
        }
    }

    /// Answers `AckReplication`: it counts only for the member that the connection it
    /// came over (from `source`) can speak for.
    func acknowledge(_ ack: Chordstore_V1_ReplicationAck, from source: String) throws -> [UInt8] {
        guard let replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster") }
        try Self.checkEpoch(ack.epoch)
        let epoch = try replication.acknowledge(address: ack.address, from: source, node: ack.node, sequence: ack.sequence, epoch: ack.epoch)
        return try Chordstore_V1_ReplicationAckReply.with { $0.epoch = epoch }.serializedBytes()
    }

    /// Refuses an epoch no member can hold (``ChordStoreEngine/LogPosition/checkEpoch(_:)``).
    static func checkEpoch(_ epoch: UInt64) throws(WireError) {
        do {
            try LogPosition.checkEpoch(epoch)
        } catch {
            throw WireError(error)
        }
    }

    /// This node's status; a lone server reports itself as a leader of one.
    func nodeStatus() throws -> Chordstore_V1_NodeStatus {
        if let replication { return try replication.status() }
        let head = try store.head()
        return .with {
            $0.node = node
            $0.role = ReplicationNode.Role.leader.rawValue
            $0.epoch = store.epoch
            $0.lastSequence = head.sequence
            $0.lastChecksum = head.checksum
            $0.members = 1
            $0.quorumSequence = head.sequence
            $0.replication = "not replicated"
        }
    }

    /// `GetLogPosition`: the whole log's event at `sequence`, as a position.
    func logPosition(_ sequence: UInt64) throws(WireError) -> Chordstore_V1_LogPosition {
        do {
            let last = try store.head().sequence
            guard let position = try store.position(at: sequence) else { return .with { $0.lastSequence = last } }
            return .with {
                $0.found = true
                $0.sequence = position.sequence
                $0.epoch = position.epoch
                $0.checksum = position.checksum
                $0.lastSequence = last
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// The cluster as this node sees it (`GetClusterStatus`).
    func clusterStatus() async throws(WireError) -> Chordstore_V1_ClusterStatus {
        guard let replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster") }
        do {
            return try await replication.clusterStatus()
        } catch {
            throw WireError(error)
        }
    }

    /// `AddMember` / `RemoveMember`, on the leader (a follower refuses, naming it); the
    /// change waits at most ``memberChangeLimit`` (the call's deadline ends it sooner).
    func changeMembers(adding: String? = nil, removing: String? = nil, context: CallContext) async throws(WireError) -> Chordstore_V1_ClusterStatus {
        guard let replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster") }
        if replication.config.coordinator != nil { try checkLeading() }
        do {
            if let adding { return try await replication.addMember(adding, timeout: Self.memberChangeLimit) }
            return try await replication.removeMember(removing ?? "", timeout: Self.memberChangeLimit)
        } catch {
            throw WireError(error)
        }
    }

    /// The longest a membership change waits for the members to catch up: less than the
    /// CLI's 30 s deadline, so its answer says why.
    static let memberChangeLimit: Duration = .seconds(25)

    /// The durability a write asks for, with the server's default filled in.
    func durability(_ asked: Chordstore_V1_Durability) -> Durability {
        guard let replication else { return .local }
        return switch asked {
        case .local: .local
        case .quorum: .quorum
        default: replication.config.durability
        }
    }

    /// Waits until the write at `sequence` is as durable as asked: at once for `local`,
    /// until a majority holds it for `quorum` (UNAVAILABLE if that does not happen in
    /// time; the call's deadline ends it earlier with DEADLINE_EXCEEDED).
    func awaitDurability(_ asked: Chordstore_V1_Durability, of sequence: UInt64) async throws {
        guard let replication, durability(asked) == .quorum else { return }
        guard await replication.waitForQuorum(sequence) else {
            if Task.isCancelled { throw WireError(.deadlineExceeded, "event \(sequence) did not reach a quorum before the deadline") }
            throw Self.noQuorum(sequence)
        }
    }

    /// ``awaitDurability(_:of:)`` without a task, for a call answered on its event loop:
    /// calls `done` once the write at `sequence` is as durable as asked (at once, on this
    /// thread, for `local` or a majority that holds it already: then no wait is returned),
    /// or with UNAVAILABLE when a majority does not acknowledge it in time. The returned
    /// wait is cancelled when the call ends first (its deadline, its connection closing).
    func whenDurable(
        _ asked: Chordstore_V1_Durability, of sequence: UInt64, _ done: @escaping @Sendable (Result<Void, WireError>) -> Void
    ) -> ReplicationNode.QuorumWait? {
        guard let replication, durability(asked) == .quorum else {
            done(.success(()))
            return nil
        }
        return replication.whenQuorum(sequence) { held in done(held ? .success(()) : .failure(Self.noQuorum(sequence))) }
    }

    /// The refusal of a write a majority did not acknowledge in time.
    private static func noQuorum(_ sequence: UInt64) -> WireError {
        WireError(
            .unavailable,
            "event \(sequence) is on this node's disk, but a majority of the members did not acknowledge it in time: it may or may not survive a failover",
            reason: .noQuorum)
    }

    /// Read your writes for a call: waits for its store's event `sequence`
    /// (``waitForSequence(_:store:limit:)``), then checks that the call's token still
    /// works: one revoked meanwhile, or whose store was deleted (and maybe created again),
    /// reads nothing.
    func waitForSequence(_ sequence: UInt64, context: CallContext) async throws(WireError) {
        try await waitForSequence(sequence, store: context.store)
        try checkStillAuthorized(context)
    }

    /// Refuses with `UNAUTHENTICATED` a call whose token was revoked since it started (a
    /// store's deletion revokes the tokens scoped to it).
    func checkStillAuthorized(_ context: CallContext) throws(WireError) {
        if case .token(let grant) = context.principal, let authenticator, !authenticator.isLive(grant) {
            throw WireError(.unauthenticated, "token \(grant.id) was revoked while this call waited", reason: .tokenRevoked)
        }
    }

    /// Read your writes: returns once this node has applied event `sequence` of the
    /// call's store; fails with UNAVAILABLE after `limit` (the call's deadline, if sooner,
    /// ends it first). A node that does not lead and does not have the store yet waits for
    /// its creation as for its events (the leader made it, and the event that did is on its
    /// way), then answers `NOT_FOUND` if it never came; a leader answers `NOT_FOUND` at once.
    package func waitForSequence(_ sequence: UInt64, store name: String, limit: Duration = .seconds(30)) async throws(WireError) {
        let deadline = ContinuousClock.now + limit
        while true {
            let following = replication?.writeRefusal() != nil
            let last: UInt64
            var absent: ChordStoreError?
            do {
                last = try store.lastSequence(store: name)
            } catch where following && error.reason == .storeNotFound {
                (last, absent) = (0, error)
            } catch {
                throw WireError(error)
            }
            if last >= sequence { return }
            if Task.isCancelled { throw WireError(.cancelled, "the call ended") }
            guard ContinuousClock.now < deadline else {
                if let absent { throw WireError(absent) }
                throw WireError(
                    .unavailable, "this node has applied events up to \(last) of store \(StoreName.resolved(name)), not yet \(sequence)",
                    reason: .notCaughtUp)
            }
            guard await store.waitForCommit(after: last, store: name, awaitingCreation: following, timeout: .milliseconds(200)) else {
                throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown)
            }
        }
    }

    /// Throws the refusal of a follower (naming the leader) unless this node leads.
    func checkLeading() throws(WireError) {
        guard let replication, let leader = replication.writeRefusal() else { return }
        throw Self.notLeader(leader)
    }

    /// Throws the refusal of a follower unless this node serves its followers' copies
    /// (it leads, or hands leadership over).
    func checkServesReplication() throws(WireError) {
        guard let replication, !replication.servesReplication else { return }
        throw Self.notLeader(replication.leader ?? "")
    }

    static func notLeader(_ leader: String) -> WireError {
        var refusal = WireError(ChordStoreError.notLeader(leader.isEmpty ? "no leader is known now; retry shortly" : "send it to \(leader)"))
        refusal.leader = leader
        return refusal
    }
}
