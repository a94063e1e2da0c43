import ChordStoreRecords
import ChordStoreDomain

/// Applies records copied from a leader's log: the follower's half of the append-entries
/// check. A batch is taken only whole, and only if
/// - it follows this log's last record (`previous` equals the head: same sequence
///   number, epoch and checksum), else `failedPrecondition` "diverged";
/// - each record is the next sequence number and its checksum chains to the record
///   before it (a changed byte anywhere fails), else `dataLoss`;
/// - epochs never go down along the log;
/// - each is the next event of a live store, or a valid creation or deletion of one
///   (checked by the fold: on the durable backend, after the log took the batch).
///
/// Each record is stored byte for byte (same sequence number, epoch and checksum as on
/// the leader) and folded into the projections like a local commit. A thrown error
/// means the backend must discard the whole batch. The durable backend checks and logs a
/// batch first (``appendToLog(_:after:head:_:)``), acknowledges it, then folds it: a
/// record whose fold fails there (one the leader's own fold took: an event this version
/// does not know, or a bug) leaves its views damaged, not the log unwritten.
enum ReplicaApplier {
    /// Refuses (`failedPrecondition`, "diverged") a batch that does not follow `head`.
    static func checkFollows(_ previous: LogPosition, _ head: LogHead) throws(ChordStoreError) {
        guard previous == head.position else {
            throw ChordStoreError.diverged("the batch follows \(previous), but this log's last is \(head.position)")
        }
    }

    static func apply(_ records: [[UInt8]], after previous: LogPosition, to space: inout some StoreSpace) throws {
        try checkFollows(previous, space.logHead)
        for record in records {
            let head = space.logHead
            let sequence = try head.nextSequence()
            let recorded = try record.withUnsafeBytes { bytes throws(ChordStoreError) -> RecordedEvent in
                let checksum = try RecordCodec.verify(bytes, sequence: sequence, previousChecksum: head.checksum)
                var recorded = try RecordCodec.decode(bytes, sequence: sequence)
                recorded.checksum = checksum
                return recorded
            }
            try checkEpoch(recorded.epoch, of: sequence, after: head)
            try space.appendRecord(sequence, record)
            try StoreFold.apply(ReplayFields(recorded), record: record, to: &space)
            space.logHead = LogHead(sequence: sequence, checksum: recorded.checksum, timestamp: recorded.timestamp, epoch: recorded.epoch)
        }
    }

    /// Folds records ``appendToLog(_:after:head:_:)`` has just checked and the log took,
    /// after `head` (a follower's batch, once acknowledged): their chain and epochs are not
    /// checked again (each record's checksum is read from its trailer, not computed), and
    /// only what the fold needs is decoded.
    static func foldLogged(_ records: [[UInt8]], after head: LogHead, to space: inout some StoreSpace) throws {
        try foldLogged(decodeLogged(records, after: head), after: head, to: &space)
    }

    /// Decodes records ``appendToLog(_:after:head:_:)`` has just checked and the log took,
    /// after `head`, for the fold of ``LoggedRecord``s (once, for both copies of
    /// the live state): what the fold needs of each, and its place.
    static func decodeLogged(_ records: [[UInt8]], after head: LogHead) throws -> [LoggedRecord] {
        var sequence = head.sequence
        return try records.map { record in
            sequence += 1  // the log took it as the next: no overflow
            let fields = try record.withUnsafeBytes { try RecordCodec.decodeReplayFields($0, sequence: sequence) }
            guard fields.logSequence == sequence else {
                throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) says it is event \(fields.logSequence)")
            }
            let position = try record.withUnsafeBytes { try RecordCodec.position($0, sequence: sequence) }
            return LoggedRecord(fields: fields, record: record, checksum: position.checksum, epoch: position.epoch)
        }
    }

    /// Folds records ``decodeLogged(_:after:)`` decoded, after `head`.
    static func foldLogged(_ logged: [LoggedRecord], after head: LogHead, to space: inout some StoreSpace) throws {
        try checkFollows(head.position, space.logHead)
        for entry in logged {
            let sequence = entry.fields.logSequence
            try space.appendRecord(sequence, entry.record)
            try StoreFold.apply(entry.fields, record: entry.record, to: &space)
            space.logHead = LogHead(sequence: sequence, checksum: entry.checksum, timestamp: entry.fields.timestamp, epoch: entry.epoch)
        }
    }

    /// A record the log took, decoded for the fold (``decodeLogged(_:after:)``).
    struct LoggedRecord: Sendable {
        /// What the fold takes of the record.
        let fields: ReplayFields
        /// The record as the log holds it.
        let record: [UInt8]
        /// The record's checksum and epoch, read from its trailer.
        let checksum: UInt64
        let epoch: UInt64
    }

    /// The log's half of the check, for a follower that logs a batch before its views take
    /// it: `previous` is `head`, and each record is the next sequence number, chains to the
    /// one before it and keeps the epochs from going down. Calls `store` with each record
    /// in turn (the backend's append) and returns the batch's last position. Reads only
    /// each record's place, epoch and timestamp (skipping over the event) and its trailer:
    /// the fold that follows decodes the event.
    static func appendToLog(
        _ records: [[UInt8]], after previous: LogPosition, head: LogHead, _ store: (UInt64, [UInt8]) throws -> Void
    ) throws -> LogHead {
        try checkFollows(previous, head)
        var head = head
        for record in records {
            let sequence = try head.nextSequence()
            let next = try record.withUnsafeBytes { bytes throws(ChordStoreError) -> LogHead in
                let checksum = try RecordCodec.verify(bytes, sequence: sequence, previousChecksum: head.checksum)
                let fields = try RecordCodec.logFields(bytes, sequence: sequence)
                return LogHead(sequence: sequence, checksum: checksum, timestamp: fields.timestamp, epoch: fields.epoch)
            }
            try checkEpoch(next.epoch, of: sequence, after: head)
            try store(sequence, record)
            head = next
        }
        return head
    }

    private static func checkEpoch(_ epoch: UInt64, of sequence: UInt64, after head: LogHead) throws(ChordStoreError) {
        guard epoch <= LogPosition.maxEpoch else {
            throw ChordStoreError(.dataLoss, "event \(sequence) has epoch \(epoch), above the largest possible epoch")
        }
        guard epoch >= head.epoch else {
            throw ChordStoreError(.dataLoss, "event \(sequence) has epoch \(epoch), below the epoch \(head.epoch) of the event before it")
        }
    }
}
