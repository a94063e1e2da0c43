import ChordStoreRecords
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
///
/// With live state (`LMDBBackend+Live.swift`), commits and reads use a state in memory
/// instead, saved whole as the checkpoint; the views then take no commit.
final class LMDBBackend: StorageBackend {
    /// The on-disk format this code writes and reads: 4 has tokens (records may carry the
    /// id of the token that made them, and token events; format 3's records are format 4's
    /// made without tokens, so opening one only raises the number); 3 has stores (records may carry a
    /// store and a log position; format 2's records are all store `default`'s, so opening
    /// one only raises the number); 2 keeps the views in `views/` (format 1 kept them in
    /// the log's environment; opening one moves them). An older chordstore refuses a
    /// newer format, naming it. Every format has a golden fixture under Tests/Fixtures.
    static let formatVersion: UInt8 = 4
    /// The layout of the view databases. A store whose views have another layout (or
    /// none) gets them rebuilt from the log when opened. 9: the chord index holds no entry
    /// for a chord whose id is derived from its chordset's (``DerivedChordIDs``); 8: the live tokens; 7: every
    /// store's views under its 4-byte id, the registry of stores and each store's index
    /// into the log.
    static let viewsVersion: UInt8 = 9
    /// The views layouts a read-only copy (``ViewsOnlyBackend``) can read: this one, and 8,
    /// which indexes every chord, derived ids too (a derived id is looked up in its
    /// chordset first, then in the index, so the extra entries do no harm).
    static let readableViewsVersions: Set<UInt8> = [viewsVersion, 8]
    /// Most events caught up one by one when a store opens; a longer lag is rebuilt.
    static let maxCatchUp: UInt64 = 10_000

    /// How many of the log's last records are checked (sequence and checksum chain) when
    /// a store opens; the whole log is checked by `verify`.
    static let tailCheck: UInt64 = 100_000

    let logEnv: Environment
    let viewsEnv: Environment
    let dbs: StoreDatabases
    private let lock: DirectoryLock
    let marker: ViewsMarker
    /// Whether `views/open` records this opening (the views may be written).
    let markedOpen = Atomic(false)
    /// The last committed record; only the writer thread changes it.
    let committedHead: Mutex<LogHead>
    let viewsFault = Mutex<ViewsFault?>(nil)
    /// The refusal of the last commit that needed a map past ``maxMapSize``, until a
    /// commit succeeds again (`hasMapLimitRefusal` spares that commit the lock).
    private let mapLimitRefusal = Mutex<ChordStoreError?>(nil)
    private let hasMapLimitRefusal = Atomic(false)
    let maxMapGrowth: Int
    /// The most each map grows to.
    let maxMapSize: Int
    let snapshotFiles: SnapshotFiles?
    let metrics: EngineMetrics
    /// How many times rebuilds have loaded the views, retries after a map growth included:
    /// one rebuild should load once (a test checks it).
    let viewLoads = Atomic(0)
    /// The live state, when it is kept (``ChordStore/Options/liveState``); see
    /// `LMDBBackend+Live.swift`.
    let liveSlot = Mutex<LeftRight<StoreSet>?>(nil)
    /// The thread that saves the live state in the background.
    let saverSlot = Mutex<LiveStateSaver?>(nil)
    /// The last event the views hold, with live state (whatever brings them up keeps it).
    let viewsApplied = Atomic<UInt64>(0)
    /// Held by whoever writes the views, with live state, where more than one thread may:
    /// bringing them up (`bringViewsUp`, for a backup's copy or verify), rebuilds and
    /// truncations.
    let viewsWriter = Mutex<Void>(())
    /// Why the live state could not be built when the store opened (it then serves its
    /// views), or `nil`.
    let liveFailure = Mutex<ChordStoreError?>(nil)
    /// With live state, the least events between two background saves of it.
    let liveStateSaveEvents: UInt64
    /// With live state, where uses of stores are noted and loads left, under the memory
    /// bound (``ChordStore/Options/maxStateMemory``; `Int.max` without one); `nil` without
    /// live state.
    let residency: StateResidency?
    /// The thread that keeps the live state under its memory bound, if it runs.
    let evictorSlot = Mutex<StateEvictor?>(nil)
    /// The views' commit the last restore point names, pinned (see
    /// `LMDBBackend+RestorePoint.swift`); its lock serializes restore points.
    let pinnedViews = Mutex(PinnedViews())
    /// The thread that takes the views' restore points, if it runs.
    let viewsSyncer = Mutex<ViewsSyncer?>(nil)
    /// Restore points taken since the store opened (for tests).
    let restorePoints = Atomic(0)
    /// Who is told what the background work gave up (``ChordStore/Options/warn``).
    let warn: (@Sendable (String) -> Void)?
    /// What the views' restore point did when the store opened after a machine crash, or
    /// `nil` if there was none to use.
    let viewsRecovery = Mutex<ViewsRecovery?>(nil)
    /// Where the live state is saved, at a close and in the background (``LiveStateFile``).
    let liveStateURL: URL
    /// How the live state was built when the store opened (`nil`: no live state).
    let liveStart = Mutex<LiveStart?>(nil)

    /// Opens or creates the store in `directory`, catching the views up with the log or
    /// rebuilding them when needed, then checks the log's last records. A full disk does
    /// not stop a store from opening when its views can serve reads: it takes writes
    /// again once space is freed (see ``writeRefusal``).
    init(directory: URL, options: ChordStore.Options, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let viewsDirectory = directory.appendingPathComponent("views")
        try PrivateDirectory.create(directory)
        try PrivateDirectory.checkWritableByOwnerOnly(directory)
        try PrivateDirectory.create(viewsDirectory)
        lock = try DirectoryLock(directory: directory, inUse: options.directoryInUse)
        marker = ViewsMarker(viewsDirectory: viewsDirectory)
        maxMapGrowth = max(1 << 20, options.maxMapGrowth)
        liveStateSaveEvents = options.liveStateSaveEvents
        // Without a bound too: stores a start found evicted (saved under one) are put back
        // after a read, and a command folds a large one ahead.
        residency = options.liveState ? StateResidency(bound: max(0, options.maxStateMemory ?? .max)) : nil
        warn = options.warn
        liveStateURL = directory.appendingPathComponent(LiveStateFile.name)
        maxMapSize = max(1 << 20, options.maxMapSize)
        metrics = EngineMetrics(factory: options.metrics)
        snapshotFiles = SnapshotFiles(directory: directory.appendingPathComponent("snapshots"), interval: options.snapshotInterval)
        var logOptions = Environment.Options()
        logOptions.mapSize = min(max(1 << 16, options.initialMapSize), maxMapSize)
        logOptions.noSync = options.unsafeNoSync
        logOptions.maxDatabases = 32
        // The views' file is as large as their map, its blocks reserved: start small (the
        // map doubles as it fills; on a small disk it opens smaller still). Where a
        // reserved block does not stay reserved (copy-on-write filesystems), they are
        // written with write(2) instead, which a full disk fails without a signal.
        var viewsOptions = Environment.Options()
        viewsOptions.mapSize = max(1 << 16, min(options.initialMapSize, 1 << 25, maxMapSize))
        viewsOptions.noSync = true
        viewsOptions.writeMap = Environment.reservesBlocks(in: viewsDirectory)
        viewsOptions.maxDatabases = 32
        var markFailure: ChordStoreError?
        var outcome: RestoreOutcome?
        do {
            logEnv = try Environment(directory: directory, options: logOptions)
            try Self.checkFormat(logEnv)
            if !marker.viewsTrusted { outcome = try Self.recoverViews(in: viewsDirectory, marker: marker) }
            markFailure = try Self.markOpen(marker, viewsExist: FileManager.default.fileExists(
                atPath: viewsDirectory.appendingPathComponent("data.mdb").path))
            viewsEnv = try Environment(directory: viewsDirectory, options: viewsOptions)
            let dbs = try StoreDatabases(log: logEnv, views: viewsEnv)
            self.dbs = dbs
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs) }
            committedHead = Mutex(head)
        } catch {
            throw Self.openError(error, directory: directory)
        }
        markedOpen.store(markFailure == nil, ordering: .releasing)
        // With live state the views are brought up only when something reads them, or
        // when the state cannot be built (`startLive`).
        if !options.liveState { try openViews(markFailure: markFailure, progress: progress) }
        let recovery: ViewsRecovery? = switch outcome {
        case nil: nil
        case .unusable(let why): .unusable(why: why)
        // Restored views that were still too far behind the log, or not this log's, were rebuilt.
        case .restored(let applied):
            viewLoads.load(ordering: .relaxed) > 0
                ? .unusable(why: "the views' state there was too far behind the log, or not this log's")
                : .restored(applied: applied, logHead: committedHead.withLock { $0 }.sequence)
        }
        viewsRecovery.withLock { $0 = recovery }
        if let damage = checkLogTail() {
            viewsFault.withLock {
                $0 = .damaged(ChordStoreError(
                    .dataLoss,
                    "the log is damaged: \(damage.message). Writes are refused; reads of undamaged events go on. Restore the data directory from a backup or a replica",
                    reason: .logDamaged))
            }
        }
        if options.liveState { try startLive(markFailure: markFailure, progress: progress) }
        // The state in memory did not need the views: nothing caught them up or rebuilt them.
        if live != nil { viewsRecovery.withLock { $0 = nil } }
        // With live state the saved state is the restore point: the views take no commit.
        if let interval = options.restorePointInterval, live == nil {
            startViewsSyncer(interval: interval, events: options.restorePointEvents)
        }
    }

    /// Why commits are refused now, if they are: a full disk (until space is freed), a
    /// damaged log (until it is repaired and the views rebuilt), or a map at
    /// ``maxMapSize`` (since the last commit refused for it, until one succeeds).
    /// With live state, views behind the log refuse nothing (they take no commit).
    var writeRefusal: ChordStoreError? {
        let fault = viewsFault.withLock { fault -> ChordStoreError? in
            if case .behind? = fault, live != nil { return nil }
            return fault?.error
        }
        return fault ?? (hasMapLimitRefusal.load(ordering: .acquiring) ? mapLimitRefusal.withLock { $0 } : nil)
    }

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout IncreasingIDs) -> [Result<CommittedEvent, ChordStoreError>] {
        if let live { return commitLive(live, batch, applier: applier, generator: &generator) }
        do {
            return try logAndFold { space in
                try applier.apply(batch, to: &space, now: .now, generator: &generator)
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
    }

    func withStores<T>(_ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if viewsEnv.isClosed { throw ChordStoreError(.unavailable, "the store is closed") }
        if let live { return try withLiveStores(live, body) }
        return try withViewStores(body)
    }

    /// Runs `body` on the views (with live state, as far as they were brought up: see
    /// ``bringViewsUp()``).
    func withViewStores<T>(_ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if viewsEnv.isClosed { throw ChordStoreError(.unavailable, "the store is closed") }
        do {
            // Views first: the log then holds at least every event they reflect.
            return try viewsEnv.withReadTransaction { viewsTxn in
                try logEnv.withReadTransaction { logTxn in
                    try body(LMDBStoreSpace(txn: viewsTxn, logTxn: logTxn, dbs: dbs, logHead: try AppliedHead.read(viewsTxn, dbs)))
                }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func logHead() throws(ChordStoreError) -> LogHead { committedHead.withLock { $0 } }

    /// The last event the views hold.
    func viewsHead() throws(ChordStoreError) -> LogHead {
        do {
            return try viewsEnv.withReadTransaction { try AppliedHead.read($0, dbs) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// With live state, the live state is checked, then the state saved last
    /// (``LiveStateFile``, against a replay up to the event it reflects), then the views
    /// once brought up (``bringViewsUp()``; against a replay up to the last event they
    /// hold, should a full disk keep them from being brought up). Views damaged since the
    /// store opened are a problem.
    func verify(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) -> VerifyReport {
        let report = try withStores { try Verifier.verify($0, backend: self, progress: progress) }
        guard live != nil, report.isSound else { return report }
        let saved = try verifySavedLive(progress: progress)
        guard saved.isSound else { return saved }
        do throws(ChordStoreError) {
            try bringViewsUp()
        } catch where error.code == .resourceExhausted {
            // A full disk: the views are checked up to the last event they hold.
        } catch {
            return VerifyReport(events: report.events, problem: error)
        }
        if case .damaged(let error)? = viewsFault.withLock({ $0 }) { return VerifyReport(events: report.events, problem: error) }
        return try withViewStores { try Verifier.verify($0, backend: self, progress: progress) }
    }

    func rebuild(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        try viewsWriter.withLock { _ throws(ChordStoreError) in
            try rebuildViews(through: nil, progress: progress)
            if let live {
                try replaceLive(live, through: nil)
                viewsApplied.store(committedHead.withLock { $0 }.sequence, ordering: .releasing)
            }
        }
        viewsFault.withLock { $0 = nil }
    }

    /// The log alone takes the batch, in one durable commit, and `logged` is called; then
    /// the views fold it, in a commit of their own (see ``foldLogged(_:after:)``). A
    /// follower thus acknowledges a batch without waiting for its fold.
    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition, logged: (LogHead) -> Void) throws(ChordStoreError) -> LogHead {
        if let live { return try appendReplicatedLive(live, records, after: previous, logged: logged) }
        try prepareViews()
        let start = committedHead.withLock { $0 }
        let head = try appendToLog(records, after: previous, start: start)
        committed(head)
        logged(head)
        foldLogged(records, after: start)
        return head
    }

    /// A follower's batch into the log alone, checked (``ReplicaApplier/appendToLog(_:after:head:_:)``),
    /// in one durable commit; returns the log's new last record.
    func appendToLog(_ records: [[UInt8]], after previous: LogPosition, start: LogHead) throws(ChordStoreError) -> LogHead {
        var appended = ContinuousClock.now
        let head: LogHead
        do {
            head = try withGrowingMap(only: logEnv) {
                try logEnv.withWriteTransaction { logTxn in
                    let head = try ReplicaApplier.appendToLog(records, after: previous, head: start) { sequence, record in
                        try KeyBytes.sequence(sequence).withViewBytes { key in
                            try record.withUnsafeBytes { try logTxn.put(dbs.log, key: key, value: $0, flags: .append) }
                        }
                    }
                    appended = .now
                    return head
                }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        metrics.logSynced(in: ContinuousClock.now - appended)
        return head
    }

    /// Folds records the log has just taken into the views, in one commit of the views.
    /// A failure is recorded as a fault of the views (``repairViews()``): the log keeps
    /// the batch, and the views catch up before the next commit, or stay damaged until
    /// they are rebuilt if a record cannot be folded.
    private func foldLogged(_ records: [[UInt8]], after start: LogHead) {
        do {
            var defaultHead: UInt64 = 0
            try withGrowingMap {
                try viewsEnv.withWriteTransaction { viewsTxn in
                    try logEnv.withReadTransaction { logTxn in
                        try checkViews(viewsTxn, at: start)
                        var space = LMDBStoreSpace(txn: viewsTxn, logTxn: logTxn, dbs: dbs, logHead: start, storesRecords: false)
                        try ReplicaApplier.foldLogged(records, after: start, to: &space)
                        try space.flush()
                        try AppliedHead.write(space.logHead, viewsTxn, dbs)
                        defaultHead = try space.store(id: 0)?.head ?? 0
                    }
                }
            }
            snapshotFiles?.maybeTake(head: defaultHead, backend: self)
        } catch {
            try? repairViews()
        }
    }

    /// Records `head` as the log's last committed record, and that a commit succeeded.
    func committed(_ head: LogHead) {
        committedHead.withLock { $0 = head }
        noteViewsCommitted(logHead: head.sequence)
        if hasMapLimitRefusal.load(ordering: .relaxed) {
            mapLimitRefusal.withLock { $0 = nil }
            hasMapLimitRefusal.store(false, ordering: .releasing)
        }
    }

    func importEvents(_ events: [RecordedEvent], store name: String, epoch: UInt64, decider: Decider) throws(ChordStoreError) -> LogHead {
        if let live { return try importLive(live, events, store: name, epoch: epoch, decider: decider) }
        return try logAndFold { space in
            try ImportApplier.apply(events, store: name, epoch: epoch, decider: decider, to: &space)
        }
    }

    /// One turn of the writer: `fold` appends records to the log and folds them into the
    /// views, in a transaction of each; the log commits (durably) first, then the views.
    /// Throws only if the log did not take the batch. If the views' commit fails after
    /// the log's, the views are caught up at once (or before the next commit).
    private func logAndFold<T>(_ fold: (inout LMDBStoreSpace) throws -> T) throws(ChordStoreError) -> T {
        try prepareViews()
        let start = committedHead.withLock { $0 }
        var logged: (result: T, head: LogHead, defaultHead: UInt64)?
        var viewsCommitted = false
        do {
            try withGrowingMap {
                guard logged == nil else { return }  // the log holds the batch: never apply it twice
                try viewsEnv.withWriteTransaction { viewsTxn in
                    var folded = ContinuousClock.now
                    logged = try logEnv.withWriteTransaction { logTxn in
                        try checkViews(viewsTxn, at: start)
                        var space = LMDBStoreSpace(txn: viewsTxn, logTxn: logTxn, dbs: dbs, logHead: start)
                        let result = try fold(&space)
                        try space.flush()
                        if space.logHead != start { try AppliedHead.write(space.logHead, viewsTxn, dbs) }
                        folded = .now
                        return (result, space.logHead, try space.store(id: 0)?.head ?? 0)
                    }
                    metrics.logSynced(in: ContinuousClock.now - folded)
                }
                viewsCommitted = true
            }
        } catch {
            if logged == nil { throw ChordStoreError.wrapping(error) }
        }
        guard let logged else { throw ChordStoreError(.internal, "the commit ended without a result") }
        committed(logged.head)
        if !viewsCommitted { try? repairViews() }
        snapshotFiles?.maybeTake(head: logged.defaultHead, backend: self)
        return logged.result
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

    func storedGrant() throws(ChordStoreError) -> EpochGrant? {
        do {
            return try logEnv.withReadTransaction { txn in
                guard let bytes = try txn.get(dbs.logMeta, key: StoreDatabases.epochGrantKey) else { return nil }
                guard let grant = EpochGrant(bytes: Array(bytes)) else {
                    throw ChordStoreError(.dataLoss, "the epoch this node granted last is damaged (\(bytes.count) bytes)")
                }
                return grant
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func storeEpoch(_ epoch: UInt64, grant: EpochGrant?) throws(ChordStoreError) {
        do {
            try logEnv.withWriteTransaction { txn in
                try txn.put(dbs.logMeta, key: StoreDatabases.epochKey, value: StoreKeys.sequence(epoch))
                if let grant { try txn.put(dbs.logMeta, key: StoreDatabases.epochGrantKey, value: grant.bytes) }
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

    /// Syncs the views to disk and records the clean close, then releases the files. With
    /// live state, the state is saved first (the background save in progress, if any,
    /// ends before; the close saves nothing if that save, or an earlier one, holds the
    /// last committed event).
    func close() {
        evictorSlot.withLock { $0 }?.stop()
        if let saver = saverSlot.withLock({ $0 }) {
            saver.stop()
            if saver.lastSaved != live?.read({ $0.logHead.sequence }) { saveLive() }
        }
        stopViewsSyncer()
        if !viewsEnv.isClosed {
            if (try? viewsEnv.sync()) != nil { marker.markClosed() } else { marker.markUnsynced() }
        }
        viewsEnv.close()
        logEnv.close()
        lock.release()
    }

    /// Runs `body`, growing the maps and retrying whenever it fails with `MDB_MAP_FULL`
    /// (at most 32 times: a batch that needs more is refused, not retried forever). The
    /// error does not say which map is full: those that are nearly full grow, or both
    /// when neither is (a batch larger than the room left). A map grows up to
    /// ``maxMapSize``; when only maps at that limit could have run out, the batch is
    /// refused, naming them. With `environment`, `body` writes that one alone: only it
    /// grows.
    func withGrowingMap<T>(only environment: Environment? = nil, _ body: () throws -> T) throws -> T {
        for _ in 0..<32 {
            do {
                return try body()
            } catch let error as LMDBError where error.isMapFull {
                let environments = environment.map { [$0] } ?? [logEnv, viewsEnv]
                let nearlyFull = environments.filter { env in
                    let usage = env.usage
                    return usage.spare < max(Self.viewsHeadroom, usage.mapSize / 8)
                }
                let candidates = nearlyFull.isEmpty ? environments : nearlyFull
                let growing = candidates.filter { $0.mapSize < maxMapSize }
                guard !growing.isEmpty else { throw mapFull(candidates) }
                for env in growing { try env.grow(by: min(env.mapSize, maxMapGrowth), upTo: maxMapSize) }
            }
        }
        throw ChordStoreError(
            .resourceExhausted, "the LMDB maps are full and did not grow enough (now \(logEnv.mapSize) and \(viewsEnv.mapSize) bytes)",
            reason: .diskFull)
    }

    /// Before a backup's copy: grows each map with less than a quarter free, so that
    /// commits during the copy (which a growth would have to wait for) rarely need one.
    /// A map that cannot grow now (a full disk, its limit) is left as it is.
    func growAheadOfCopy() {
        for env in [logEnv, viewsEnv] {
            let usage = env.usage
            guard usage.mapSize > 0, usage.spare < usage.mapSize / 4, usage.mapSize < maxMapSize else { continue }
            try? env.grow(by: min(usage.mapSize, maxMapGrowth), upTo: maxMapSize)
        }
    }

    /// The refusal of a commit that needs more room than `full` (maps at their limit)
    /// may grow to; ``writeRefusal`` reports it until a commit succeeds.
    func mapFull(_ full: [Environment]) -> ChordStoreError {
        let names = full.map { $0 === logEnv ? "the log's" : "the views'" }.joined(separator: " and ")
        let refusal = ChordStoreError(
            .resourceExhausted,
            "the map is full: \(names) reached the limit of \(maxMapSize >> 20) MiB (--map-size-max); writes are refused, reads go on. Restart with a larger --map-size-max to take writes again",
            reason: .diskFull)
        mapLimitRefusal.withLock { $0 = refusal }
        hasMapLimitRefusal.store(true, ordering: .releasing)
        return refusal
    }

    var storageUsage: StorageUsage? {
        let log = logEnv.usage, views = viewsEnv.usage
        guard log.mapSize > 0, views.mapSize > 0 else { return nil }
        return StorageUsage(
            logBytes: log.mapSize - log.spare, logMapBytes: log.mapSize, viewsBytes: views.mapSize - views.spare,
            viewsMapBytes: views.mapSize, maxMapBytes: maxMapSize, freeDiskBytes: logEnv.freeBytes)
    }

    /// Checks the log environment's format, creating it (new store) or moving a format 1
    /// store's views out (they are dropped here and rebuilt in `views/`).
    private static func checkFormat(_ env: Environment) throws {
        let meta = try env.openDatabase("meta")
        let stored = try env.withReadTransaction { txn in try txn.get(meta, key: StoreDatabases.formatKey).map(Array.init) }
        if let stored, stored.count != 1 || stored[0] > Self.formatVersion {
            let shown = stored.count == 1 ? "\(stored[0])" : "\(stored)"
            throw ChordStoreError(
                .failedPrecondition,
                "the data directory has format \(shown), newer than this chordstore reads (\(Self.formatVersion)): open it with the chordstore that wrote it, or a newer one")
        }
        if stored == [Self.formatVersion] { return }
        if stored == [2] || stored == [3] {
            // Format 2's records are format 3's records of store `default`, and format 3's
            // are format 4's made without tokens.
            try env.withWriteTransaction { txn in try txn.put(meta, key: StoreDatabases.formatKey, value: [Self.formatVersion]) }
            return
        }
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

    /// Records the views as open before anything writes them. Views that exist may wait
    /// for a full disk to have room (they are only read until then): the failure is
    /// returned. New ones may not: it is thrown.
    private static func markOpen(_ marker: ViewsMarker, viewsExist: Bool) throws(ChordStoreError) -> ChordStoreError? {
        do {
            try marker.markOpen()
            return nil
        } catch {
            guard error.code == .resourceExhausted, viewsExist else { throw error }
            return error
        }
    }

    private static func openError(_ error: any Error, directory: URL) -> ChordStoreError {
        if let error = error as? ChordStoreError { return error }
        return ChordStoreError(.unavailable, "cannot open the store in \(directory.path): \(error)", cause: error)
    }
}
