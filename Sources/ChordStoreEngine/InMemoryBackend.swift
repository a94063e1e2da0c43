import ChordStoreRecords
import ChordStoreDomain
import Foundation
import Synchronization

/// The in-memory backend, like Core Data's in-memory store: the same log records,
/// checksums and fold as the LMDB backend, kept in arrays and dictionaries
/// (``StoreSet``) and gone when the store is closed.
final class InMemoryBackend: StorageBackend {
    /// Readers read one copy while the writer changes the other (``LeftRight``): readers
    /// do not wait for the writer, and a commit changes what its batch changes, not a
    /// copy of every store.
    private let storage = LeftRight(StoreSet(keepsRecords: true))
    /// An in-memory store keeps no snapshots: reads of the past replay from the start.
    var snapshotFiles: SnapshotFiles? { nil }
    /// Memory has no full disk and no damaged records.
    var writeRefusal: ChordStoreError? { nil }
    var storageUsage: StorageUsage? { nil }
    private let closed = Atomic(false)
    private let epoch = Atomic<UInt64>(0)

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout IncreasingIDs) -> [Result<CommittedEvent, ChordStoreError>] {
        do {
            // A thrown error (a path only a bug can take) discards the writer's copy, as
            // an aborted LMDB transaction would: nothing of the batch is published.
            return try storage.write { set in
                var next = set.logHead.sequence + 1
                let results = try applier.apply(batch, to: &set, now: .now, generator: &generator)
                // What the batch appended, in order: a repeated command id is answered with
                // its original event, appended earlier (maybe earlier in this batch), not again.
                var committed: [CommittedEvent] = []
                for case .success(let event) in results where event.recorded.logSequence == next {
                    committed.append(event)
                    next += 1
                }
                let head = set.logHead
                return (results, { [committed] set in
                    for event in committed { try set.replay(event.recorded, record: event.record) }
                    set.logHead = head
                })
            }
        } catch {
            let failure = ChordStoreError.wrapping(error)
            return batch.map { _ in .failure(failure) }
        }
    }

    func withStores<T>(_ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if closed.load(ordering: .relaxed) { throw ChordStoreError(.unavailable, "the store is closed") }
        do {
            return try storage.read { set in try body(InMemoryStores(all: set)) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func rebuild(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        do {
            try storage.replace { set in
                let total = UInt64(set.records.count)
                let rebuilt = try StoreSet.replaying(set.records, keepsRecords: true)
                progress(total, total)
                return rebuilt
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func importEvents(_ events: [RecordedEvent], store name: String, epoch: UInt64, decider: Decider) throws(ChordStoreError) -> LogHead {
        do {
            // Whole or not at all, as in an aborted LMDB transaction.
            return try storage.write { set in
                let before = set.records.count
                let head = try ImportApplier.apply(events, store: name, epoch: epoch, decider: decider, to: &set)
                return (head, set.replayOfRecords(after: before))
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Memory has no views to fold after the log: `logged` is called once the batch is
    /// applied whole.
    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition, logged: (LogHead) -> Void) throws(ChordStoreError) -> LogHead {
        let head: LogHead
        do {
            // A batch that does not follow this log (a common refusal while following) is
            // refused before the writer's copy is touched, which would cost a copy.
            try ReplicaApplier.checkFollows(previous, storage.read { $0.logHead })
            // Applied whole or not at all, as in an aborted LMDB transaction.
            head = try storage.write { set in
                let before = set.records.count
                try ReplicaApplier.apply(records, after: previous, to: &set)
                return (set.logHead, set.replayOfRecords(after: before))
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        logged(head)
        return head
    }

    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead {
        do {
            try storage.replace { set in
                try StoreSet.replaying(Array(set.records.prefix(Int(clamping: sequence))), keepsRecords: true)
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        return storage.read { $0.logHead }
    }

    /// How many times the writer's copy of the state was remade instead of brought up
    /// to date in place (see ``LeftRight/fallbackCopies``).
    var stateCopies: Int { storage.fallbackCopies }

    func storedEpoch() -> UInt64 { epoch.load(ordering: .relaxed) }

    func storeEpoch(_ epoch: UInt64) { self.epoch.store(epoch, ordering: .relaxed) }

    func logHead() throws(ChordStoreError) -> LogHead { storage.read { $0.logHead } }

    func forEachLogRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        let records = storage.read { $0.records }
        var next = max(sequence, 1)
        while next <= UInt64(records.count) {
            guard try records[Int(next - 1)].withUnsafeBytes({ try body(next, $0) }) else { return }
            next += 1
        }
    }

    func close() {
        closed.store(true, ordering: .relaxed)
        storage.replace { _ in StoreSet(keepsRecords: true) }
    }
}

/// Every store of an in-memory backend at one commit.
private struct InMemoryStores: StoresSnapshot {
    let all: StoreSet

    var logHead: LogHead { all.logHead }
    func store(named name: String) -> StoreRecord? { all.store(named: name) }
    func storeCount() -> Int { all.storeCount() }
    func lastStoreID() -> UInt32 { all.lastStoreID() }
    func stores(after name: String?, limit: Int) -> [StoreRecord] {
        // `default` first, then the others by name (as the LMDB registry lists them).
        let all = all.liveStores.map(\.record)
        guard let name else { return Array(all.prefix(limit)) }
        let start = name == StoreName.default ? 1 : all.firstIndex { $0.id != 0 && $0.name > name } ?? all.count
        return Array(all[min(start, all.count)...].prefix(limit))
    }
    func tokens() -> [TokenRecord] { all.tokens.values.sorted { $0.grant.id < $1.grant.id } }
    func snapshot(of store: StoreRecord) throws -> any StoreSnapshot {
        guard let stored = all[store.id] else { throw ChordStoreError(.notFound, "there is no store named \(store.name)", reason: .storeNotFound) }
        return InMemoryStoreSnapshot(store: stored, records: all.records)
    }
}

/// One store of an in-memory backend at one commit.
struct InMemoryStoreSnapshot: StoreSnapshot {
    let store: StoreSet.Store
    /// The whole log (for the checksum of the record before each of the store's).
    let records: [[UInt8]]

    private var state: InMemoryState { store.state }
    private var changes: InMemoryChanges { store.changes }

    func headChecksum() -> UInt64 {
        let logSequence = store.record.head == 0 ? 0 : store.log.logSequences[Int(store.record.head - 1)]
        return logSequence == 0 ? 0 : records[Int(logSequence - 1)].withUnsafeBytes { RecordCodec.storedChecksum($0) ?? 0 }
    }
    var record: StoreRecord { store.record }

    func chordset(_ id: UUID) -> Chordset? { state.chordset(id) }
    func chordLocation(_ id: UUID) -> ChordLocation? { state.chordLocation(id) }
    func controlsChord() -> Chord? { state.controlsChord() }
    func chordsetCount() -> Int { state.chordsetCount() }
    func chordCount() -> Int { state.chordCount() }
    func chordsetID(atIndex index: Int) -> UUID? { state.chordsetID(atIndex: index) }
    func deletedChordsets(at sequence: UInt64) -> [Chordset]? { state.deletedChordsets(at: sequence) }
    func change(at sequence: UInt64) throws -> Change? { try store.log.change(at: sequence) }
    func history(chordset: UUID, after: UInt64, limit: Int) -> [UInt64] {
        Array((changes.chordsetHistoryTable[IDKey(chordset)] ?? []).lazy.filter { $0 > after }.prefix(limit))
    }
    func history(session: String, after: UInt64, limit: Int) -> [UInt64] {
        Array((changes.sessionHistory[session] ?? []).lazy.filter { $0 > after }.prefix(limit))
    }
    func changesDump() -> InMemoryChanges { changes }

    func scan(
        _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        // Sorted on each call: the in-memory engine is for tests and embedding, not for
        // large stores.
        try InMemoryIndex(state, order: order).scan(descending: descending, after: cursor, from: start, body)
    }
    func deletedChordsetsCount() -> Int { state.allDeletedChordsets.values.reduce(0) { $0 + $1.count } }
    func revision(_ key: RevisionKey) -> Revision? { changes.revision(key) }
    func undoTop(_ session: String) -> UInt64? { changes.undoTop(session) }
    func redoTop(_ session: String) -> UInt64? { changes.redoTop(session) }
    func redoDepth(_ session: String, atMost limit: Int) -> Int { changes.redoDepth(session, atMost: limit) }

    func sequence(forCommand commandID: String) -> UInt64? { store.log.sequence(forCommand: commandID) }
    func commandCount() -> Int { store.log.commandCount }
    func indexedChordCount() -> Int { state.chordCount() }

    func forEachChainedRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool) throws {
        var next = max(sequence, 1)
        let logSequences = store.log.logSequences
        while next <= UInt64(logSequences.count) {
            let logSequence = logSequences[Int(next - 1)]
            guard logSequence >= 1, logSequence <= UInt64(records.count) else {
                throw ChordStoreError(.dataLoss, "the store index names log event \(logSequence), which the log does not hold")
            }
            let previous = logSequence == 1 ? 0 : records[Int(logSequence - 2)].withUnsafeBytes { RecordCodec.storedChecksum($0) ?? 0 }
            let keepGoing = try records[Int(logSequence - 1)].withUnsafeBytes { record in
                try RecordCodec.checkStoreRecord(record, sequence: next, store: store.record.id, logSequence: logSequence, previousChecksum: previous)
                return try body(next, record, previous)
            }
            if !keepGoing { return }
            next += 1
        }
    }
}
