public import ChordStoreDomain

/// What ``ChordStore/verify(progress:)`` found.
public struct VerifyReport: Sendable, Hashable {
    /// How many records were checked.
    public var events: UInt64
    /// The first problem found, or `nil` if the store is sound.
    public var problem: ChordStoreError?
    /// The sequence number of the record the problem was found at, if it is one record's.
    public var sequence: UInt64?

    /// Whether the store passed every check.
    public var isSound: Bool { problem == nil }
}

/// Checks a snapshot: every record's sequence (no gap), checksum chain and decoding; a
/// replay of the whole log into a fresh in-memory state (an event the state cannot take,
/// such as an edit of a missing chordset, is reported at its sequence number); then the
/// invariants of the live views and the replayed state against them.
enum Verifier {
    static func verify(_ snapshot: any StoreSnapshot, progress: (UInt64, UInt64) -> Void) throws -> VerifyReport {
        let head = try snapshot.head
        var state = InMemoryState(indexingChords: false)
        state.reserveCapacity(chordsets: try snapshot.chordsetCount())
        var expected: UInt64 = 1
        var previousChecksum: UInt64 = 0
        var problem: (ChordStoreError, UInt64?)?
        try snapshot.forEachRecord(from: 1) { sequence, record in
            do {
                guard sequence == expected else {
                    throw ChordStoreError(.dataLoss, "the log jumps from event \(expected - 1) to \(sequence)")
                }
                previousChecksum = try RecordCodec.verify(record, sequence: sequence, previousChecksum: previousChecksum)
                let recorded = try RecordCodec.decode(record, sequence: sequence)
                try Fold.apply(recorded.event, to: &state)
            } catch {
                problem = (ChordStoreError.wrapping(error), sequence)
                return false
            }
            if sequence % 65_536 == 0 { progress(sequence, head.sequence) }
            expected += 1
            return true
        }
        if let (error, sequence) = problem {
            return VerifyReport(events: expected - 1, problem: error, sequence: sequence)
        }
        progress(head.sequence, head.sequence)
        do {
            try Invariants.check(snapshot)
            let live = try StateSnapshot(of: snapshot)
            let replayed = try StateSnapshot(of: state)
            if let difference = replayed.firstDifference(from: live) {
                throw ChordStoreError(.dataLoss, "the views differ from a replay of the log: \(difference)")
            }
            let byCreation = try snapshot.chordsets(order: .creationDate, limit: nil).map(\.id)
            let expected = replayed.chordsets.sorted(by: ChordsetSorting.byCreation).map(\.id)
            guard byCreation == expected else {
                throw ChordStoreError(
                    .dataLoss,
                    "the creation-date index lists \(byCreation.count) chordsets in another order than a replay (\(expected.count))")
            }
        } catch {
            return VerifyReport(events: expected - 1, problem: ChordStoreError.wrapping(error), sequence: nil)
        }
        return VerifyReport(events: expected - 1, problem: nil, sequence: nil)
    }
}
