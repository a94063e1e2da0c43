import ChordStoreDomain
import ChordStoreRecords
import Dispatch
import Foundation
import Synchronization

extension Replica {
    /// Events copied since the view was last saved before a pull that caught up saves it
    /// again, at least. More when the store is large: as many as it has chordsets, and a
    /// quarter of the events copied (the saved view keeps the histories, which grow with
    /// the events), so that the bytes saved stay proportional to the events copied.
    /// Opening folds at most these events after the saved view, and those of a pull that
    /// did not catch up.
    static let checkpointInterval: UInt64 = 10_000

    /// Saves the confirmed view (``ViewCheckpoint``) when it is ahead of the saved one by
    /// ``checkpointInterval`` (or more, above), or by any event when `closing`; never for a
    /// copy of fewer than ``Options/checkpointMinimum`` events. The view is taken under
    /// ``core``'s lock (a copy on write) and encoded and written outside it: on a task of
    /// its own when `inBackground` (a pull goes on meanwhile), else before returning. A
    /// view that cannot be saved is left unsaved: the next open folds more events.
    func saveView(closing: Bool, inBackground: Bool = false) {
        let claimed = core.withLock { core -> ReplicaView? in
            let view = core.model.confirmed
            guard !isReadOnly, !core.closed, closing || !core.saving, view.head >= options.checkpointMinimum, view.head > core.savedHead else { return nil }
            let due = max(Self.checkpointInterval, UInt64(view.state.chordsetCount()), view.head / 4)
            guard closing || view.head - core.savedHead >= due else { return nil }
            core.savedHead = view.head
            if inBackground { core.saving = true }
            return view
        }
        guard let view = claimed else { return }
        // The copied event the view is bound to, read now: the files may be closed by the
        // time a background save writes.
        let checksum = (try? storage.record(at: view.head))?.withUnsafeBytes { RecordCodec.storedChecksum($0) }
        let save = { @Sendable [directory, session] in
            guard let checksum else { return }
            try? ViewCheckpoint.write(view, session: session, eventChecksum: checksum, in: directory)
        }
        guard inBackground else { return save() }
        savingView.enter()
        Task.detached(priority: .utility) { [self] in
            save()
            core.withLock { $0.saving = false }
            savingView.leave()
        }
    }
}

extension Replica {
    /// The head of the saved view this replica opened from (or last saved, or reloaded
    /// from); 0: none.
    package var savedViewHead: UInt64 { core.withLock { $0.savedHead } }

    /// Checks the copy of the store's events as opening without a saved view would: every
    /// copied event (its row's checksum and the log's checksum chain) and that their fold
    /// is exactly the confirmed view the replica shows (which it opened from its saved
    /// view and the events after it). A damaged copy is dropped and copied again at the
    /// next sync (``resyncReason`` and ``damageFound`` say so); a view that differs from
    /// the fold has its saved view removed, so that the next open folds. Returns `nil`
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
        if !isReadOnly { ViewCheckpoint.remove(in: directory) }
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
