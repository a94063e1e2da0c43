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
    private let grant = Mutex<EpochGrant?>(nil)

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout IncreasingIDs) -> [Result<CommittedEvent, ChordStoreError>] {
        do {
            // A thrown error (a path only a bug can take) discards the writer's copy, as
            // an aborted LMDB transaction would: nothing of the batch is published.
            return try storage.write { set in
                let start = set.logHead
                let results = try applier.apply(batch, to: &set, now: .now, generator: &generator)
                return (results, StoreSet.replayOfCommit(results, after: start, head: set.logHead))
            }
        } catch {
            let failure = ChordStoreError.wrapping(error)
            return batch.map { _ in .failure(failure) }
        }
    }

    func withStores<T>(_ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if closed.load(ordering: .relaxed) { throw ChordStoreError(.unavailable, "the store is closed") }
        do {
            return try storage.read { set in try body(InMemoryStores(all: set, records: set.records)) }
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

    func storedGrant() -> EpochGrant? { grant.withLock { $0 } }

    func storeEpoch(_ epoch: UInt64, grant: EpochGrant?) {
        self.epoch.store(epoch, ordering: .relaxed)
        if let grant { self.grant.withLock { $0 = grant } }
    }

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

/// Every store whose state is in memory, at one commit: an in-memory backend's (its
/// records in the set), or the LMDB backend's live state (its records in a read
/// transaction of the log).
///
/// A store evicted from memory (``StoreSet/evict(_:)``) is folded from the log's records
/// for the read, and left with `residency` to be put back in memory; or, for a read that
/// can run again, met (``EvictedStoreReading``).
struct InMemoryStores<Records: RecordLookup>: StoresSnapshot {
    let all: StoreSet
    let records: Records
    /// Where uses of stores are noted and readers' loads left (`nil`: not tracked, as in
    /// the in-memory backend, which evicts nothing).
    var residency: StateResidency? = nil
    /// What a read does with an evicted store.
    var evicted: EvictedStoreReading = .foldInRead

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
        residency?.used(store.id)
        guard stored.evicted != nil else { return InMemoryStoreSnapshot(store: stored, records: records) }
        if case .throwUnlessFolded(let folded) = evicted {
            guard let folded, folded.isFold(of: stored, generation: all.generation) else {
                throw EvictedStoreMet(store: stored, generation: all.generation)
            }
            return InMemoryStoreSnapshot(store: folded.store, records: records)
        }
        let resident = try stored.resident(records: records)
        residency?.loaded(resident, generation: all.generation)
        return InMemoryStoreSnapshot(store: resident, records: records)
    }
    func counts(of store: StoreRecord) throws -> StoreCounts {
        guard let stored = all[store.id] else { throw ChordStoreError(.notFound, "there is no store named \(store.name)", reason: .storeNotFound) }
        return stored.evicted ?? StoreCounts(chordsets: stored.state.chordsetCount(), chords: stored.state.chordCount())
    }
}

/// One store whose state is in memory, at one commit: an in-memory backend's, or the
/// live state of the LMDB backend (``LMDBBackend/withLiveStores(_:_:)``), with the whole
/// log's records.
struct InMemoryStoreSnapshot<Records: RecordLookup>: StoreSnapshot {
    let store: StoreSet.Store
    /// The whole log (the store's records, and the checksum of the record before each).
    let records: Records

    private var state: InMemoryState { store.state }
    private var changes: InMemoryChanges { store.changes }

    func headChecksum() throws -> UInt64 {
        try records.checksum(at: store.record.head == 0 ? 0 : store.log.logSequences[Int(store.record.head - 1)])
    }
    var record: StoreRecord { store.record }

    func chordset(_ id: UUID) -> Chordset? { state.chordset(id) }
    func chordLocation(_ id: UUID) -> ChordLocation? { state.chordLocation(id) }
    func holdsChordID(derivedFrom chordset: UUID) -> Bool { state.holdsChordID(derivedFrom: chordset) }
    func controlsChord() -> Chord? { state.controlsChord() }
    func chordsetCount() -> Int { state.chordsetCount() }
    func chordCount() -> Int { state.chordCount() }
    func chordsetID(atIndex index: Int) -> UUID? { state.chordsetID(atIndex: index) }
    func deletedChordsets(at sequence: UInt64) -> [Chordset]? { state.deletedChordsets(at: sequence) }
    func change(at sequence: UInt64) throws -> Change? {
        try store.log.event(at: sequence, of: store.record.id, records: records)?.change
    }
    func history(chordset: UUID, after: UInt64, limit: Int) -> [UInt64] {
        Array((changes.chordsetTable[IDKey(chordset)]?.history ?? []).lazy.filter { $0 > after }.prefix(limit))
    }
    func history(session: String, after: UInt64, limit: Int) -> [UInt64] {
        Array((changes.sessionHistory[session] ?? []).lazy.filter { $0 > after }.prefix(limit))
    }
    func changesDump() -> InMemoryChanges { changes }

    func scan(
        _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        // Sorted once per change of the chordsets' headers (kept in the state's memo): the
        // live state answers lists of large stores from here.
        try InMemoryIndex.of(state, order: order).scan(in: state, descending: descending, after: cursor, from: start, body)
    }
    func deletedChordsetsCount() -> Int { state.allDeletedChordsets.values.reduce(0) { $0 + $1.count } }
    func revision(_ key: RevisionKey) -> Revision? { changes.revision(key) }
    func undoTop(_ session: String) -> UInt64? { changes.undoTop(session) }
    func redoTop(_ session: String) -> UInt64? { changes.redoTop(session) }
    func redoDepth(_ session: String, atMost limit: Int) -> Int { changes.redoDepth(session, atMost: limit) }

    func sequence(forCommand commandID: String) -> UInt64? { store.log.sequence(forCommand: commandID) }
    func commandCount() -> Int { store.log.commandCount }
    func indexedChordCount() -> Int { state.chordIndexSize }

    func forEachChainedRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool) throws {
        var next = max(sequence, 1)
        let logSequences = store.log.logSequences
        while next <= UInt64(logSequences.count) {
            let logSequence = logSequences[Int(next - 1)]
            let previous = logSequence > 0 ? try records.checksum(at: logSequence - 1) : 0
            let keepGoing = try records.withRecord(at: logSequence) { record in
                try RecordCodec.checkStoreRecord(record, sequence: next, store: store.record.id, logSequence: logSequence, previousChecksum: previous)
                return try body(next, record, previous)
            }
            guard let keepGoing else {
                throw ChordStoreError(.dataLoss, "the store index names log event \(logSequence), which the log does not hold")
            }
            if !keepGoing { return }
            next += 1
        }
    }
}
