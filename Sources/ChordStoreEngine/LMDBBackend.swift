import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The durable backend: the log in one LMDB environment, synced at every commit, and its
/// projections in a second one beside it (`views/`), written right after the log in the
/// same turn of the writer without fsync (see ``StoreDatabases``).
///
/// A durable commit thus writes the pages of one append to the log (as raw LMDB does)
/// instead of the pages of a dozen B-trees. The views can always be rebuilt from the
/// log: they record the last event they folded (``AppliedHead``), and when a store opens
/// they are caught up with the log, or rebuilt if that event is not the log's or the
/// machine went down while they were open (``ViewsMarker``).
final class LMDBBackend: StorageBackend {
    /// The on-disk format this code writes and reads: 2 keeps the views in `views/`
    /// (format 1 kept them in the log's environment; opening one moves them).
    static let formatVersion: UInt8 = 2
    /// The layout of the view databases. A store whose views have another layout (or
    /// none) gets them rebuilt from the log when opened.
    static let viewsVersion: UInt8 = 6
    /// Most events caught up one by one when a store opens; a longer lag is rebuilt.
    static let maxCatchUp: UInt64 = 10_000

    private let logEnv: Environment
    private let viewsEnv: Environment
    private let dbs: StoreDatabases
    private let lock: DirectoryLock
    private let marker: ViewsMarker
    /// The last committed record; only the writer thread changes it.
    private let committedHead: Mutex<LogHead>
    /// Set when the views cannot take what the log holds: commits fail with it (reads go
    /// on) until a reopen catches the views up or a rebuild succeeds.
    private let viewsFault = Mutex<ChordStoreError?>(nil)
    private let maxMapGrowth: Int
    let snapshotFiles: SnapshotFiles?

    /// Opens or creates the store in `directory`, catching the views up with the log or
    /// rebuilding them when needed.
    init(directory: URL, options: ChordStore.Options, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let viewsDirectory = directory.appendingPathComponent("views")
        do {
            try FileManager.default.createDirectory(at: viewsDirectory, withIntermediateDirectories: true)
        } catch {
            throw ChordStoreError(.unavailable, "cannot create \(viewsDirectory.path): \(error.localizedDescription)", cause: error)
        }
        lock = try DirectoryLock(directory: directory)
        marker = ViewsMarker(viewsDirectory: viewsDirectory)
        maxMapGrowth = max(1 << 20, options.maxMapGrowth)
        snapshotFiles = SnapshotFiles(directory: directory.appendingPathComponent("snapshots"), interval: options.snapshotInterval)
        var logOptions = Environment.Options()
        logOptions.mapSize = max(1 << 16, options.initialMapSize)
        logOptions.noSync = options.unsafeNoSync
        logOptions.maxDatabases = 32
        // The views' file is as large as their map, its blocks reserved: start small (the
        // map doubles as it fills).
        var viewsOptions = Environment.Options()
        viewsOptions.mapSize = max(1 << 16, min(options.initialMapSize, 1 << 25))
        viewsOptions.noSync = true
        viewsOptions.writeMap = true
        viewsOptions.maxDatabases = 32
        do {
            logEnv = try Environment(directory: directory, options: logOptions)
            try Self.checkFormat(logEnv)
            if !marker.viewsTrusted {
                for file in ["data.mdb", "lock.mdb"] {
                    let url = viewsDirectory.appendingPathComponent(file)
                    if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
                }
            }
            viewsEnv = try Environment(directory: viewsDirectory, options: viewsOptions)
            try marker.markOpen()
            let dbs = try StoreDatabases(log: logEnv, views: viewsEnv)
            self.dbs = dbs
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs) }
            committedHead = Mutex(head)
        } catch {
            throw Self.openError(error, directory: directory)
        }
        do {
            try catchUpViews(progress: progress)
        } catch where error.code == .dataLoss {
            // A damaged record: open anyway (reads see the views as they are, verify names
            // the record) but take no writes until the log is repaired and rebuilt.
            viewsFault.withLock {
                $0 = ChordStoreError(
                    .dataLoss, "the views cannot take the log (\(error.message)); run verify, repair the log, then rebuild")
            }
        }
    }

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout SplitMix64) -> [Result<RecordedEvent, ChordStoreError>] {
        do {
            return try logAndFold { view, changes, log, head in
                try applier.apply(batch, to: &view, changes: &changes, log: &log, head: &head, now: .now, generator: &generator)
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
    }

    func withSnapshot<T>(_ body: (any StoreSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if viewsEnv.isClosed { throw ChordStoreError(.unavailable, "the store is closed") }
        do {
            // Views first: the log then holds at least every event they reflect.
            return try viewsEnv.withReadTransaction { viewsTxn in
                try logEnv.withReadTransaction { logTxn in try body(LMDBStateView(txn: viewsTxn, logTxn: logTxn, dbs: dbs)) }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func rebuild(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        try rebuildViews(through: nil, progress: progress)
        viewsFault.withLock { $0 = nil }
    }

    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition) throws(ChordStoreError) -> LogHead {
        try logAndFold { view, changes, log, head in
            try ReplicaApplier.apply(records, after: previous, to: &view, changes: &changes, log: &log, head: &head)
        }
        return committedHead.withLock { $0 }
    }

    /// One turn of the writer: `fold` appends records to the log and folds them into the
    /// views, in a transaction of each; the log commits (durably) first, then the views.
    /// Throws only if the log did not take the batch. If the views' commit fails after
    /// the log's, the views are caught up at once (or refuse writes until a reopen).
    private func logAndFold<T>(
        _ fold: (inout LMDBStateView, inout LMDBStateView, inout LMDBLog, inout LogHead) throws -> T
    ) throws(ChordStoreError) -> T {
        if let fault = viewsFault.withLock({ $0 }) { throw fault }
        let start = committedHead.withLock { $0 }
        var logged: (result: T, head: LogHead)?
        var viewsCommitted = false
        do {
            try withGrowingMap {
                guard logged == nil else { return }  // the log holds the batch: never apply it twice
                try viewsEnv.withWriteTransaction { viewsTxn in
                    logged = try logEnv.withWriteTransaction { logTxn in
                        try checkViews(viewsTxn, at: start)
                        var view = LMDBStateView(txn: viewsTxn, logTxn: logTxn, dbs: dbs)
                        var changes = view
                        var log = LMDBLog(view: view)
                        var head = start
                        let result = try fold(&view, &changes, &log, &head)
                        if head != start { try AppliedHead.write(head, viewsTxn, dbs) }
                        return (result, head)
                    }
                }
                viewsCommitted = true
            }
        } catch {
            if logged == nil { throw ChordStoreError.wrapping(error) }
        }
        guard let logged else { throw ChordStoreError(.internal, "the commit ended without a result") }
        committedHead.withLock { $0 = logged.head }
        if !viewsCommitted { recoverViews() }
        snapshotFiles?.maybeTake(head: logged.head.sequence, backend: self)
        return logged.result
    }

    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead {
        // The views are rebuilt from the records up to `sequence` first, in one
        // transaction, so no reader ever sees the views of the cut log; then the records
        // after it go, in one transaction of the log. Should the process die between the
        // two, the views are caught up with the uncut log when it reopens, and the cut
        // is made again by whoever asked for it.
        try rebuildViews(through: sequence, progress: { _, _ in })
        var failure: (any Error)?
        do {
            try withGrowingMap {
                try logEnv.withWriteTransaction { txn in try Self.deleteRecords(after: sequence, txn, dbs) }
            }
        } catch {
            failure = error
        }
        do {
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs) }
            committedHead.withLock { $0 = head }
        } catch {
            failure = failure ?? error
        }
        if let failure {
            recoverViews()  // the views stop at `sequence`, the log may not: fold its events back in
            throw ChordStoreError.wrapping(failure)
        }
        snapshotFiles?.discard(after: sequence)
        return committedHead.withLock { $0 }
    }

    func storedEpoch() throws(ChordStoreError) -> UInt64 {
        do {
            return try logEnv.withReadTransaction { txn in
                guard let bytes = try txn.get(dbs.logMeta, key: StoreDatabases.epochKey) else { return 0 }
                return try StoreKeys.sequence(bytes)
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func storeEpoch(_ epoch: UInt64) throws(ChordStoreError) {
        do {
            try logEnv.withWriteTransaction { txn in
                try txn.put(dbs.logMeta, key: StoreDatabases.epochKey, value: StoreKeys.sequence(epoch))
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func forEachLogRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try logEnv.withReadTransaction { txn in
            try txn.withCursor(dbs.log) { cursor in
                var entry = try StoreKeys.sequence(max(sequence, 1)).withUnsafeBytes { try cursor.seek(atLeast: $0) }
                while let current = entry {
                    guard try body(StoreKeys.sequence(current.key), current.value) else { return }
                    entry = try cursor.next()
                }
            }
        }
    }

    /// Syncs the views to disk and records the clean close, then releases the files.
    func close() {
        if !viewsEnv.isClosed {
            if (try? viewsEnv.sync()) != nil { marker.markClosed() } else { marker.markUnsynced() }
        }
        viewsEnv.close()
        logEnv.close()
        lock.release()
    }

    /// Brings the views to the log's last event: nothing to do when they hold it; the
    /// missing events folded one by one when they hold an earlier event of this log
    /// (the process died between the two commits of a turn); otherwise (another layout,
    /// views of another log, views discarded after a machine crash, a long lag) a rebuild.
    private func catchUpViews(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let logHead = committedHead.withLock { $0 }
        let applied: LogHead
        let sameLog: Bool
        do {
            (applied, sameLog) = try viewsEnv.withReadTransaction { viewsTxn in
                guard try viewsTxn.get(dbs.meta, key: StoreDatabases.viewsKey).map(Array.init) == [Self.viewsVersion] else {
                    return (LogHead.empty, false)
                }
                let applied = try AppliedHead.read(viewsTxn, dbs)
                guard applied.sequence <= logHead.sequence else { return (applied, false) }
                guard applied.sequence > 0 else { return (applied, true) }
                let checksum = try logEnv.withReadTransaction { logTxn in
                    try logTxn.get(dbs.log, key: StoreKeys.sequence(applied.sequence)).flatMap(RecordCodec.storedChecksum)
                }
                return (applied, checksum == applied.checksum)
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        if !sameLog || logHead.sequence - applied.sequence > Self.maxCatchUp {
            try rebuildViews(through: nil, progress: progress)
        } else if applied.sequence < logHead.sequence {
            do {
                try withGrowingMap { try foldMissingEvents() }
            } catch {
                throw ChordStoreError.wrapping(error)
            }
            progress(logHead.sequence, logHead.sequence)
        }
    }

    /// After the views' commit failed behind a durable log commit: folds the missing
    /// events now, or, if that fails too, refuses commits until a reopen.
    private func recoverViews() {
        do {
            try withGrowingMap { try foldMissingEvents() }
            let applied = try viewsEnv.withReadTransaction { txn in try AppliedHead.read(txn, dbs) }
            let logHead = committedHead.withLock { $0 }
            guard applied.position == logHead.position else {
                throw ChordStoreError(.dataLoss, "the views are at \(applied.position), the log at \(logHead.position)")
            }
        } catch {
            viewsFault.withLock {
                $0 = ChordStoreError(
                    .unavailable, "the views could not take events the log holds (\(ChordStoreError.wrapping(error).message)); reopen the store to rebuild them")
            }
        }
    }

    /// Refuses a commit whose views do not stop at the log's last event (what a failed
    /// repair could leave): folding onto them would give views of no log. Reads go on;
    /// commits wait for a reopen, which catches the views up or rebuilds them.
    private func checkViews(_ viewsTxn: Transaction, at start: LogHead) throws {
        let applied = try AppliedHead.read(viewsTxn, dbs)
        guard applied.position == start.position else {
            let fault = ChordStoreError(
                .unavailable, "the views stop at \(applied.position), the log at \(start.position); reopen the store to repair them")
            viewsFault.withLock { $0 = fault }
            throw fault
        }
    }

    /// Folds the log's events after the views' applied one into the views, in one
    /// transaction, with the replica's checks (``ReplicaApplier``): the records are
    /// already in the log, so only the views and the command ids take them.
    private func foldMissingEvents() throws {
        try viewsEnv.withWriteTransaction { viewsTxn in
            try logEnv.withReadTransaction { logTxn in
                var view = LMDBStateView(txn: viewsTxn, logTxn: logTxn, dbs: dbs)
                var changes = view
                var log = LMDBLog(view: view, storesRecords: false)
                var head = try AppliedHead.read(viewsTxn, dbs)
                var records: [[UInt8]] = []
                try logTxn.withCursor(dbs.log) { cursor in
                    var entry = try StoreKeys.sequence(head.sequence + 1).withUnsafeBytes { try cursor.seek(atLeast: $0) }
                    while let current = entry {
                        records.append(Array(current.value))
                        entry = try cursor.next()
                    }
                }
                try ReplicaApplier.apply(records, after: head.position, to: &view, changes: &changes, log: &log, head: &head)
                try AppliedHead.write(head, viewsTxn, dbs)
            }
        }
    }

    /// Replays the log (up to `last`, or all of it) into memory (the domain fold), then
    /// replaces the views with the result in one transaction of the views, writing every
    /// index in key order with `MDB_APPEND`. Atomic: a crash leaves the old views.
    private func rebuildViews(through last: UInt64?, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let logHead = committedHead.withLock { $0 }
        let total = min(last ?? .max, logHead.sequence)
        do {
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs, at: total) }
            let chordsets = try viewsEnv.withReadTransaction { txn in try txn.stat(dbs.chordsets).entries }
            let replay: LogReplay.Result
            do {
                replay = try LogReplay.replay(self, through: total, expectedChordsets: chordsets, progress: progress)
            } catch {
                throw error.error
            }
            // Replayed once; only the load is retried if the views' map must grow.
            try withGrowingMap {
                try viewsEnv.withWriteTransaction { txn in
                    for db in dbs.views { try txn.empty(db) }
                    try txn.delete(dbs.meta, key: StoreDatabases.controlsKey)
                    try ViewLoader(txn: txn, dbs: dbs).load(replay.state, changes: replay.changes, commands: replay.commands)
                    try txn.put(dbs.meta, key: StoreDatabases.viewsKey, value: [Self.viewsVersion])
                    try AppliedHead.write(head, txn, dbs)
                }
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

    /// Runs `body`, growing both maps and retrying whenever it fails with `MDB_MAP_FULL`
    /// (at most 32 times: a batch that needs more is refused, not retried forever).
    private func withGrowingMap<T>(_ body: () throws -> T) throws -> T {
        for _ in 0..<32 {
            do {
                return try body()
            } catch let error as LMDBError where error.isMapFull {
                for env in [logEnv, viewsEnv] {
                    let size = env.mapSize
                    try env.setMapSize(size + min(size, maxMapGrowth))
                }
            }
        }
        throw ChordStoreError(
            .resourceExhausted, "the LMDB maps are full and did not grow enough (now \(logEnv.mapSize) and \(viewsEnv.mapSize) bytes)")
    }

    /// Checks the log environment's format, creating it (new store) or moving a format 1
    /// store's views out (they are dropped here and rebuilt in `views/`).
    private static func checkFormat(_ env: Environment) throws {
        let meta = try env.openDatabase("meta")
        let stored = try env.withReadTransaction { txn in try txn.get(meta, key: StoreDatabases.formatKey).map(Array.init) }
        if let stored, stored.count != 1 || stored[0] > Self.formatVersion {
            throw ChordStoreError(
                .failedPrecondition, "the data directory has format \(stored), newer than this chordstore (\(Self.formatVersion))")
        }
        if stored == [Self.formatVersion] { return }
        var old: [Database] = []  // format 1's views, if any (dropping them again after a crash is harmless)
        for name in StoreDatabases.viewNames where name != "meta" {
            do {
                old.append(try env.openDatabase(name, create: false))
            } catch let error as LMDBError where error.isNotFound {
                continue
            }
        }
        try env.withWriteTransaction { txn in
            for db in old { try txn.drop(db) }
            for key in [StoreDatabases.viewsKey, StoreDatabases.controlsKey] { _ = try txn.delete(meta, key: key) }
            try txn.put(meta, key: StoreDatabases.formatKey, value: [Self.formatVersion])
        }
    }

    /// The position of the record at `sequence` (the last record if `nil`): its sequence
    /// number, checksum, timestamp and epoch; `.empty` if there is none. A damaged record
    /// does not stop the store from opening: its timestamp and epoch are taken as unknown,
    /// and `verify` reports the damage.
    static func readHead(_ txn: Transaction, _ dbs: StoreDatabases, at sequence: UInt64? = nil) throws -> LogHead {
        let found: (sequence: UInt64, record: [UInt8])?
        if let sequence {
            found = try txn.get(dbs.log, key: StoreKeys.sequence(sequence)).map { (sequence, Array($0)) }
        } else {
            found = try txn.withCursor(dbs.log) { cursor in
                try cursor.last().map { (try StoreKeys.sequence($0.key), Array($0.value)) }
            }
        }
        guard let found else { return .empty }
        return found.record.withUnsafeBytes { record in
            let recorded = try? RecordCodec.decode(record, sequence: found.sequence)
            return LogHead(
                sequence: found.sequence, checksum: RecordCodec.storedChecksum(record) ?? 0,
                timestamp: recorded?.timestamp ?? Instant(microsecondsSince1970: 0), epoch: recorded?.epoch ?? 0)
        }
    }

    private static func openError(_ error: any Error, directory: URL) -> ChordStoreError {
        if let error = error as? ChordStoreError { return error }
        return ChordStoreError(.unavailable, "cannot open the store in \(directory.path): \(error)", cause: error)
    }
}
