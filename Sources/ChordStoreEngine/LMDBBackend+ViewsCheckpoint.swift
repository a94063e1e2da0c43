import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The views' durable checkpoint (``ViewsCheckpoint``): taken in the background while the
/// store is open, used when it opens after a machine crash.
extension LMDBBackend {
    /// What the views' checkpoint did when the store opened after a machine crash.
    enum ViewsRecovery: Equatable {
        /// The views went back to the checkpoint, which held events up to `applied`, and
        /// were to catch up with the log's events up to `logHead`.
        case restored(applied: UInt64, logHead: UInt64)
        /// There was none this opening could use (`why`): the views were rebuilt.
        case unusable(why: String)
    }

    /// Makes the views, left open by another boot, the state their checkpoint recorded,
    /// if it is the one the opening that left them open made and that state opens and
    /// holds what the checkpoint says. Otherwise, and on any failure, removes the views'
    /// files (they are rebuilt from the log; throws if they cannot be removed). Call it
    /// before the views are opened.
    static func recoverViews(in viewsDirectory: URL, marker: ViewsMarker) throws -> ViewsRecovery {
        let recovery = restoreCheckpoint(in: viewsDirectory, marker: marker)
        for file in ["lock.mdb"] + (recovery == nil ? ["data.mdb"] : []) {
            let url = viewsDirectory.appendingPathComponent(file)
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
        }
        return recovery.map { .restored(applied: $0.applied, logHead: 0) } ?? .unusable(why: unusableReason(in: viewsDirectory, marker: marker))
    }

    private static func restoreCheckpoint(in viewsDirectory: URL, marker: ViewsMarker) -> ViewsCheckpoint? {
        guard let opening = marker.openingLeftOpen, let checkpoint = ViewsCheckpoint.read(in: viewsDirectory),
            checkpoint.opening == opening,
            FileManager.default.fileExists(atPath: viewsDirectory.appendingPathComponent("data.mdb").path)
        else { return nil }
        do {
            try Environment.rollBack(directory: viewsDirectory, to: checkpoint.meta)
            // Opened read-only, without the lock file the crash left: the state must open
            // and end at the checkpoint's event.
            var options = Environment.Options()
            options.readOnly = true
            options.maxDatabases = 32
            let env = try Environment(directory: viewsDirectory, options: options)
            defer { env.close() }
            let dbs = try StoreDatabases(readOnlyViews: env)
            let applied = try env.withReadTransaction { try AppliedHead.read($0, dbs) }
            return applied.sequence == checkpoint.applied ? checkpoint : nil
        } catch {
            return nil
        }
    }

    private static func unusableReason(in viewsDirectory: URL, marker: ViewsMarker) -> String {
        guard let opening = marker.openingLeftOpen else { return "views/open names no opening" }
        guard let checkpoint = ViewsCheckpoint.read(in: viewsDirectory) else { return "no readable views/checkpoint" }
        guard checkpoint.opening == opening else { return "views/checkpoint is an earlier opening's" }
        return "the views' state at the checkpoint did not open whole"
    }

    /// Takes a checkpoint of the views now, unless the last one holds their state
    /// already; returns the last event it covers, or `nil` if none could be taken (the
    /// last stays). The views' state is held from then until the next checkpoint
    /// replaces it, so no commit overwrites its pages.
    @discardableResult
    func takeViewsCheckpoint() -> UInt64? {
        heldViews.withLock { held -> UInt64? in
            guard !viewsEnv.isClosed, markedOpen.load(ordering: .acquiring), viewsDamage == nil else { return nil }
            do {
                let (snapshot, applied) = try viewsEnv.holdSnapshot { try AppliedHead.read($0, dbs).sequence }
                if let current = held, current.meta.transactionID == snapshot.meta.transactionID {
                    snapshot.release()
                    return applied
                }
                do {
                    try viewsEnv.sync()
                    try ViewsCheckpoint(opening: marker.opening, applied: applied, meta: snapshot.meta).write(in: viewsEnv.directory)
                } catch {
                    snapshot.release()
                    throw error
                }
                held?.release()
                held = snapshot
                viewsCheckpoints.wrappingAdd(1, ordering: .relaxed)
                return applied
            } catch {
                return nil
            }
        }
    }

    /// Removes the checkpoint, durably, and lets commits reuse the pages it held: before
    /// the views are replaced (a rebuild), whose state before it should not come back.
    /// If the file cannot be removed, the state stays held (the checkpoint stays whole).
    func dropViewsCheckpoint() {
        heldViews.withLock { held in
            guard held != nil, (try? ViewsCheckpoint.remove(in: viewsEnv.directory)) != nil else { return }
            held?.release()
            held = nil
        }
    }

    /// Starts the thread that takes the checkpoints, which takes a first one at once.
    func startViewsSyncer(interval: Duration, events: UInt64) {
        let syncer = ViewsSyncer(interval: interval, events: events) { [weak self] in self?.takeViewsCheckpoint() }
        viewsSyncer.withLock { $0 = syncer }
        syncer.note(committedHead.withLock { $0 }.sequence)
    }

    /// Stops that thread and lets the held state go (before the views close).
    func stopViewsSyncer() {
        viewsSyncer.withLock { $0 }?.stop()
        heldViews.withLock { held in
            held?.release()
            held = nil
        }
    }
}
