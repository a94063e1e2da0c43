import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The views' side of the durable backend: what they need when a store opens, keeping
/// them in step with the log (catching up, repairing, rebuilding), their headroom, and
/// the faults that stop commits while reads go on.
extension LMDBBackend {
    /// Why the views take no commit now: commits fail with its error while reads go on.
    enum ViewsFault {
        /// They stop before the log's last event (the second half of a commit failed, or
        /// the disk was full when the store opened), or could not be recorded as open:
        /// repaired before the next commit, which fails with this error if that fails.
        case behind(ChordStoreError)
        /// A damaged log record, or views of no log: until a rebuild or a reopen.
        case damaged(ChordStoreError)

        var error: ChordStoreError {
            switch self {
            case .behind(let error), .damaged(let error): error
            }
        }
    }

    /// Brings the views to the log's last event (see ``ViewsPlan``). When the disk is full
    /// (the views could not be recorded as open, `markFailure`, or could not take the
    /// events), views that can serve reads are kept as they are and the next commit
    /// repairs them; views that must be rebuilt fail the open.
    func openViews(markFailure: ChordStoreError?, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        let plan: ViewsPlan
        do {
            plan = try viewsPlan()
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        if let markFailure {
            guard plan.servesReads else {
                throw ChordStoreError(.resourceExhausted, "the views must be rebuilt from the log, and \(markFailure.message)")
            }
            viewsFault.withLock { $0 = .behind(markFailure) }
            return
        }
        do throws(ChordStoreError) {
            switch plan {
            case .current:
                break
            case .catchUp:
                do {
                    try withGrowingMap { try foldMissingEvents() }
                } catch {
                    throw ChordStoreError.wrapping(error)
                }
                let head = committedHead.withLock { $0 }.sequence
                progress(head, head)
            case .rebuild:
                try rebuildViews(through: nil, progress: progress)
            }
        } catch where error.code == .dataLoss {
            // A damaged record: open anyway (reads see the views as they are, verify names
            // the record) but take no writes until the log is repaired and rebuilt.
            viewsFault.withLock {
                $0 = .damaged(ChordStoreError(
                    .dataLoss, "the views cannot take the log (\(error.message)); run verify, repair the log, then rebuild"))
            }
        } catch where error.code == .resourceExhausted && plan.servesReads {
            viewsFault.withLock { $0 = .behind(error) }
        }
    }

    var viewsDamage: ChordStoreError? {
        viewsFault.withLock { fault in if case .damaged(let error) = fault { error } else { nil } }
    }

    func viewsPlan() throws -> ViewsPlan {
        let logHead = committedHead.withLock { $0 }
        return try viewsEnv.withReadTransaction { viewsTxn in
            let layout = try viewsTxn.get(dbs.meta, key: StoreDatabases.viewsKey).map(Array.init) == [Self.viewsVersion]
            let applied = layout ? try AppliedHead.read(viewsTxn, dbs) : .empty
            let checksum = try logEnv.withReadTransaction { logTxn in
                try logTxn.get(dbs.log, key: StoreKeys.sequence(applied.sequence)).flatMap(RecordCodec.storedChecksum)
            }
            return ViewsPlan(currentLayout: layout, applied: applied, logHead: logHead, logChecksumAtApplied: checksum, maxCatchUp: Self.maxCatchUp)
        }
    }

    /// Writes `views/open` once per opening, before anything writes the views (when the
    /// open could not, for a full disk, the first repair or rebuild does).
    func ensureMarkedOpen() throws(ChordStoreError) {
        guard !markedOpen.load(ordering: .acquiring) else { return }
        try marker.markOpen()
        markedOpen.store(true, ordering: .releasing)
    }

    /// Checks the sequence numbers and checksum chain of the log's last ``tailCheck``
    /// records; returns the first problem.
    func checkLogTail() -> ChordStoreError? {
        let head = committedHead.withLock { $0 }.sequence
        guard head > 0 else { return nil }
        let first = head > Self.tailCheck ? head - Self.tailCheck + 1 : 1
        do {
            try RecordChain.forEach(in: LogRecords(backend: self), from: first) { _, _ in true }
        } catch {
            return ChordStoreError.wrapping(error)
        }
        return nil
    }

    /// Before a commit: views left behind are repaired first; damaged ones refuse it; and
    /// the views' map keeps its headroom.
    func prepareViews() throws(ChordStoreError) {
        switch viewsFault.withLock({ $0 }) {
        case nil: break
        case .damaged(let error): throw error
        case .behind: try repairViews()
        }
        try keepViewsHeadroom()
    }

    /// The least room the views' map keeps free before a commit.
    static let viewsHeadroom = 1 << 20

    /// Grows the views' map before a commit once less than ``viewsHeadroom`` (or an eighth
    /// of it) is free. A commit whose folds overflow the map fails before the log commits
    /// and is retried after a growth (a follower's batch is folded after its log's commit:
    /// a fold that overflows it then is retried after a growth too); but the views' own
    /// commit allocates a few pages too, after the log's: without headroom, a full disk
    /// there would leave the views behind a log they cannot catch up with. On a full disk the commit is refused while
    /// less than a quarter of the headroom is left.
    func keepViewsHeadroom() throws(ChordStoreError) {
        let usage = viewsEnv.usage
        guard usage.spare < max(Self.viewsHeadroom, usage.mapSize / 8) else { return }
        guard usage.mapSize < maxMapSize else {
            if usage.spare >= Self.viewsHeadroom / 4 { return }
            throw mapFull([viewsEnv])
        }
        do {
            try viewsEnv.grow(by: min(usage.mapSize, maxMapGrowth), upTo: maxMapSize)
        } catch {
            if error.isDiskFull, usage.spare >= Self.viewsHeadroom / 4 { return }
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Records the views as open if they are not yet, folds the log's events they lack,
    /// and checks that they end where the log does. Clears the fault on success; on
    /// failure records it (`damaged` for a damaged record or views of no log, `behind`
    /// otherwise, a full disk for one) and throws it.
    func repairViews() throws(ChordStoreError) {
        do {
            try ensureMarkedOpen()
            try withGrowingMap { try foldMissingEvents() }
            let applied = try viewsEnv.withReadTransaction { txn in try AppliedHead.read(txn, dbs) }
            let logHead = committedHead.withLock { $0 }
            guard applied.position == logHead.position else {
                throw ChordStoreError(
                    .dataLoss, "the views stop at \(applied.position), the log at \(logHead.position); restart the server to rebuild them")
            }
            viewsFault.withLock { $0 = nil }
        } catch {
            let wrapped = ChordStoreError.wrapping(error)
            let fault: ViewsFault = if wrapped.code == .dataLoss || wrapped.reason == .diverged {
                .damaged(ChordStoreError(
                    .unavailable, "the views could not take events the log holds (\(wrapped.message)); restart the server to rebuild them"))
            } else {
                .behind(wrapped)
            }
            viewsFault.withLock { $0 = fault }
            throw fault.error
        }
    }

    /// Refuses a commit whose views do not stop at the log's last event (what a failed
    /// repair could leave): folding onto them would give views of no log. Reads go on;
    /// the next commit repairs them first.
    func checkViews(_ viewsTxn: Transaction, at start: LogHead) throws {
        let applied = try AppliedHead.read(viewsTxn, dbs)
        guard applied.position == start.position else {
            let fault = ChordStoreError(
                .unavailable, "the views stop at \(applied.position), the log at \(start.position); they are repaired before the next commit")
            viewsFault.withLock { $0 = .behind(fault) }
            throw fault
        }
    }

    /// Folds the log's events after the views' applied one into the views, in one
    /// transaction, with the replica's checks (``ReplicaApplier``): the records are
    /// already in the log, so only the views and the command ids take them.
    func foldMissingEvents() throws {
        try viewsEnv.withWriteTransaction { viewsTxn in
            try logEnv.withReadTransaction { logTxn in
                let head = try AppliedHead.read(viewsTxn, dbs)
                var space = LMDBStoreSpace(txn: viewsTxn, logTxn: logTxn, dbs: dbs, logHead: head, storesRecords: false)
                var records: [[UInt8]] = []
                try logTxn.withCursor(dbs.log) { cursor in
                    var entry = try StoreKeys.sequence(head.sequence + 1).withUnsafeBytes { try cursor.seek(atLeast: $0) }
                    while let current = entry {
                        records.append(Array(current.value))
                        entry = try cursor.next()
                    }
                }
                try ReplicaApplier.apply(records, after: head.position, to: &space)
                try space.flush()
                try AppliedHead.write(space.logHead, viewsTxn, dbs)
            }
        }
    }

    /// Replays the log (up to `last`, or all of it) into memory (the domain fold), then
    /// replaces the views with the result in one transaction of the views, writing every
    /// index in key order with `MDB_APPEND`. Atomic: a crash leaves the old views.
    func rebuildViews(through last: UInt64?, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        try ensureMarkedOpen()
        try suspendRestorePoints()
        defer { resumeRestorePoints() }
        let logHead = committedHead.withLock { $0 }
        let total = min(last ?? .max, logHead.sequence)
        do {
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs, at: total) }
            var replay: StoreSet
            do {
                // The load after the replay takes as long again: 100% is said once it is done.
                replay = try LogReplay.replay(self, through: total) { done, all in progress(min(done, max(all, 1) - 1), all) }
            } catch {
                throw error.error
            }
            replay.logHead = head
            try loadViews(replay)
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        progress(total, total)
    }

    /// Replaces the views with `set` (a replay, or a copy of the live state) in one
    /// transaction of the views, writing every index in key order with `MDB_APPEND`
    /// (``ViewLoader``); they then hold the log up to `set.logHead`. Atomic: a crash
    /// leaves the old views.
    func loadViews(_ set: StoreSet) throws(ChordStoreError) {
        do {
            // The map grows once to what the load will take on top of the pages the views
            // it replaces hold (freed only when the load commits; pages free already are
            // taken again). If that falls short, the load is retried after a growth of the
            // views' map (the only one it writes).
            let inUse = try viewsEnv.withReadTransaction { txn in try dbs.views.reduce(0) { try $0 + txn.stat($1).pages } }
            let wanted = inUse * viewsEnv.pageSize + ViewLoader.estimatedBytes(set)
            let mapSize = viewsEnv.mapSize
            if wanted > mapSize { try? viewsEnv.grow(by: wanted - mapSize, upTo: maxMapSize) }
            // Made once; only the load is retried if the views' map must grow.
            try withGrowingMap(only: viewsEnv) {
                viewLoads.wrappingAdd(1, ordering: .relaxed)
                try viewsEnv.withWriteTransaction { txn in
                    for db in dbs.views { try txn.empty(db) }
                    try ViewLoader.load(set, txn: txn, dbs: dbs)
                    try txn.put(dbs.meta, key: StoreDatabases.viewsKey, value: [Self.viewsVersion])
                    try AppliedHead.write(set.logHead, txn, dbs)
                }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }
}
