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

/// Checks a snapshot: every record's sequence (no gap), checksum chain and decoding, and a
/// replay of the whole log into a fresh in-memory state (``LogReplay``; an event the
/// state cannot take, such as an edit of a missing chordset, is reported at its sequence
/// number); then the invariants of the live views and the replayed state against them.
enum Verifier {
    static func verify(_ snapshot: any StoreSnapshot, backend: any StorageBackend, progress: (UInt64, UInt64) -> Void) throws -> VerifyReport {
        let head = try snapshot.head
        let chordsets = try snapshot.chordsetCount()
        let replay: LogReplay.Result
        do {
            replay = try LogReplay.replay(backend, through: head.sequence, expectedChordsets: chordsets, progress: progress)
        } catch {
            return VerifyReport(events: error.replayed, problem: error.error, sequence: error.sequence)
        }
        progress(head.sequence, head.sequence)
        do {
            try Invariants.check(snapshot)
            let live = try StateSnapshot(of: snapshot)
            let replayed = try StateSnapshot(of: replay.state)
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
            let byTitle = try snapshot.chordsets(order: .title, limit: nil).map(\.id)
            guard byTitle == ChordsetSorting.sortedByTitle(replayed.chordsets).map(\.id) else {
                throw ChordStoreError(.dataLoss, "the title index lists \(byTitle.count) chordsets in another order than a replay")
            }
            for command in replay.commands where try snapshot.sequence(forCommand: command.id) != command.sequence {
                throw ChordStoreError(.dataLoss, "the command index does not map command id \(command.id) to event \(command.sequence)")
            }
            let changes = try snapshot.changesDump()
            if let difference = replay.changes.firstDifference(from: changes) {
                throw ChordStoreError(
                    .dataLoss, "the undo stacks, revisions or histories differ from a replay of the log: \(difference)")
            }
            for (sequence, expected) in replay.state.allDeletedChordsets where try snapshot.deletedChordsets(at: sequence) != expected {
                throw ChordStoreError(.dataLoss, "the chordsets kept for the delete-all at event \(sequence) differ from a replay")
            }
            let kept = try snapshot.deletedChordsetsCount()
            let expectedKept = replay.state.allDeletedChordsets.values.reduce(0) { $0 + $1.count }
            guard kept == expectedKept else {
                throw ChordStoreError(.dataLoss, "the store keeps \(kept) chordsets removed by delete-alls; a replay keeps \(expectedKept)")
            }
            let indexed = try snapshot.commandCount()
            guard indexed == Set(replay.commands.map(\.id)).count else {
                throw ChordStoreError(.dataLoss, "the command index holds \(indexed) ids; the log has \(replay.commands.count)")
            }
        } catch {
            return VerifyReport(events: head.sequence, problem: ChordStoreError.wrapping(error), sequence: nil)
        }
        return checkTail(after: head, of: backend, replayed: replay)
    }

    /// The records the log holds past the views' last event (a commit in flight, or
    /// events the views could not take) must pass a replica's checks (``ReplicaApplier``:
    /// sequence, chain, decoding, epochs) and fold onto the replayed state.
    private static func checkTail(after head: LogHead, of backend: any StorageBackend, replayed replay: LogReplay.Result) -> VerifyReport {
        var state = replay.state
        var changes = replay.changes
        var discarded = InMemoryLog()
        var last = head
        do {
            var records: [[UInt8]] = []
            try backend.forEachLogRecord(from: head.sequence + 1) { _, record in
                records.append(Array(record))
                return true
            }
            try ReplicaApplier.apply(records, after: head.position, to: &state, changes: &changes, log: &discarded, head: &last)
        } catch {
            return VerifyReport(events: last.sequence, problem: ChordStoreError.wrapping(error), sequence: last.sequence + 1)
        }
        return VerifyReport(events: last.sequence, problem: nil, sequence: nil)
    }
}
