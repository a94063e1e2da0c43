import ChordStoreDomain
import ChordStoreRecords
import Dispatch
import Foundation
import Synchronization

extension Replica {
    /// Saves the confirmed view (``ViewCheckpoint``) when it is ahead of the saved one by
    /// ``Options/checkpointInterval`` events at least (more when the store is large: as
    /// many as it has chordsets, and a quarter of the events copied, since the saved view
    /// keeps the histories, which grow with the events; so the bytes saved stay
    /// proportional to the events copied), or by any event when `closing`; never for a
    /// copy of fewer than ``Options/checkpointMinimum`` events. The view is taken under
    /// ``core``'s lock (a copy on write) and encoded and written outside it: on a task of
    /// its own when `inBackground` (a pull goes on meanwhile), else before returning.
    /// Every save is in ``savingView`` from its claim to its end (closing waits for it);
    /// one that fails gives its claim back, so the next save is not skipped.
    func saveView(closing: Bool, inBackground: Bool = false) {
        let claimed = core.withLock { core -> (view: ReplicaView, previous: UInt64)? in
            let view = core.model.confirmed
            guard !isReadOnly, !core.closed, closing || !core.saving, view.head >= options.checkpointMinimum, view.head > core.savedHead else { return nil }
            let due = max(options.checkpointInterval, UInt64(view.state.chordsetCount()), view.head / 4)
            guard closing || view.head - core.savedHead >= due else { return nil }
            let previous = core.savedHead
            core.savedHead = view.head
            if inBackground { core.saving = true }
            savingView.enter()
            return (view, previous)
        }
        guard let (view, previous) = claimed else { return }
        // The copied event the view is bound to, read now: the files may be closed by the
        // time a background save writes.
        let checksum = (try? storage.record(at: view.head))?.withUnsafeBytes { RecordCodec.storedChecksum($0) }
        let save = { @Sendable [self] in
            var saved = false
            if let checksum {
                saved = (try? ViewCheckpoint.write(view, session: session, eventChecksum: checksum, in: directory)) != nil
            }
            core.withLock { core in
                if inBackground { core.saving = false }
                if !saved, core.savedHead == view.head { core.savedHead = previous }
            }
            savingView.leave()
        }
        guard inBackground else { return save() }
        Task.detached(priority: .utility, operation: save)
    }

    /// Waits for the saves of the view under way (tests).
    package func waitForViewSaves() { savingView.wait() }
}

extension Replica {
    /// The head of the saved view this replica opened from, or of the last one saved or
    /// being saved (or reloaded from); 0: none.
    package var savedViewHead: UInt64 { core.withLock { $0.savedHead } }

    /// Checks the copy of the store's events as opening without a saved view would: every
    /// copied event (its row's checksum and the log's checksum chain) and that their fold
    /// is exactly the confirmed view the replica shows (which it opened from its saved
    /// view and the events after it). A damaged copy is dropped and copied again at the
    /// next sync (``resyncReason`` and ``damageFound`` say so); a view that differs from
    /// the fold is replaced by the fold and its saved view removed. Returns `nil`
    /// when all is well, else what was found. It reads every copied event: call it when
    /// the app has time (a maintenance task, or after an update), not at every launch.
    public func verifyCopy() throws(ReplicaError) -> String? {
        let view = core.withLock { $0.model.confirmed }
        let folded: ReplicaView
        do {
            (folded, _) = try Self.load(storage, through: view.head, session: session)
        } catch where error.code == .damaged {
            if isReadOnly { return "the copy of the store's events is damaged (\(error.message)); the app's next check drops it" }
            try dropDamagedCopy(because: error)
            return "the copy of the store's events is damaged (\(error.message)); it is copied again"
        }
        guard let difference = Self.difference(view, folded) else { return nil }
        if !isReadOnly {
            // The view shown is rebuilt from the events, and the saved one removed: saved
            // again, it would come back at the next open.
            ViewCheckpoint.remove(in: directory)
            try core.withLock { core throws(ReplicaError) in
                guard !core.closed else { return }
                try reload(&core, usingSavedView: false)
            }
            changed()
        }
        return "the view differs from the fold of the copied events: \(difference)"
    }

    /// The first part of `view` that differs from `folded`, or `nil`.
    static func difference(_ view: ReplicaView, _ folded: ReplicaView) -> String? {
        if folded.head != view.head { return "head \(view.head), folded \(folded.head)" }
        if let difference = try? StateSnapshot(of: view.state).firstDifference(from: StateSnapshot(of: folded.state)) { return difference }
        if folded.state != view.state { return "the state's indexes or deleted chordsets" }
        if let difference = view.changes.firstDifference(from: folded.changes) { return difference }
        if folded.ownChanges != view.ownChanges { return "the device's own changes" }
        if folded.ownCommandIDs != view.ownCommandIDs { return "the command ids of the device's own changes" }
        return nil
    }
}
