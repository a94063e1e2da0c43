import ChordStoreRecords
import ChordStoreDomain

/// A store's log in the LMDB backend's live state: its index into the whole log and its
/// command ids in memory (``InMemoryLog``, without records), its records read from the
/// log's transaction.
struct LiveLog<Records: RecordLookup>: LogAppending {
    var log: InMemoryLog
    let store: UInt32
    let records: Records

    func change(at sequence: UInt64) throws -> Change? {
        try log.event(at: sequence, of: store, records: records)?.change
    }

    func event(forCommand commandID: String) throws -> RecordedEvent? {
        guard let sequence = log.sequence(forCommand: commandID) else { return nil }
        return try log.event(at: sequence, of: store, records: records)
    }

    mutating func append(_ sequence: UInt64, logSequence: UInt64, _ record: [UInt8], commandID: String) {
        log.append(sequence, logSequence: logSequence, record, commandID: commandID)
    }
}

extension InMemoryLog {
    /// The store's event `sequence`, read from `records` at the position this index gives
    /// it; `nil` past the store's last event. A record missing from the log, or one that is
    /// not that event, is `dataLoss`.
    func event(at sequence: UInt64, of store: UInt32, records: some RecordLookup) throws -> RecordedEvent? {
        guard sequence >= 1, sequence <= UInt64(logSequences.count) else { return nil }
        let logSequence = logSequences[Int(sequence - 1)]
        let recorded = try records.withRecord(at: logSequence) { record in
            try RecordCodec.decode(record, sequence: sequence, store: store, logSequence: logSequence)
        }
        guard let recorded else {
            throw ChordStoreError(.dataLoss, "the store index names log event \(logSequence), which the log does not hold")
        }
        return recorded
    }
}
