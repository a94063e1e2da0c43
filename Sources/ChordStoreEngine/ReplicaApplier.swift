import ChordStoreRecords
import ChordStoreDomain

/// Applies records copied from a leader's log: the follower's half of the append-entries
/// check. A batch is taken only whole, and only if
/// - it follows this log's last record (`previous` equals the head: same sequence
///   number, epoch and checksum), else `failedPrecondition` "diverged";
/// - each record is the next sequence number and its checksum chains to the record
///   before it (a changed byte anywhere fails), else `dataLoss`;
/// - epochs never go down along the log;
/// - each is the next event of a live store, or a valid creation or deletion of one.
///
/// Each record is stored byte for byte (same sequence number, epoch and checksum as on
/// the leader) and folded into the projections like a local commit. A thrown error
/// means the backend must discard the whole batch.
enum ReplicaApplier {
    static func apply(_ records: [[UInt8]], after previous: LogPosition, to space: inout some StoreSpace) throws {
        guard previous == space.logHead.position else {
            throw ChordStoreError.diverged("the batch follows \(previous), but this log's last is \(space.logHead.position)")
        }
        for record in records {
            let head = space.logHead
            let sequence = try head.nextSequence()
            let recorded = try record.withUnsafeBytes { bytes throws(ChordStoreError) -> RecordedEvent in
                let checksum = try RecordCodec.verify(bytes, sequence: sequence, previousChecksum: head.checksum)
                var recorded = try RecordCodec.decode(bytes, sequence: sequence)
                recorded.checksum = checksum
                return recorded
            }
            guard recorded.epoch <= LogPosition.maxEpoch else {
                throw ChordStoreError(.dataLoss, "event \(sequence) has epoch \(recorded.epoch), above the largest possible epoch")
            }
            guard recorded.epoch >= head.epoch else {
                throw ChordStoreError(
                    .dataLoss, "event \(sequence) has epoch \(recorded.epoch), below the epoch \(head.epoch) of the event before it")
            }
            try space.appendRecord(sequence, record)
            try StoreFold.apply(ReplayFields(recorded), record: record, to: &space)
            space.logHead = LogHead(sequence: sequence, checksum: recorded.checksum, timestamp: recorded.timestamp, epoch: recorded.epoch)
        }
    }
}
