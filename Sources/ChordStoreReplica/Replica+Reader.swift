public import Foundation
import Synchronization

/// A replica opened for reading by another process than the app's (an app extension, a
/// widget): docs/DEVICES.md, "App extensions".
extension Replica {
    /// Opens the replica the app keeps in `directory` for reading, beside the app (which
    /// may have it open: SQLite's WAL mode lets readers read while it writes). The reader
    /// shows the view as the app last stored it (its copied events and its queued writes);
    /// ``refresh()`` reads it again. It writes nothing and takes no lock: writes are
    /// refused (`FAILED_PRECONDITION`), and so are syncs (``ReplicaError/Code/readOnly``);
    /// a damaged file is refused as ``ReplicaError/Code/damaged`` (the app repairs it).
    /// The directory must have been made by the app (format 2).
    public static func openForReading(at directory: URL, options: Options = Options()) throws(ReplicaError) -> Replica {
        try openReader(at: directory, options: options)
    }

    private static func openReader(at directory: URL, options: Options) throws(ReplicaError) -> Replica {
        let (storage, meta) = try ReplicaStorage.openForReading(directory)
        do throws(ReplicaError) {
            let (model, savedHead) = try readModel(storage, session: meta.session, version: 0)
            return Replica(
                directory: directory, storeName: meta.store, session: meta.session, options: options, storage: storage,
                core: Core(model: model, nextKey: 0, storeID: meta.storeID, savedHead: savedHead))
        } catch {
            storage.close()
            throw error
        }
    }

    /// ``openForReading(at:options:)`` in a detached task.
    public static func openForReading(at directory: URL, options: Options = Options()) async throws(ReplicaError) -> Replica {
        try await offThread(directory) { () throws(ReplicaError) in try openReader(at: directory, options: options) }
    }

    /// Whether this replica was opened for reading (``openForReading(at:options:)``).
    public var isReadOnly: Bool { storage.isReader }

    /// Reads the app's files again (a reader's only way to see what the app did since):
    /// its saved view, the events copied after it, its queued writes. Live queries and
    /// status watchers are told. Does nothing on the app's own replica, whose view is
    /// always current.
    public func refresh() throws(ReplicaError) {
        guard isReadOnly else { return }
        try storage.reopenEventsForReading()
        try core.withLock { core throws(ReplicaError) in
            guard !core.closed else { throw ReplicaError(.storage, "the replica is closed") }
            let (model, savedHead) = try Self.readModel(storage, session: session, version: core.model.version + 1)
            core.model = model
            core.savedHead = savedHead
        }
        changed()
    }

    /// The model of what the app's files hold, read without writing: the queued writes
    /// first, then the saved view, then the copied events' head and the events after the
    /// view (in that order, so that a write the app confirms meanwhile is found among the
    /// events, and the view is never ahead of the head read). Damaged queued writes are
    /// left out (the app sets them aside at its next open).
    static func readModel(_ storage: ReplicaStorage, session: String, version: UInt64) throws(ReplicaError) -> (ReplicaModel, savedHead: UInt64) {
        var (pending, _) = try storage.queuedWrites()
        let file = try? ViewCheckpoint.read(in: storage.directory)
        let head = try storage.storedHead()
        let saved = savedView(storage, through: head, session: session, read: .some(file))
        let (view, found) = try load(storage, through: head, session: session, from: saved, finding: Set(pending.map(\.commandID)))
        pending.removeAll { found.contains($0.commandID) }
        var model = ReplicaModel(session: session, version: version)
        model.restore(confirmed: view, pending: pending)
        return (model, saved?.head ?? 0)
    }

    static func readOnlyError(_ what: String) -> ReplicaError {
        ReplicaError(.readOnly, "this replica was opened for reading (an app extension's): it does not \(what); the app does")
    }
}
