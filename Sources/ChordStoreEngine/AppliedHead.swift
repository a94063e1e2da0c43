import ChordStoreRecords
import ChordStoreDomain
import LMDB

/// The last event folded into the views, kept in the views environment's meta database
/// and written in every commit of the views: sequence, checksum, timestamp (microseconds)
/// and epoch, 8 bytes big-endian each. Comparing it with the log's record at that
/// sequence tells whether the views belong to this log.
enum AppliedHead {
    /// The views' last event; `.empty` for views that never folded one.
    static func read(_ txn: Transaction, _ dbs: StoreDatabases) throws -> LogHead {
        guard let bytes = try txn.get(dbs.meta, key: StoreDatabases.appliedKey) else { return .empty }
        guard bytes.count == 32 else {
            throw ChordStoreError(.dataLoss, "the views' applied head is \(bytes.count) bytes; it should be 32")
        }
        func field(_ index: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        guard field(0) <= LogPosition.maxSequence else {
            throw ChordStoreError(.dataLoss, "the views' applied head names event \(field(0)), past the largest sequence number")
        }
        return LogHead(
            sequence: field(0), checksum: field(1), timestamp: Instant(microsecondsSince1970: Int64(bitPattern: field(2))),
            epoch: field(3))
    }

    /// Records `head` as the views' last event.
    static func write(_ head: LogHead, _ txn: Transaction, _ dbs: StoreDatabases) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for value in [head.sequence, head.checksum, UInt64(bitPattern: head.timestamp.microsecondsSince1970), head.epoch] {
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }
        try txn.put(dbs.meta, key: StoreDatabases.appliedKey, value: bytes)
    }
}
