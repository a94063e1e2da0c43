import ChordStoreRecords
import ChordStoreDomain
import Foundation

/// The position of the log's last record: what the next append chains to.
struct LogHead: Sendable, Hashable {
    var sequence: UInt64
    var checksum: UInt64
    var timestamp: Instant
    /// The epoch that wrote the last record (0 for an empty log).
    var epoch: UInt64 = 0

    static let empty = LogHead(sequence: 0, checksum: 0, timestamp: Instant(microsecondsSince1970: 0))

    /// The public form.
    var position: LogPosition { LogPosition(sequence: sequence, epoch: epoch, checksum: checksum) }

    /// The sequence number of the record after this one; `dataLoss` past
    /// ``LogPosition/maxSequence`` (only a damaged log gets there).
    func nextSequence() throws(ChordStoreError) -> UInt64 {
        guard sequence < LogPosition.maxSequence else {
            throw ChordStoreError(.dataLoss, "the log ends at event \(sequence), past the largest sequence number: it is damaged; run chordstore verify")
        }
        return sequence + 1
    }
}


/// Every store at one committed point of the log: the registry of stores and a snapshot
/// of each.
protocol StoresSnapshot {
    /// The last record of the log the views reflect.
    var logHead: LogHead { get throws }
    /// The live store named `name`.
    func store(named name: String) throws -> StoreRecord?
    /// How many stores are live, `default` included.
    func storeCount() throws -> Int
    /// The largest id any store was ever given.
    func lastStoreID() throws -> UInt32
    /// Up to `limit` live stores after the one named `name` (from the first if `nil`):
    /// `default` first, then the others by name.
    func stores(after name: String?, limit: Int) throws -> [StoreRecord]
    /// The snapshot of one live store.
    func snapshot(of store: StoreRecord) throws -> any StoreSnapshot
    /// How many chordsets and chords one live store holds (what a list of stores shows).
    func counts(of store: StoreRecord) throws -> StoreCounts
    /// Every live token, by id.
    func tokens() throws -> [TokenRecord]
}

extension StoresSnapshot {
    /// What the read holds of the live store `name` (resolved and checked): `notFound` if
    /// there is none.
    func readingStore(named name: String) throws -> any StoreSnapshot {
        guard let record = try store(named: name) else {
            throw ChordStoreError(.notFound, "there is no store named \(name)", reason: .storeNotFound)
        }
        return try snapshot(of: record)
    }

    func counts(of store: StoreRecord) throws -> StoreCounts {
        let snapshot = try snapshot(of: store)
        return StoreCounts(chordsets: try snapshot.chordsetCount(), chords: try snapshot.chordCount())
    }
}

/// A consistent, read-only view of one store at one committed point: its events (through
/// its index into the log, each checked as it is read) and the projections that reflect
/// exactly them. Sequence numbers are the store's own.
protocol StoreSnapshot: StateReading, ChangeReading, ChangeLogReading, RecordSource, OrderedChordsets {
    /// The store's registry entry: its last event is `record.head`.
    var record: StoreRecord { get }
    /// The stored checksum of the store's last event (0 for none): what a snapshot file
    /// records to tell its log (read only when one is written).
    func headChecksum() throws -> UInt64
    /// The chordset with `id` as a serialized `chordstore.v1.Chordset` message, or `nil`.
    func chordsetMessage(_ id: UUID) throws -> [UInt8]?
    /// Calls `body` with the chordset with `id` as a serialized `chordstore.v1.Chordset`
    /// message whose index may be missing (the views' record as stored: a snapshot file
    /// writes it as it is); `false` if there is no such chordset. The buffer is valid
    /// only during the call.
    func withChordsetRecord(_ id: UUID, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool
    /// The sequence of the event recorded for `commandID`, if any.
    func sequence(forCommand commandID: String) throws -> UInt64?
    /// How many command ids are recorded.
    func commandCount() throws -> Int
    /// How many chords the chord index holds (for verify): those whose ids are not derived
    /// from their chordset's (``DerivedChordIDs``), and the controls chord.
    func indexedChordCount() throws -> Int
    /// Calls `body` with each stored record from `sequence` on, in order, and the checksum
    /// of the log record before it (the seed its own checksum chains to), until it returns
    /// `false`. The buffer is valid only during the call.
    func forEachChainedRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool) throws
    /// Up to `limit` sequence numbers of the chordset's history after `after`.
    func history(chordset: UUID, after: UInt64, limit: Int) throws -> [UInt64]
    /// Up to `limit` sequence numbers of the session's history after `after`.
    func history(session: String, after: UInt64, limit: Int) throws -> [UInt64]
    /// The undo stacks, revisions and histories as plain values (for verify).
    func changesDump() throws -> InMemoryChanges
    /// How many chordsets all delete-alls together keep (for verify).
    func deletedChordsetsCount() throws -> Int
    /// Calls `body` with each (index key, chordset id) of the index of `order`, in key
    /// order (reversed if `descending`), until it returns `false`: after `cursor` (a key)
    /// if given, else from `start` (ascending: the first key at or after it; descending:
    /// the last key before it), else from the first (or last) entry.
    func scan(
        _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool) throws
}

extension StoreSnapshot {
    var head: UInt64 { record.head }
}

/// Where a store keeps its log and projections: LMDB on disk or plain memory. Every
/// method that writes is called on the writer thread only.
protocol StorageBackend: AnyObject, Sendable {
    /// Readies store `name` for a command, on the caller's thread, before it is queued for
    /// the writer: a store evicted from memory is folded from the log here, so that the
    /// writer, which every write waits for, does not fold it (``LMDBBackend``'s live state).
    func prepareWrite(store name: String)
    /// Validates, appends and folds `batch` as one atomic, durable commit. A command that
    /// fails validation gets its error and writes nothing; a storage failure fails them all.
    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout IncreasingIDs) -> [Result<CommittedEvent, ChordStoreError>]
    /// Runs `body` on a consistent snapshot of every store. Snapshots do not block commits
    /// (only the rare growth of the LMDB map waits for open snapshots to end). `body` must
    /// not call the backend again.
    func withStores<T>(_ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T
    /// Runs `body` on a consistent snapshot of the live store `name` (`notFound` if there
    /// is none), as ``withStores(_:)`` does. `body` must not call the backend again.
    func withSnapshot<T>(store name: String, _ body: (any StoreSnapshot) throws -> T) throws(ChordStoreError) -> T
    /// The log's last committed record (which the views may not have folded yet).
    func logHead() throws(ChordStoreError) -> LogHead
    /// Replaces the projections with a replay of the whole log, atomically (writer thread).
    func rebuild(progress: (_ done: UInt64, _ total: UInt64) -> Void) throws(ChordStoreError)
    /// Appends records copied from a leader's log, byte for byte, as one atomic, durable
    /// commit, if `previous` is this log's last record and every record chains to the one
    /// before it; calls `logged` with the new last record as soon as the log holds them
    /// durably (what a follower acknowledges), then folds them into the views before it
    /// returns the same record (writer thread); see ``ReplicaApplier``. Throws only if
    /// the log did not take the batch, and then without calling `logged`.
    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition, logged: (LogHead) -> Void) throws(ChordStoreError) -> LogHead
    /// Appends `events` exported from a store to store `name`, checked and folded, as one
    /// atomic, durable commit (writer thread); see ``ImportApplier``.
    func importEvents(_ events: [RecordedEvent], store name: String, epoch: UInt64, decider: Decider) throws(ChordStoreError) -> LogHead
    /// Removes the records after `sequence` and rebuilds the projections (writer thread).
    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead
    /// The epoch persisted by ``storeEpoch(_:grant:)`` (0 if none).
    func storedEpoch() throws(ChordStoreError) -> UInt64
    /// The last grant persisted by ``storeEpoch(_:grant:)``, or `nil`.
    func storedGrant() throws(ChordStoreError) -> EpochGrant?
    /// Persists the node's epoch and, when given, the grant of it to a leader, in one
    /// commit (writer thread).
    func storeEpoch(_ epoch: UInt64, grant: EpochGrant?) throws(ChordStoreError)
    /// Releases files and locks. No call may follow.
    func close()
    /// Why commits are refused now (a full disk, a damaged log), or `nil`.
    var writeRefusal: ChordStoreError? { get }
    /// The room the files take and have (`nil` in memory, or once closed).
    var storageUsage: StorageUsage? { get }
    /// The snapshot files time travel starts from (`nil`: replays from the start).
    var snapshotFiles: SnapshotFiles? { get }
    /// Calls `body` with each record of the log from `sequence` on, until it returns
    /// `false`, including records the views have not folded yet (rebuild and verify read
    /// the log through this, bounded by the sequence they need).
    func forEachLogRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
    /// Why the log cannot be read at all (views alone, the log still arriving), or `nil`.
    var logAbsence: ChordStoreError? { get }
    /// Why the views cannot take the log's events until they are rebuilt (a record they
    /// could not fold), or `nil`.
    var viewsDamage: ChordStoreError? { get }
    /// Replays the log and compares it with what reads are answered from (``Verifier``).
    func verify(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) -> VerifyReport
}

extension StorageBackend {
    var logAbsence: ChordStoreError? { nil }
    var viewsDamage: ChordStoreError? { nil }

    func verify(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) -> VerifyReport {
        try withStores { try Verifier.verify($0, backend: self, progress: progress) }
    }
}

extension StoreSnapshot {
    func chordsetMessage(_ id: UUID) throws -> [UInt8]? {
        try chordset(id).map(WireCodec.chordsetMessage)
    }

    func withChordsetRecord(_ id: UUID, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let message = try chordsetMessage(id) else { return false }
        try message.withUnsafeBytes(body)
        return true
    }

    /// Chordsets in `order`, at most `limit` of them: the order's index read through
    /// ``scan(_:descending:after:from:_:)``, the one definition of every order for both
    /// engines (the index keys of ``StoreKeys``). An entry that names no chordset is
    /// damage, not something to skip.
    func chordsets(order: ChordsetOrder, limit: Int?) throws -> [Chordset] {
        let cap = limit ?? Int.max
        var result: [Chordset] = []
        guard cap > 0 else { return result }
        try scan(order, descending: false, after: nil, from: nil) { _, id in
            guard let chordset = try chordset(id) else {
                throw ChordStoreError(.dataLoss, "the \(order.rawValue) index names chordset \(id), which has no record")
            }
            result.append(chordset)
            return result.count < cap
        }
        return result
    }
}

extension StorageBackend {
    /// Runs `body` on a consistent snapshot of the store named `name` (empty: `default`);
    /// `invalidArgument` for a name against the rules, `notFound` for no such store.
    func withSnapshot<T>(store name: String, _ body: (any StoreSnapshot) throws -> T) throws(ChordStoreError) -> T {
        let name = StoreName.resolved(name)
        try StoreName.check(name)
        return try withStores { try body(try $0.readingStore(named: name)) }
    }
}

extension StoreSnapshot {
    /// Calls `body` with each stored record from `sequence` on, in order, until it returns
    /// `false`. The buffer is valid only during the call.
    func forEachRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try forEachChainedRecord(from: sequence) { sequence, record, _ in try body(sequence, record) }
    }
}

extension StorageBackend {
    func prepareWrite(store name: String) {}
}
