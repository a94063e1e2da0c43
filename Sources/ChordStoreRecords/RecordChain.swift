package import ChordStoreDomain

/// Checks log records as they are read, in order: each must be the next sequence number
/// and its checksum must chain to the one before it. Every path that hands records to a
/// client (`ReadLog`, the change feed, replication, history, reads of the past) reads
/// through it, so a damaged record ends the read with `DATA_LOSS` naming its sequence
/// number instead of being served.
package struct RecordChain {
    /// The sequence number the next record must have.
    package private(set) var expected: UInt64
    /// The stored checksum of the record before it.
    package private(set) var previousChecksum: UInt64

    /// A chain whose next record is `sequence`, chained to `previousChecksum`.
    package init(expecting sequence: UInt64, previousChecksum: UInt64) {
        self.expected = sequence
        self.previousChecksum = previousChecksum
    }

    /// Checks the next record; throws `dataLoss` naming the record (never its bytes).
    package mutating func check(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) {
        guard sequence == expected else { throw Self.gap(before: expected, next: sequence) }
        previousChecksum = try RecordCodec.verify(record, sequence: sequence, previousChecksum: previousChecksum)
        expected = sequence &+ 1
    }

    /// The record `missing` is not in the log; `next` is the one found in its place.
    package static func gap(before missing: UInt64, next: UInt64) -> ChordStoreError {
        ChordStoreError(.dataLoss, "the log jumps from event \(missing &- 1) to \(next): event \(missing) is missing")
    }
}
