import ChordStoreRecords
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
    static func verify(_ stores: any StoresSnapshot, backend: any StorageBackend, progress: (UInt64, UInt64) -> Void) throws -> VerifyReport {
        let head = try stores.logHead
        var replay: StoreSet
        do {
            replay = try LogReplay.replay(backend, through: head.sequence, progress: progress)
        } catch {
            return VerifyReport(events: error.replayed, problem: error.error, sequence: error.sequence)
        }
        progress(head.sequence, head.sequence)
        do {
            let live = try stores.stores(after: nil, limit: .max)
            let expected = replay.liveStores.map(\.record)
            guard live == expected else {
                let names = { (records: [StoreRecord]) in records.map { "\($0.name)#\($0.id)@\($0.head)" }.joined(separator: ", ") }
                throw ChordStoreError(
                    .dataLoss, "the registry of stores (\(names(Array(live.prefix(5))))…) differs from a replay (\(names(Array(expected.prefix(5))))…)")
            }
            let lastID = try stores.lastStoreID()
            guard lastID == replay.lastID else {
                throw ChordStoreError(.dataLoss, "the views say store id \(lastID) was the last given; a replay says \(replay.lastID)")
            }
            let tokens = try stores.tokens()
            let replayedTokens = replay.tokens.values.sorted { $0.grant.id < $1.grant.id }
            guard tokens == replayedTokens else {
                throw ChordStoreError(
                    .dataLoss, "the views hold \(tokens.count) tokens (\(tokens.prefix(5).map(\.grant.id).joined(separator: ", "))); a replay \(replayedTokens.count) (\(replayedTokens.prefix(5).map(\.grant.id).joined(separator: ", ")))")
            }
            for store in replay.liveStores {
                do {
                    // What a list of stores shows (kept apart for a store evicted from memory).
                    let counts = StoreCounts(chordsets: store.state.chordsetCount(), chords: store.state.chordCount())
                    guard try stores.counts(of: store.record) == counts else {
                        throw ChordStoreError(.dataLoss, "the list of stores counts \(try stores.counts(of: store.record)); a replay \(counts)")
                    }
                    try check(try stores.snapshot(of: store.record), against: store)
                } catch {
                    let wrapped = ChordStoreError.wrapping(error)
                    throw ChordStoreError(wrapped.code, "store \(store.record.name): \(wrapped.message)", cause: wrapped)
                }
            }
        } catch {
            return VerifyReport(events: head.sequence, problem: ChordStoreError.wrapping(error), sequence: nil)
        }
        replay.logHead = head
        return checkTail(after: head, of: backend, replayed: replay)
    }

    /// One store's views against its replay.
    private static func check(_ snapshot: any StoreSnapshot, against replay: StoreSet.Store) throws {
        try Invariants.check(snapshot)
        let indexedChords = try snapshot.indexedChordCount()
        guard indexedChords == replay.state.indexedChordCount else {
            throw ChordStoreError(
                .dataLoss, "the chord index holds \(indexedChords) chords; a replay indexes \(replay.state.indexedChordCount)")
        }
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
        for (id, sequence) in replay.log.commands where try snapshot.sequence(forCommand: id) != sequence {
            throw ChordStoreError(.dataLoss, "the command index does not map command id \(id) to event \(sequence)")
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
        guard indexed == replay.log.commandCount else {
            throw ChordStoreError(.dataLoss, "the command index holds \(indexed) ids; the log has \(replay.log.commandCount)")
        }
        // Every event of the store, through its index, each record checked where it lies.
        var events: UInt64 = 0
        try snapshot.forEachRecord(from: 1) { sequence, _ in
            events += 1
            guard sequence == events else { throw ChordStoreError(.dataLoss, "the store's index jumps from event \(events - 1) to \(sequence)") }
            return true
        }
        guard events == UInt64(replay.log.logSequences.count) else {
            throw ChordStoreError(.dataLoss, "the store's index holds \(events) events; a replay has \(replay.log.logSequences.count)")
        }
    }

    /// The records the log holds past the views' last event (a commit in flight, or
    /// events the views could not take) must pass a replica's checks (``ReplicaApplier``:
    /// sequence, chain, decoding, epochs, stores) and fold onto the replayed stores.
    private static func checkTail(after head: LogHead, of backend: any StorageBackend, replayed replay: StoreSet) -> VerifyReport {
        var set = replay
        do {
            var records: [[UInt8]] = []
            try backend.forEachLogRecord(from: head.sequence + 1) { _, record in
                records.append(Array(record))
                return true
            }
            try ReplicaApplier.apply(records, after: head.position, to: &set)
        } catch {
            return VerifyReport(events: set.logHead.sequence, problem: ChordStoreError.wrapping(error), sequence: set.logHead.sequence + 1)
        }
        return VerifyReport(events: set.logHead.sequence, problem: nil, sequence: nil)
    }
}
