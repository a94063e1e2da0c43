import ChordStoreRecords
import ChordStoreDomain
import LMDB

/// The records of the whole log by position, for a store whose state is in memory
/// (``InMemoryStoreSnapshot``, ``LiveLog``): the in-memory backend's array, or a
/// transaction of the LMDB log.
protocol RecordLookup {
    /// Calls `body` with the record at `logSequence` (the buffer is valid only during the
    /// call); `nil` if the log holds none there.
    func withRecord<T>(at logSequence: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T?
}

extension RecordLookup {
    /// The stored checksum of the record at `logSequence` (0 for position 0, before the
    /// first record); `dataLoss` if the log holds no record there.
    func checksum(at logSequence: UInt64) throws -> UInt64 {
        guard logSequence > 0 else { return 0 }
        guard let checksum = try storedChecksum(at: logSequence) else {
            throw ChordStoreError(.dataLoss, "the log holds no event \(logSequence), which a store's index names")
        }
        return checksum
    }

    /// The stored checksum of the record at `logSequence` (0 for a record that holds
    /// none), or `nil` if the log holds no record there.
    func storedChecksum(at logSequence: UInt64) throws -> UInt64? {
        try withRecord(at: logSequence) { RecordCodec.storedChecksum($0) ?? 0 }
    }
}

extension Array: RecordLookup where Element == [UInt8] {
    func withRecord<T>(at logSequence: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        guard logSequence >= 1, logSequence <= UInt64(count) else { return nil }
        return try self[Int(logSequence - 1)].withUnsafeBytes(body)
    }
}

/// The log's records as one transaction of the LMDB log sees them (a write transaction
/// sees its own appends).
struct LogTransactionRecords: RecordLookup {
    let txn: Transaction
    let log: Database

    func withRecord<T>(at logSequence: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        guard let record = try KeyBytes.sequence(logSequence).withViewBytes({ try txn.get(log, key: $0) }) else { return nil }
        return try body(record)
    }
}

/// The log's records through a read transaction begun at the first lookup
/// (``LazyReadTransaction``): a read of the live state that needs no record (a point
/// read) opens no transaction of the log.
///
/// The transaction begins after the state was read, so the log holds every event the
/// state reflects unless it was cut back meanwhile (a follower taking a new leader's log):
/// at its start the transaction checks that the log's record at the state's head is the
/// one the state has (`UNAVAILABLE`, to be tried again, if not).
struct LazyLogRecords: RecordLookup {
    let lazy: LazyReadTransaction
    let log: Database
    /// The last event the state read reflects.
    let head: LogHead

    func withRecord<T>(at logSequence: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        let begins = !lazy.isBegun
        let records = LogTransactionRecords(txn: try lazy.transaction(), log: log)
        if begins, head.sequence > 0 {
            guard try records.storedChecksum(at: head.sequence) == head.checksum else {
                throw ChordStoreError(.unavailable, "the log was cut back while this read ran (event \(head.sequence) is no longer the one read); try again")
            }
        }
        return try records.withRecord(at: logSequence, body)
    }
}
