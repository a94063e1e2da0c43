package import ChordStoreRecords
package import ChordStoreDomain
package import Foundation
import ChordStoreProto
import SwiftProtobuf
import Synchronization

/// What a replicated store needs of its engine: its log position, copying a leader's
/// records, the epoch, refusing writes on a follower, and cutting a divergent suffix.
/// The protocol around it lives in the replication module.
extension ChordStore {
    /// The epoch new records get: raised by promotion, or by following a newer leader.
    package var epoch: UInt64 { writer.currentEpoch }

    /// Whether the store accepts commands (`false` on a follower: they fail with
    /// `failedPrecondition`, in the writer, so no batch straddles the change).
    package var acceptsCommands: Bool {
        get { writer.acceptsCommands }
        set { writer.acceptsCommands = newValue }
    }

    /// The moment from which commands are refused, and commits that end later are not
    /// acknowledged (a coordinated leader's lease end); `nil`: none.
    package var writeDeadline: ContinuousClock.Instant? {
        get { writer.deadline.instant }
        set { writer.deadline.set(newValue) }
    }

    /// Returns once the writer is between batches: a commit in flight when this is called
    /// has ended (and its events are in the log).
    package func waitForWriter() async throws(ChordStoreError) {
        try await writer.exclusive { Result<Void, ChordStoreError>.success(()) }.get()
    }

    /// Persists `epoch` as this store's epoch if it is higher than the current one;
    /// returns the epoch in force afterwards. With `leader`, the epoch goes to that
    /// leader (a `Fence` granted it, or this node took it): the grant is persisted with
    /// it (also when the epoch is already the current one), so that a restarted node
    /// still refuses the epoch to another leader (``epochGrant()``). Refused with
    /// `failedPrecondition` when the grant kept is of a newer epoch, or of this one to
    /// another leader; an epoch above ``LogPosition/maxEpoch`` with `invalidArgument`.
    @discardableResult
    package func adoptEpoch(_ epoch: UInt64, grantedTo leader: String? = nil) async throws(ChordStoreError) -> UInt64 {
        try LogPosition.checkEpoch(epoch)
        let backend = self.backend
        let writer = self.writer
        let grant = leader.map { EpochGrant(epoch: epoch, leader: $0) }
        return try await writer.exclusive { () -> Result<UInt64, ChordStoreError> in
            Result { () throws(ChordStoreError) -> UInt64 in
                let current = writer.currentEpoch
                var newGrant: EpochGrant?
                if let grant, epoch >= current {
                    let kept = try backend.storedGrant()
                    if let kept, kept.epoch > grant.epoch || (kept.epoch == grant.epoch && kept.leader != grant.leader) {
                        throw ChordStoreError(
                            .failedPrecondition,
                            "epoch \(kept.epoch) was already granted to \(kept.leader): epoch \(grant.epoch) cannot go to \(grant.leader)")
                    }
                    if kept != grant { newGrant = grant }
                }
                guard epoch > current || newGrant != nil else { return current }
                let adopted = max(epoch, current)
                try backend.storeEpoch(adopted, grant: newGrant)
                writer.setEpoch(adopted)
                return adopted
            }
        }.get()
    }

    /// The last epoch that went to a leader, persisted by ``adoptEpoch(_:grantedTo:)``;
    /// `nil` if none did (or only before 2026-11-29). Throws if it cannot be read.
    package func epochGrant() throws(ChordStoreError) -> EpochGrant? { try backend.storedGrant() }

    /// The log's last record as a position (on a follower, the views may not have folded
    /// it yet).
    package func head() throws(ChordStoreError) -> LogPosition {
        try backend.logHead().position
    }

    /// The record at log position `sequence` as a position (`.start` for 0), or `nil`
    /// past the log's end.
    package func position(at sequence: UInt64) throws(ChordStoreError) -> LogPosition? {
        let backend = self.backend
        do {
            guard sequence <= (try backend.logHead().sequence) else { return nil }
            return try Self.position(at: sequence, in: backend)
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    static func position(at sequence: UInt64, in backend: any StorageBackend) throws -> LogPosition? {
        if sequence == 0 { return .start }
        var found: LogPosition?
        try backend.forEachLogRecord(from: sequence) { stored, record in
            guard stored == sequence else { return false }
            found = try RecordCodec.position(record, sequence: stored)
            return false
        }
        return found
    }

    /// How many times the log was cut back (a follower parking a divergent suffix). A
    /// reader that saw it change may have read events the log no longer holds.
    package var logCuts: Int { cuts.load(ordering: .acquiring) }

    /// Appends `records`, copied byte for byte from a leader's log, after `previous`, in
    /// one durable commit of the log on the writer thread, and returns the new last
    /// position as soon as the log holds them: the views fold them next, before the writer
    /// takes another job, and reads see them once they are published
    /// (``waitForCommit(after:timeout:)``, a read's `min_sequence`). Refused whole
    /// (nothing written) with `failedPrecondition` ("diverged") if `previous` is not this
    /// log's last record, or `dataLoss` if a record does not chain to the one before it
    /// (tampered, reordered or from another log).
    ///
    /// With `leaderEpoch`, the batch is refused (`failedPrecondition`, reason
    /// `OLDER_LEADER`) if this store's epoch rose above it meanwhile: checked in
    /// the writer, so a fence that lands while the batch waits keeps it out.
    @discardableResult
    package func appendReplicated(_ records: [[UInt8]], after previous: LogPosition, leaderEpoch: UInt64? = nil) async throws(ChordStoreError) -> LogPosition {
        let backend = self.backend
        let writer = self.writer
        let notifier = self.notifier
        let head = try await writer.exclusive(answering: { (answer: (Result<LogHead, ChordStoreError>) -> Void) in
            if let leaderEpoch, leaderEpoch < writer.currentEpoch {
                answer(.failure(ChordStoreError(
                    .failedPrecondition, "a batch of an older leader: its epoch \(leaderEpoch) is older than this node's (\(writer.currentEpoch))",
                    reason: .olderLeader)))
                return
            }
            let head: LogHead
            do throws(ChordStoreError) {
                head = try backend.appendReplicated(records, after: previous) { logged in answer(.success(logged)) }
            } catch {
                answer(.failure(error))
                return
            }
            // Readers wake and read the views, which hold the batch now, unless its fold
            // failed (the views' fault then refuses every further batch).
            if records.contains(where: { $0.withUnsafeBytes { WireCodec.holdsServerEvent($0) } }) { notifier.serverChanged() }
            notifier.published(head.sequence)
        }).get()
        return head.position
    }

    /// Cuts the log back to `sequence`, first writing the records after it to a file in
    /// `directory` (never dropping them silently), then rebuilds the views from the
    /// remaining log (with live state, the state in memory instead: the views are brought
    /// up when read). For a former leader whose last events the new leader never had.
    /// Returns the file and how many records it holds (`nil` if none were after `sequence`).
    package func truncate(after sequence: UInt64, parkingIn directory: URL) async throws(ChordStoreError) -> ParkedSuffix? {
        let backend = self.backend
        let result = try await writer.exclusive { () -> Result<(ParkedSuffix?, LogHead), ChordStoreError> in
            Result { () throws(ChordStoreError) in
                let parked = try ParkedSuffix.write(from: backend, after: sequence, into: directory)
                guard parked != nil else {
                    return (nil, try backend.logHead())
                }
                return (parked, try backend.truncate(after: sequence))
            }
        }.get()
        timeTravel.forget()
        if result.0 != nil { cuts.add(1, ordering: .releasing) }
        notifier.serverChanged()
        notifier.rewound(to: result.1.sequence)
        return result.0
    }
}

/// Records moved out of the log by ``ChordStore/truncate(after:parkingIn:)``: one JSON
/// object per line, each the record's protobuf JSON (`envelope`) and its exact stored
/// bytes (`record`, base64), so an operator can read them and re-apply what matters.
package struct ParkedSuffix: Sendable, Hashable {
    /// The file written.
    package var file: URL
    /// The first and last sequence numbers parked.
    package var first: UInt64, last: UInt64

    /// How many records were parked.
    package var count: UInt64 { last - first + 1 }

    static func write(from backend: any StorageBackend, after sequence: UInt64, into directory: URL) throws(ChordStoreError) -> ParkedSuffix? {
        var lines = Data()
        var first: UInt64?
        var last: UInt64 = 0
        var epoch: UInt64 = 0
        do {
            try backend.forEachLogRecord(from: sequence + 1) { stored, record in
                let envelope = try RecordCodec.envelope(record, sequence: stored)
                let json = try envelope.jsonString()
                lines.append(contentsOf: Array("{\"sequence\":\(stored),\"envelope\":\(json),\"record\":\"\(Data(record).base64EncodedString())\"}\n".utf8))
                first = first ?? stored
                last = stored
                epoch = envelope.epoch
                return true
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        guard let first else { return nil }
        let file = directory.appendingPathComponent("parked-epoch\(epoch)-events\(first)-\(last)-\(Int(Date().timeIntervalSince1970)).jsonl")
        do {
            try PrivateDirectory.create(directory)
            let handle = try FileHandle(forWritingTo: Self.created(file))
            defer { try? handle.close() }
            try handle.write(contentsOf: lines)
            try handle.synchronize()
        } catch {
            throw ChordStoreError(.unavailable, "cannot park events \(first)…\(last) in \(file.path): \(error)", cause: error)
        }
        return ParkedSuffix(file: file, first: first, last: last)
    }

    private static func created(_ file: URL) throws -> URL {
        guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw ChordStoreError(.unavailable, "cannot create \(file.path)")
        }
        return file
    }
}
