import ChordStoreDomain
import Foundation
import Synchronization

/// The in-memory backend, like Core Data's in-memory store: the same log records,
/// checksums and fold as the LMDB backend, kept in arrays and dictionaries and gone when
/// the store is closed.
final class InMemoryBackend: StorageBackend {
    private struct Storage: StoreSnapshot {
        var state = InMemoryState()
        var changes = InMemoryChanges()
        var log = InMemoryLog()
        var head = LogHead.empty

        var records: [[UInt8]] { log.records }

        func chordset(_ id: UUID) -> Chordset? { state.chordset(id) }
        func chordLocation(_ id: UUID) -> ChordLocation? { state.chordLocation(id) }
        func controlsChord() -> Chord? { state.controlsChord() }
        func chordsetCount() -> Int { state.chordsetCount() }
        func chordCount() -> Int { state.chordCount() }
        func chordsetID(atIndex index: Int) -> UUID? { state.chordsetID(atIndex: index) }
        func deletedChordsets(at sequence: UInt64) -> [Chordset]? { state.deletedChordsets(at: sequence) }
        func change(at sequence: UInt64) throws -> Change? { try log.change(at: sequence) }
        func history(chordset: UUID, after: UInt64, limit: Int) -> [UInt64] {
            Array((changes.chordsetHistory[chordset] ?? []).lazy.filter { $0 > after }.prefix(limit))
        }
        func history(session: String, after: UInt64, limit: Int) -> [UInt64] {
            Array((changes.sessionHistory[session] ?? []).lazy.filter { $0 > after }.prefix(limit))
        }
        func changesDump() -> InMemoryChanges { changes }

        func scan(
            _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
            _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
        ) throws {
            // The same keys as the LMDB indexes, sorted on each call (the in-memory engine
            // is for tests and embedding, not for large stores).
            let all = state.chordsetIDsInOrder.compactMap(state.chordset)
            var keyed: [(key: [UInt8], id: UUID)] = switch order {
            case .creationDate: all.map { (StoreKeys.creation($0.creationDate, $0.id), $0.id) }
            case .title: all.map { (StoreKeys.title($0), $0.id) }
            case .index: all.map { (StoreKeys.index($0.index), $0.id) }
            }
            keyed.sort { $0.key.lexicographicallyPrecedes($1.key) }
            var candidates: [(key: [UInt8], id: UUID)]
            var cursor = cursor
            if let resume = cursor, let start,
               descending ? start.lexicographicallyPrecedes(resume) : resume.lexicographicallyPrecedes(start) {
                cursor = nil  // the start key lies beyond the cursor
            }
            let start = start.flatMap { $0.isEmpty ? nil : $0 }
            if let cursor {
                candidates = descending
                    ? keyed.filter { $0.key.lexicographicallyPrecedes(cursor) }.reversed()
                    : keyed.filter { cursor.lexicographicallyPrecedes($0.key) }
            } else if let start {
                candidates = descending
                    ? keyed.filter { $0.key.lexicographicallyPrecedes(start) }.reversed()
                    : keyed.filter { !$0.key.lexicographicallyPrecedes(start) }
            } else {
                candidates = descending ? keyed.reversed() : keyed
            }
            for candidate in candidates {
                guard try candidate.key.withUnsafeBytes({ try body($0, candidate.id) }) else { return }
            }
        }
        func deletedChordsetsCount() -> Int { state.allDeletedChordsets.values.reduce(0) { $0 + $1.count } }
        func revision(_ key: RevisionKey) -> Revision? { changes.revision(key) }
        func undoTop(_ session: String) -> UInt64? { changes.undoTop(session) }
        func redoTop(_ session: String) -> UInt64? { changes.redoTop(session) }
        func redoDepth(_ session: String, atMost limit: Int) -> Int { changes.redoDepth(session, atMost: limit) }

        func chordsets(order: ChordsetOrder, limit: Int?) -> [Chordset] {
            ChordsetSorting.chordsets(of: state, order: order, limit: limit)
        }

        func sequence(forCommand commandID: String) -> UInt64? { log.sequence(forCommand: commandID) }
        func commandCount() -> Int { log.commandCount }

        func forEachRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
            var next = max(sequence, 1)
            while next <= UInt64(records.count) {
                let keepGoing = try records[Int(next - 1)].withUnsafeBytes { try body(next, $0) }
                if !keepGoing { return }
                next += 1
            }
        }
    }

    private let storage = Mutex(Storage())
    /// An in-memory store keeps no snapshots: reads of the past replay from the start.
    var snapshotFiles: SnapshotFiles? { nil }
    /// Memory has no full disk and no damaged records.
    var writeRefusal: ChordStoreError? { nil }
    private let closed = Atomic(false)
    private let epoch = Atomic<UInt64>(0)

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout SplitMix64) -> [Result<RecordedEvent, ChordStoreError>] {
        storage.withLock { storage in
            let before = storage.records.count
            do {
                return try applier.apply(
                    batch, to: &storage.state, changes: &storage.changes, log: &storage.log, head: &storage.head,
                    now: .now, generator: &generator)
            } catch {
                // Undo the part of the batch already applied, as an aborted LMDB
                // transaction would: drop its records and replay the rest (a path only a
                // bug can take, so its cost does not matter).
                storage = Self.replayed(Array(storage.records[..<before]))
                let failure = ChordStoreError.wrapping(error)
                return batch.map { _ in .failure(failure) }
            }
        }
    }

    private static func replayed(_ records: [[UInt8]]) -> Storage {
        var storage = Storage()
        for (offset, record) in records.enumerated() {
            let sequence = UInt64(offset + 1)
            guard let recorded = try? record.withUnsafeBytes({ try RecordCodec.decode($0, sequence: sequence) }),
                  let touched = try? Fold.apply(recorded.event, sequence: sequence, to: &storage.state) else { break }
            storage.changes.apply(recorded.change, chordsets: touched)
            storage.log.append(sequence, record, commandID: recorded.commandID)
            storage.head = LogHead(sequence: sequence, checksum: recorded.checksum, timestamp: recorded.timestamp, epoch: recorded.epoch)
        }
        return storage
    }

    func withSnapshot<T>(_ body: (any StoreSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if closed.load(ordering: .relaxed) { throw ChordStoreError(.unavailable, "the store is closed") }
        let snapshot = storage.withLock { $0 }
        do {
            return try body(snapshot)
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func rebuild(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let records = storage.withLock { $0.records }
        var state = InMemoryState()
        var changes = InMemoryChanges()
        let total = UInt64(records.count)
        do {
            for (offset, record) in records.enumerated() {
                let sequence = UInt64(offset + 1)
                let recorded = try record.withUnsafeBytes { try RecordCodec.decode($0, sequence: sequence) }
                let touched = try Fold.apply(recorded.event, sequence: sequence, to: &state)
                changes.apply(recorded.change, chordsets: touched)
                if sequence % 65_536 == 0 { progress(sequence, total) }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        progress(total, total)
        storage.withLock {
            $0.state = state
            $0.changes = changes
        }
    }

    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition) throws(ChordStoreError) -> LogHead {
        try storage.withLock { storage throws(ChordStoreError) -> LogHead in
            let before = storage.records.count
            do {
                try ReplicaApplier.apply(
                    records, after: previous, to: &storage.state, changes: &storage.changes, log: &storage.log,
                    head: &storage.head)
            } catch {
                // Applied whole or not at all, as in an aborted LMDB transaction.
                if storage.records.count != before { storage = Self.replayed(Array(storage.records[..<before])) }
                throw ChordStoreError.wrapping(error)
            }
            return storage.head
        }
    }

    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead {
        storage.withLock { storage in
            let kept = Array(storage.records.prefix(Int(clamping: sequence)))
            storage = Self.replayed(kept)
            return storage.head
        }
    }

    func storedEpoch() -> UInt64 { epoch.load(ordering: .relaxed) }

    func storeEpoch(_ epoch: UInt64) { self.epoch.store(epoch, ordering: .relaxed) }

    func close() {
        closed.store(true, ordering: .relaxed)
        storage.withLock { $0 = Storage() }
    }
}

/// The in-memory log: its records, and the command ids applied (id → sequence).
struct InMemoryLog: LogAppending, Sendable {
    private(set) var records: [[UInt8]] = []
    private var commands: [String: UInt64] = [:]

    func sequence(forCommand commandID: String) -> UInt64? { commands[commandID] }
    var commandCount: Int { commands.count }

    func change(at sequence: UInt64) throws -> Change? {
        guard sequence >= 1, sequence <= UInt64(records.count) else { return nil }
        return try records[Int(sequence - 1)].withUnsafeBytes { try RecordCodec.decode($0, sequence: sequence) }.change
    }

    func event(forCommand commandID: String) throws -> RecordedEvent? {
        guard let sequence = commands[commandID] else { return nil }
        return try records[Int(sequence - 1)].withUnsafeBytes { try RecordCodec.decode($0, sequence: sequence) }
    }

    mutating func append(_ sequence: UInt64, _ record: [UInt8], commandID: String) {
        records.append(record)
        if !commandID.isEmpty { commands[commandID] = sequence }
    }
}
