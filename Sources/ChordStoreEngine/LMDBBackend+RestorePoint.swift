import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The views' restore point (``ViewsRestorePoint``): taken in the background while the
/// store is open (``ChordStore/Options/restorePointInterval``), used when it opens after a
/// machine crash.
extension LMDBBackend {
    /// What the views' restore point did when the store opened after a machine crash.
    enum ViewsRecovery: Equatable {
        /// The views went back to the restore point, which held events up to `applied`,
        /// and caught up with the log's events up to `logHead`.
        case restored(applied: UInt64, logHead: UInt64)
        /// There was one, but it could not be used (`why`): the views were rebuilt.
        case unusable(why: String)
    }

    /// The views' pinned commits, and whether restore points may be taken.
    struct PinnedViews {
        /// The commits pinned, the one the restore point names last (an earlier one stays
        /// pinned while the file's rename may not be durable).
        var commits: [PinnedCommit] = []
        /// Rebuilds of the views running: no restore point is taken meanwhile.
        var suspended = 0
        /// The last restore point tried could not be written (said once per run of them).
        var failing = false

        mutating func unpinAll() {
            for commit in commits { commit.release() }
            commits = []
        }
    }

    /// What ``recoverViews(in:marker:)`` did with a restore point, before the views open.
    enum RestoreOutcome {
        /// The views are the restore point's state, which holds events up to `applied`.
        case restored(applied: UInt64)
        /// The restore point could not be used (`why`): the views' files are gone.
        case unusable(why: String)
    }

    /// Makes the views, left open by another boot, the state their restore point recorded,
    /// if it is the one the opening that left them open took, and that state opens and
    /// ends at the restore point's event. Otherwise removes the views' files (they are
    /// rebuilt from the log; throws if they cannot be removed). Returns what it did, `nil`
    /// if there was no restore point. Call it before the views are opened.
    static func recoverViews(in viewsDirectory: URL, marker: ViewsMarker) throws -> RestoreOutcome? {
        let outcome = restore(in: viewsDirectory, marker: marker)
        let restored = if case .restored? = outcome { true } else { false }
        for file in ["lock.mdb"] + (restored ? [] : ["data.mdb"]) {
            let url = viewsDirectory.appendingPathComponent(file)
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
        }
        return outcome
    }

    private static func restore(in viewsDirectory: URL, marker: ViewsMarker) -> RestoreOutcome? {
        guard let point = ViewsRestorePoint.read(in: viewsDirectory) else {
            let exists = FileManager.default.fileExists(atPath: ViewsRestorePoint.file(in: viewsDirectory).path)
            return exists ? .unusable(why: "views/restore-point is damaged") : nil
        }
        guard let opening = marker.openingLeftOpen, point.opening == opening else {
            return .unusable(why: "views/restore-point is an earlier opening's")
        }
        guard FileManager.default.fileExists(atPath: viewsDirectory.appendingPathComponent("data.mdb").path) else {
            return .unusable(why: "the views' file is missing")
        }
        do {
            try Environment.rollBack(directory: viewsDirectory, to: point.meta)
            // Opened read-only, without the lock file the crash left: the state's main
            // database and its record of the last event must read, and name the restore
            // point's event.
            var options = Environment.Options()
            options.readOnly = true
            options.maxDatabases = 32
            let env = try Environment(directory: viewsDirectory, options: options)
            defer { env.close() }
            let dbs = try StoreDatabases(readOnlyViews: env)
            let applied = try env.withReadTransaction { try AppliedHead.read($0, dbs) }
            guard applied.sequence == point.applied else {
                return .unusable(why: "the views' state there ends at event \(applied.sequence), not \(point.applied)")
            }
            return .restored(applied: point.applied)
        } catch {
            return .unusable(why: "the views' state there does not open: \(error)")
        }
    }

    /// Takes a restore point of the views now, unless the last one holds their state
    /// already; returns the last event it covers, or `nil` if none could be taken. The
    /// views' commit stays pinned until the next restore point replaces it. One that
    /// cannot be written (a full disk) removes the last one rather than keep its commit
    /// pinned with no end (its pages would never be reused).
    @discardableResult
    func takeRestorePoint() -> UInt64? {
        let (covered, warning) = pinnedViews.withLock { pinned -> (UInt64?, String?) in
            guard pinned.suspended == 0, !viewsEnv.isClosed, markedOpen.load(ordering: .acquiring), viewsDamage == nil else { return (nil, nil) }
            guard let (commit, applied) = try? viewsEnv.pinLastCommit({ try AppliedHead.read($0, dbs).sequence }) else { return (nil, nil) }
            if let last = pinned.commits.last, last.meta.transactionID == commit.meta.transactionID {
                commit.release()
                return (applied, nil)
            }
            var renamed = false
            do {
                try viewsEnv.sync()
                try ViewsRestorePoint(opening: marker.opening, applied: applied, meta: commit.meta).write(in: viewsEnv.directory, renamed: &renamed)
            } catch {
                if renamed {
                    pinned.commits.append(commit)  // the file on disk may name either
                } else {
                    commit.release()
                    if (try? ViewsRestorePoint.remove(in: viewsEnv.directory)) != nil { pinned.unpinAll() }
                }
                defer { pinned.failing = true }
                return (nil, pinned.failing ? nil : Self.restorePointFailure(ChordStoreError.wrapping(error)))
            }
            pinned.unpinAll()
            pinned.commits = [commit]
            pinned.failing = false
            restorePoints.wrappingAdd(1, ordering: .relaxed)
            return (applied, nil)
        }
        if let warning { warn?(warning) }
        return covered
    }

    /// What the operator is told when a restore point cannot be written.
    static func restorePointFailure(_ error: ChordStoreError) -> String {
        "a restore point of the views could not be written (\(error.message)): until one is, a store opening after a machine crash may rebuild its views from the whole log; the next is tried after the restore point interval"
    }

    /// Before the views are replaced (a rebuild), whose state before should not come
    /// back: removes the restore point, durably, unpins its commit, and takes none until
    /// ``resumeRestorePoints()``. Throws (and stops nothing) if the file cannot be removed.
    func suspendRestorePoints() throws(ChordStoreError) {
        try pinnedViews.withLock { pinned throws(ChordStoreError) in
            if !pinned.commits.isEmpty {
                try ViewsRestorePoint.remove(in: viewsEnv.directory)
                pinned.unpinAll()
            }
            pinned.suspended += 1
        }
    }

    /// Ends a ``suspendRestorePoints()``; the next restore point is taken soon.
    func resumeRestorePoints() {
        pinnedViews.withLock { $0.suspended -= 1 }
        noteViewsCommitted()
    }

    /// Tells the restore points' thread, if it runs (never while the state is in memory),
    /// that the views took commits. `logHead`: the log's last event, when the caller has
    /// it at hand.
    func noteViewsCommitted(logHead: UInt64? = nil) {
        guard let syncer = viewsSyncer.withLock({ $0 }) else { return }
        syncer.note(logHead ?? committedHead.withLock { $0 }.sequence)
    }

    /// Starts the thread that takes the restore points, which takes a first one at once.
    func startViewsSyncer(interval: Duration, events: UInt64) {
        let syncer = ViewsSyncer(interval: interval, events: events) { [weak self] in self?.takeRestorePoint() }
        viewsSyncer.withLock { $0 = syncer }
        noteViewsCommitted()
    }

    /// Stops that thread and unpins the views' commits (before the views close).
    func stopViewsSyncer() {
        viewsSyncer.withLock { $0 }?.stop()
        pinnedViews.withLock { $0.unpinAll() }
    }
}
