import ChordStoreRecords
import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import Logging
import SwiftProtobuf
import Synchronization

/// The follower's side: copy the leader's log from this log's last event, apply each
/// batch after the append-entries check, acknowledge it, and repeat; find the leader
/// again when it is lost; after a divergence, park and cut the events the leader lacks.
extension ReplicationNode {
    /// Why one turn of following ended.
    enum FollowEnd: Error {
        /// The leader's log differs from this one at this node's last event.
        case diverged(String)
        /// The member asked is not the leader; it named this one (or none).
        case redirected(String?)
        /// Anything else (connection lost, refused batch, ...).
        case failed(String)
    }

    /// Runs while the machine follows: copies from the leader it names, reports each
    /// turn (``RoleMachine/Event/followEnded(leader:_:)``), waits for a leader to be
    /// named when none is, and backs off after failures.
    func followLoop() async {
        var backoff = Backoff(first: .milliseconds(50), limit: .seconds(1), jitter: 0.2)
        while !Task.isCancelled {
            let (phase, generation) = state.withLock { ($0.machine.phase, $0.machine.generation) }
            guard case .following(let named) = phase, let leader = named else {
                if case .following = phase {
                    setReplication(config.coordinator == nil
                        ? "looking for a leader among \(config.peers.joined(separator: ", "))"
                        : "waiting for a leader (\(config.coordinator?.description ?? "the coordinator"))")
                }
                await waitForNewLeader(after: generation, atMost: .seconds(1))
                continue
            }
            let before = (try? store.head().sequence) ?? 0
            var outcome = RoleMachine.FollowOutcome.failed
            state.withLock { $0.followingFrom = leader }
            defer { state.withLock { $0.followingFrom = nil } }
            do {
                try await followOnce(leader)
            } catch {
                switch error {
                case .diverged(let message):
                    logger.warning("the log diverged from the leader's", metadata: ["leader": "\(leader)", "detail": "\(message)"])
                    do {
                        try await reconcile(with: leader)
                    } catch {
                        setReplication("diverged from \(leader) and cannot reconcile: \(error)")
                        logger.error("cannot reconcile with the leader", metadata: ["error": "\(error)"])
                    }
                case .redirected(let next):
                    outcome = .redirected(to: next)
                case .failed(let message):
                    // Cancelled: the machine moved on (another leader, a takeover); not a failure.
                    if Task.isCancelled { return }
                    setReplication("not following \(leader): \(message)")
                    logFailure("not following the leader", leader: leader, detail: message)
                }
            }
            if Task.isCancelled { return }
            if ((try? store.head().sequence) ?? 0) != before {
                backoff.reset()
                handle(.followEnded(leader: leader, .progressed))
            }
            handle(.followEnded(leader: leader, outcome))
            await waitForNewLeader(after: generation, atMost: backoff.next())
        }
    }

    /// Returns when the machine names a leader (its generation moves past `generation`),
    /// or after `timeout`.
    private func waitForNewLeader(after generation: UInt64, atMost timeout: Duration) async {
        await leaderNamed.wait(for: generation, timeout: timeout, otherwise: ()) { seen in
            state.withLock { $0.machine.generation } > seen ? () : nil
        }
    }

    /// One Replicate stream from `leader`, applied and acknowledged batch by batch.
    /// Acknowledgements go over a connection of their own: the stream's connection stops
    /// reading while undelivered batches pile up, which would hold an acknowledgement's
    /// reply back while the loop waits for it. An idle leader sends an empty batch every
    /// second; after ``silence`` without one, the leader is taken as lost (a stopped
    /// process keeps its connections open).
    private func followOnce(_ leader: String) async throws(FollowEnd) {
        guard let client = probe.dedicatedClient(leader, from: sourceAddress), let acks = probe.dedicatedClient(leader, from: sourceAddress) else {
            throw .failed("\(leader) is not HOST:PORT")
        }
        defer {
            Task {
                await client.close()
                await acks.close()
            }
        }
        do {
            let head = try store.head()
            setReplication("connecting to \(leader) from event \(head.sequence + 1)")
            let stream = try await client.stream(.replicate, Chordstore_V1_ReplicateRequest.with {
                $0.node = config.node
                $0.address = config.address
                $0.epoch = store.epoch
                $0.fromSequence = head.sequence + 1
                $0.previousEpoch = head.epoch
                $0.previousChecksum = head.checksum
            }, as: Chordstore_V1_ReplicationBatch.self)
            let heard = Heartbeat()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await batch in stream {
                        heard.beat()
                        guard self.role == .follower, !Task.isCancelled else { return }
                        try await self.apply(batch, from: leader, acknowledgingTo: acks)
                    }
                    throw FollowEnd.failed("the stream ended")
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: .seconds(1))
                        if heard.silence > Self.silence { throw FollowEnd.failed("no word from the leader for \(Self.silence)") }
                    }
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch let error as FollowEnd {
            throw error
        } catch let error as ClientError {
            if error.reason == .diverged { throw .diverged(error.message) }
            if error.reason == .notLeader { throw .redirected(error.leader) }
            throw .failed("\(error)")
        } catch let error as ChordStoreError {
            // A batch this log refuses (tampered, not following this log's last event, of
            // a leader deposed meanwhile, or a full disk here).
            if error.reason == .diverged { throw .diverged(error.message) }
            if error.reason == .olderLeader { throw .redirected(nil) }
            throw .failed("refused a batch: \(error)")
        } catch {
            throw .failed("\(error)")
        }
    }

    /// How long a follower waits without a batch or heartbeat before it drops its leader.
    static let silence: Duration = .seconds(5)

    /// Logs why following failed: at once when the reason changes, else at most every
    /// ``failureLogInterval`` (a full disk or a refusal repeats every second).
    private func logFailure(_ message: Logger.Message, leader: String, detail: String) {
        let now = ContinuousClock.now
        let due = state.withLock { state -> Bool in
            if let last = state.loggedFailure, last.detail == detail, now - last.at < Self.failureLogInterval { return false }
            state.loggedFailure = (detail, now)
            return true
        }
        if due { logger.warning(message, metadata: ["leader": "\(leader)", "detail": "\(detail)"]) }
    }

    static let failureLogInterval: Duration = .seconds(30)

    /// Checks a batch's epoch, applies its records (none in a heartbeat) and acknowledges.
    private func apply(_ batch: Chordstore_V1_ReplicationBatch, from leader: String, acknowledgingTo acks: Client) async throws {
        guard batch.leaderEpoch <= LogPosition.maxEpoch else {
            throw FollowEnd.failed("the leader sent epoch \(batch.leaderEpoch), above the largest possible epoch")
        }
        guard batch.leaderEpoch >= store.epoch else {
            throw FollowEnd.redirected(nil)  // a deposed or fenced leader: look for the current one
        }
        if batch.leaderEpoch > store.epoch { try await adopt(batch.leaderEpoch) }
        var applied = try store.head()
        if !batch.records.isEmpty {
            let previous = LogPosition(sequence: batch.previousSequence, epoch: batch.previousEpoch, checksum: batch.previousChecksum)
            applied = try await store.appendReplicated(batch.records.map { Array($0) }, after: previous, leaderEpoch: batch.leaderEpoch)
        }
        try await acknowledge(applied.sequence, to: acks)
        let vouches = state.withLock { state in
            state.heard = FollowProgress(leaderLastSequence: batch.leaderLastSequence, at: .now)
            return state.machine.vouches
        }
        if !vouches { handle(.caughtUp) }  // this log now matches a leader's
        setReplication("following \(leader): at event \(applied.sequence) of \(max(applied.sequence, batch.leaderLastSequence))")
    }

    /// Reports this node's durable position. The call has no deadline of its own (a
    /// deadline costs the client a task and a timer per call, one per batch here): the
    /// stream's watchdog ends a wait for an answer that never comes, after ``silence``.
    private func acknowledge(_ sequence: UInt64, to client: Client) async throws {
        let ack = Chordstore_V1_ReplicationAck.with {
            $0.node = config.node
            $0.address = config.address
            $0.epoch = store.epoch
            $0.sequence = sequence
        }
        let reply = try await client.call(.ackReplication, ack, as: Chordstore_V1_ReplicationAckReply.self)
        if reply.epoch < store.epoch { throw FollowEnd.redirected(nil) }
    }

    /// Finds the last event this log shares with the leader's (checksums chain, so
    /// "same checksum at n" holds for every n up to the last shared one: a binary search
    /// over the leader's `GetLogPosition`),
    /// parks this log's events after it in a file, and cuts them. Only events of an
    /// epoch older than the leader's are cut: they were never acknowledged by a quorum of
    /// the leader's epoch.
    private func reconcile(with leader: String) async throws {
        guard let client = probe.dedicatedClient(leader, from: sourceAddress) else { throw ChordStoreError(.invalidArgument, "\(leader) is not HOST:PORT") }
        defer { Task { await client.close() } }
        let status = try await client.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest(), timeout: .seconds(5), as: Chordstore_V1_NodeStatus.self)
        guard status.role == Role.leader.rawValue, status.epoch >= store.epoch else {
            throw ChordStoreError(.failedPrecondition, "\(leader) is not a leader of epoch \(store.epoch) or newer: nothing is cut")
        }
        let head = try store.head()
        var low: UInt64 = 0  // shared
        var high = min(head.sequence, status.lastSequence) + 1  // not shared, or past the end
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if try await leaderPosition(middle, client) == store.position(at: middle) { low = middle } else { high = middle }
        }
        guard low < head.sequence else { return }  // nothing to cut: this log is a prefix of the leader's
        let mine = try store.position(at: head.sequence) ?? head
        guard status.epoch > mine.epoch else {
            throw ChordStoreError(
                .failedPrecondition,
                "events \(low + 1)…\(head.sequence) differ from the leader's, which has epoch \(status.epoch), not newer than theirs (\(mine.epoch))")
        }
        setReplication("parking events \(low + 1)…\(head.sequence), which \(leader) does not have")
        if let parked = try await store.truncate(after: low, parkingIn: config.parkDirectory) {
            state.withLock { $0.parked += parked.count }
            logger.warning("parked the events the leader lacks", metadata: [
                "events": "\(parked.first)…\(parked.last)", "file": "\(parked.file.path)",
            ])
        }
    }

    private func leaderPosition(_ sequence: UInt64, _ client: Client) async throws -> LogPosition? {
        if sequence == 0 { return .start }
        let position = try await client.call(
            .getLogPosition, Chordstore_V1_LogPositionRequest.with { $0.sequence = sequence }, timeout: .seconds(5), as: Chordstore_V1_LogPosition.self)
        return position.found ? LogPosition(sequence: position.sequence, epoch: position.epoch, checksum: position.checksum) : nil
    }
}
