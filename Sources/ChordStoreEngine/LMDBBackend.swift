import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The durable backend: the log and its projections in one LMDB environment, written in
/// the same transaction, so the views always reflect exactly the committed log.
final class LMDBBackend: StorageBackend {
    /// The on-disk format this code writes and reads.
    static let formatVersion: UInt8 = 1
    /// The layout of the view databases. A store whose views have another layout (or
    /// none) gets them rebuilt from the log when opened.
    static let viewsVersion: UInt8 = 5

    private let env: Environment
    private let dbs: StoreDatabases
    private let lock: DirectoryLock
    /// The last committed record; only the writer thread changes it.
    private let committedHead: Mutex<LogHead>
    private let maxMapGrowth: Int
    let snapshotFiles: SnapshotFiles?

    /// Opens or creates the store in `directory`, rebuilding the views if their layout is
    /// not this version's.
    init(directory: URL, options: ChordStore.Options, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ChordStoreError(.unavailable, "cannot create data directory \(directory.path): \(error.localizedDescription)", cause: error)
        }
        lock = try DirectoryLock(directory: directory)
        var envOptions = Environment.Options()
        envOptions.mapSize = max(1 << 16, options.initialMapSize)
        envOptions.noSync = options.unsafeNoSync
        envOptions.maxDatabases = 32
        maxMapGrowth = max(1 << 20, options.maxMapGrowth)
        snapshotFiles = SnapshotFiles(directory: directory.appendingPathComponent("snapshots"), interval: options.snapshotInterval)
        do {
            env = try Environment(directory: directory, options: envOptions)
            dbs = StoreDatabases(
                log: try env.openDatabase("log"), chordsets: try env.openDatabase("chordsets"),
                chords: try env.openDatabase("chords"), order: try env.openDatabase("order"),
                positions: try env.openDatabase("positions"), created: try env.openDatabase("created"),
                commands: try env.openDatabase("commands"), meta: try env.openDatabase("meta"),
                sessions: try env.openDatabase("sessions"), links: try env.openDatabase("session-links"),
                revisions: try env.openDatabase("revisions"), chordsetHistory: try env.openDatabase("chordset-history"),
                graveyard: try env.openDatabase("graveyard"),
                titles: try env.openDatabase("titles"))
            committedHead = Mutex(.empty)
            try checkFormat()
            let head = try env.withReadTransaction { txn in try Self.readHead(txn, dbs, withTimestamp: true) }
            committedHead.withLock { $0 = head }
        } catch {
            throw Self.openError(error, directory: directory)
        }
        try catchUpViews(progress: progress)
    }

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout SplitMix64) -> [Result<RecordedEvent, ChordStoreError>] {
        let start = committedHead.withLock { $0 }
        do {
            let (results, head) = try withGrowingMap {
                try env.withWriteTransaction { txn in
                    var view = LMDBStateView(txn: txn, dbs: dbs)
                    var changes = view
                    var log = LMDBLog(txn: txn, dbs: dbs)
                    var head = start
                    let results = try applier.apply(
                        batch, to: &view, changes: &changes, log: &log, head: &head, now: .now, generator: &generator)
                    return (results, head)
                }
            }
            committedHead.withLock { $0 = head }
            snapshotFiles?.maybeTake(head: head.sequence, backend: self)
            return results
        } catch {
            let failure = ChordStoreError.wrapping(error)
            return batch.map { _ in .failure(failure) }
        }
    }

    func withSnapshot<T>(_ body: (any StoreSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if env.isClosed { throw ChordStoreError(.unavailable, "the store is closed") }
        do {
            return try env.withReadTransaction { txn in try body(LMDBStateView(txn: txn, dbs: dbs)) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func rebuild(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        try rebuildViews(through: nil, progress: progress)
    }

    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition) throws(ChordStoreError) -> LogHead {
        let start = committedHead.withLock { $0 }
        let head: LogHead
        do {
            head = try withGrowingMap {
                try env.withWriteTransaction { txn in
                    var view = LMDBStateView(txn: txn, dbs: dbs)
                    var changes = view
                    var log = LMDBLog(txn: txn, dbs: dbs)
                    var head = start
                    try ReplicaApplier.apply(records, after: previous, to: &view, changes: &changes, log: &log, head: &head)
                    return head
                }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        committedHead.withLock { $0 = head }
        snapshotFiles?.maybeTake(head: head.sequence, backend: self)
        return head
    }

    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead {
        // One transaction: the records after `sequence` go, and the views are rebuilt from
        // the records before it, so no reader ever sees the views of the cut log, and a
        // failure leaves the log and views as they were.
        try rebuildViews(through: sequence, progress: { _, _ in })
        snapshotFiles?.discard(after: sequence)
        return committedHead.withLock { $0 }
    }

    func storedEpoch() throws(ChordStoreError) -> UInt64 {
        do {
            return try env.withReadTransaction { txn in
                guard let bytes = try txn.get(dbs.meta, key: StoreDatabases.epochKey) else { return 0 }
                return try StoreKeys.sequence(bytes)
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func storeEpoch(_ epoch: UInt64) throws(ChordStoreError) {
        do {
            try env.withWriteTransaction { txn in try txn.put(dbs.meta, key: StoreDatabases.epochKey, value: StoreKeys.sequence(epoch)) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func close() {
        env.close()
        lock.release()
    }

    /// Rebuilds the views if their layout is not this version's (or they were dropped).
    /// Commits write the views in the log's transaction, so no other check is needed.
    private func catchUpViews(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let stored: [UInt8]?
        do {
            stored = try env.withReadTransaction { txn in try txn.get(dbs.meta, key: StoreDatabases.viewsKey).map(Array.init) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        if stored != [Self.viewsVersion] { try rebuildViews(through: nil, progress: progress) }
    }

    /// Replays the whole log into memory (the domain fold), then replaces the views with
    /// the result in the same transaction, writing every index in key order with
    /// `MDB_APPEND`. Atomic: a crash leaves the old views. With `last`, the records after
    /// it are deleted in that transaction, and the views are those of the log up to it.
    private func rebuildViews(through last: UInt64?, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let total = min(last ?? .max, committedHead.withLock { $0.sequence })
        do {
            try withGrowingMap {
                try env.withWriteTransaction { txn in
                    if last != nil { try Self.deleteRecords(after: total, txn, dbs) }
                    let chordsets = try LMDBStateView(txn: txn, dbs: dbs).chordsetCount()
                    let replay: LogReplay.Result
                    do {
                        replay = try LogReplay.replay(self, through: total, expectedChordsets: chordsets, progress: progress)
                    } catch let failure as LogReplay.Failure {
                        throw failure.error
                    }
                    for db in dbs.views { try txn.empty(db) }
                    try txn.delete(dbs.meta, key: StoreDatabases.controlsKey)
                    try ViewLoader(txn: txn, dbs: dbs).load(replay.state, changes: replay.changes, commands: replay.commands)
                    try txn.put(dbs.meta, key: StoreDatabases.viewsKey, value: [Self.viewsVersion])
                }
            }
            if last != nil {
                let head = try env.withReadTransaction { txn in try Self.readHead(txn, dbs, withTimestamp: true) }
                committedHead.withLock { $0 = head }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        progress(total, total)
    }

    private static func deleteRecords(after sequence: UInt64, _ txn: Transaction, _ dbs: StoreDatabases) throws {
        var doomed: [[UInt8]] = []
        try txn.withCursor(dbs.log) { cursor in
            var entry = try StoreKeys.sequence(sequence + 1).withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let found = entry {
                doomed.append(Array(found.key))
                entry = try cursor.next()
            }
        }
        for key in doomed { _ = try txn.delete(dbs.log, key: key) }
    }

    /// Runs `body`, growing the map and retrying whenever it fails with `MDB_MAP_FULL`
    /// (at most 32 times: a batch that needs more is refused, not retried forever).
    private func withGrowingMap<T>(_ body: () throws -> T) throws -> T {
        for _ in 0..<32 {
            do {
                return try body()
            } catch let error as LMDBError where error.isMapFull {
                let size = env.mapSize
                try env.setMapSize(size + min(size, maxMapGrowth))
            }
        }
        throw ChordStoreError(.resourceExhausted, "the LMDB map is full and did not grow enough (now \(env.mapSize) bytes)")
    }

    private func checkFormat() throws {
        try env.withWriteTransaction { txn in
            if let stored = try txn.get(dbs.meta, key: StoreDatabases.formatKey) {
                guard stored.count == 1, stored[0] <= Self.formatVersion else {
                    throw ChordStoreError(
                        .failedPrecondition,
                        "the data directory has format \(Array(stored)), newer than this chordstore (\(Self.formatVersion))")
                }
            } else {
                try txn.put(dbs.meta, key: StoreDatabases.formatKey, value: [Self.formatVersion])
            }
        }
    }

    /// The last record's sequence number, checksum and (if `withTimestamp`) timestamp and epoch.
    /// A damaged last record does not stop the store from opening: its timestamp is taken
    /// as unknown, and `verify` reports the damage.
    static func readHead(_ txn: Transaction, _ dbs: StoreDatabases, withTimestamp: Bool) throws -> LogHead {
        try txn.withCursor(dbs.log) { cursor in
            guard let last = try cursor.last() else { return .empty }
            let sequence = try StoreKeys.sequence(last.key)
            let checksum = RecordCodec.storedChecksum(last.value) ?? 0
            let recorded = withTimestamp ? try? RecordCodec.decode(last.value, sequence: sequence) : nil
            return LogHead(
                sequence: sequence, checksum: checksum, timestamp: recorded?.timestamp ?? Instant(microsecondsSince1970: 0),
                epoch: recorded?.epoch ?? 0)
        }
    }

    private static func openError(_ error: any Error, directory: URL) -> ChordStoreError {
        if let error = error as? ChordStoreError { return error }
        return ChordStoreError(.unavailable, "cannot open the store in \(directory.path): \(error)", cause: error)
    }
}
