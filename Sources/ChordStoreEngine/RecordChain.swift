import ChordStoreDomain

/// Checks log records as they are read, in order: each must be the next sequence number
/// and its checksum must chain to the one before it. Every path that hands records to a
/// client (`ReadLog`, the change feed, replication, history, reads of the past) reads
/// through it, so a damaged record ends the read with `DATA_LOSS` naming its sequence
/// number instead of being served.
struct RecordChain {
    /// The sequence number the next record must have.
    private(set) var expected: UInt64
    /// The stored checksum of the record before it.
    private(set) var previousChecksum: UInt64

    /// A chain whose next record is `sequence`, chained to `previousChecksum`.
    init(expecting sequence: UInt64, previousChecksum: UInt64) {
        self.expected = sequence
        self.previousChecksum = previousChecksum
    }

    /// Checks the next record; throws `dataLoss` naming the record (never its bytes).
    mutating func check(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) {
        guard sequence == expected else { throw Self.gap(before: expected, next: sequence) }
        previousChecksum = try RecordCodec.verify(record, sequence: sequence, previousChecksum: previousChecksum)
        expected = sequence &+ 1
    }

    /// The record `missing` is not in the log; `next` is the one found in its place.
    private static func gap(before missing: UInt64, next: UInt64) -> ChordStoreError {
        ChordStoreError(.dataLoss, "the log jumps from event \(missing &- 1) to \(next): event \(missing) is missing")
    }

    /// Calls `body` with each record that `records` yields from `sequence` on, checked,
    /// until it returns `false`. The record before `sequence` is read first for its
    /// checksum (the chain's seed), but not passed on.
    static func forEach(
        in records: some RecordSource, from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let start = max(sequence, 1)
        var chain: RecordChain?
        if start == 1 { chain = RecordChain(expecting: 1, previousChecksum: 0) }
        try records.forEachRecord(from: start - 1) { found, record in
            guard var current = chain else {
                // The seed: the record before `start`. A later one means it is missing.
                guard found == start - 1 else { throw Self.gap(before: start - 1, next: found) }
                guard let checksum = RecordCodec.storedChecksum(record) else {
                    throw ChordStoreError(.dataLoss, "event \(found) is damaged: it does not end with its checksum field")
                }
                chain = RecordChain(expecting: start, previousChecksum: checksum)
                return true
            }
            try current.check(record, sequence: found)
            chain = current
            return try body(found, record)
        }
    }
}
