import ChordStoreDomain
import ChordStoreRecords

extension RecordChain {
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
