public import ChordStoreDomain
import ChordStoreEngine
public import Foundation
import Synchronization

/// An offline-first copy of one store on a device (docs/DEVICES.md): reads are answered
/// from the device at once, writes apply to the device's view at once and are queued
/// durably, and a sync (``sync(with:)`` once, ``run(with:)`` continuously) sends the
/// queue to the server in order and copies the store's new events from its change feed.
///
/// ```swift
/// let replica = try Replica.open(at: directory, store: "songs")
/// let verse = try replica.addChordset(AddChordset(title: "Verse"))   // offline too
/// let client = Client(host: "db.example", port: 7420, store: "songs", credentials: credentials)
/// Task { try await replica.run(with: client) }
/// for await status in replica.statusUpdates() { print(status) }
/// ```
///
/// The replica is one process's: its directory is locked while open.
public final class Replica: Sendable {
    /// How a replica stores its data.
    public struct Options: Sendable {
        /// The LMDB map's first size (it doubles when full).
        public var mapSize = 1 << 30
        /// Flush every local write to disk before it returns (survives a power loss, not
        /// only the app being killed), at the cost of an fsync per write.
        public var flushEveryWrite = false
        /// Most chordsets a live query's window holds (as the server's `WatchQuery`).
        public var maxLiveQuerySize = 1_000

        /// The defaults: a 1 GiB map, writes flushed at each sync and on close.
        public init() {}
    }

    /// The replica's directory.
    public let directory: URL
    /// The store it copies.
    public let storeName: String
    /// The device's session: its writes, undos and redos are recorded under it on the
    /// server (made once, when the replica is created).
    public let session: String
    let options: Options
    let storage: ReplicaStorage

    struct Core {
        var model: ReplicaModel
        var nextKey: UInt64
        var storeID: UInt32?
        var link: Link = .idle("not syncing")
        var caughtUp = false
        var syncing = false
        var closed = false
        var wake: AsyncStream<Void>.Continuation?
        var lastStatus: SyncStatus?
        var watchers = Watchers()
        var indexes: (version: UInt64, byOrder: [ChordsetOrder: InMemoryIndex]) = (0, [:])
        var resyncReason: String?
        /// Whether ``ReplicaNotice/resyncing(reason:)`` went out (at the first sync).
        var resyncAnnounced = false
    }

    /// Where the sync's connection is.
    enum Link: Sendable {
        case idle(String)
        case connecting
        case live
        /// A one-shot sync finished.
        case synced
        case stopped(ReplicaError)
    }

    let core: Mutex<Core>

    private init(directory: URL, storeName: String, session: String, options: Options, storage: ReplicaStorage, core: Core) {
        self.directory = directory
        self.storeName = storeName
        self.session = session
        self.options = options
        self.storage = storage
        self.core = Mutex(core)
    }

    /// Opens the replica in `directory`, creating it for `store` if the directory holds
    /// none (`store` may be omitted for an existing replica). A directory of a newer
    /// format is refused (``ReplicaError/Code/formatTooNew``); an older or damaged copy
    /// of the store's events is dropped and copied again at the next sync, keeping every
    /// pending write (``resyncReason`` says so).
    public static func open(at directory: URL, store: String? = nil, options: Options = Options()) throws(ReplicaError) -> Replica {
        if let store {
            do {
                try StoreName.check(store)
            } catch {
                throw ReplicaError(.wrongStore, error.message)
            }
        }
        let (storage, meta, _) = try ReplicaStorage.open(
            directory, store: store, newSession: { "device-" + UUID().uuidString.lowercased() },
            mapSize: options.mapSize, flushEveryWrite: options.flushEveryWrite)
        do throws(ReplicaError) {
            if meta.format > ReplicaStorage.format {
                throw ReplicaError(
                    .formatTooNew,
                    "\(directory.path) was written by a newer ChordStore (replica format \(meta.format); this version reads up to \(ReplicaStorage.format))")
            }
            var resyncReason: String?
            var head = meta.head
            if meta.format < ReplicaStorage.format {
                resyncReason = "replica format \(meta.format) is copied again in format \(ReplicaStorage.format)"
                try storage.dropEvents(format: ReplicaStorage.format)
                head = 0
            }
            var view = ReplicaView()
            do {
                view = try load(storage, through: head, session: meta.session)
            } catch {
                resyncReason = "the copy of the store's events is damaged (\(error.message)); it is copied again"
                try storage.dropEvents(format: ReplicaStorage.format)
                view = ReplicaView()
            }
            var model = ReplicaModel(session: meta.session)
            let pending = try storage.pendingWrites()
            model.restore(confirmed: view, pending: pending)
            let nextKey = max(meta.nextKey, (pending.last?.key ?? 0) + 1)
            return Replica(
                directory: directory, storeName: meta.store, session: meta.session, options: options, storage: storage,
                core: Core(model: model, nextKey: nextKey, storeID: resyncReason == nil ? meta.storeID : nil, resyncReason: resyncReason))
        } catch {
            storage.close()
            throw error
        }
    }

    /// Folds the stored events 1...head.
    static func load(_ storage: ReplicaStorage, through head: UInt64, session: String) throws(ReplicaError) -> ReplicaView {
        var view = ReplicaView()
        do {
            try storage.forEachEvent(through: head) { sequence, record in
                let recorded = try RecordCodec.decodeChecked(record)
                guard recorded.sequence == sequence else {
                    throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) is event \(recorded.sequence)")
                }
                try view.fold(recorded.change, session: session, commandID: recorded.commandID)
            }
        } catch let error as ChordStoreError {
            throw ReplicaError(.damaged, error.message)
        } catch {
            throw ReplicaError(.damaged, "\(error)")
        }
        guard view.head == head else {
            throw ReplicaError(.damaged, "the replica holds events up to \(view.head), but its head says \(head)")
        }
        return view
    }

    /// Rebuilds the model from the directory (after a failure left it half-changed).
    func reload(_ core: inout Core) throws(ReplicaError) {
        var model = ReplicaModel(session: session)
        model.restore(
            confirmed: try Self.load(storage, through: try storage.storedHead(), session: session), pending: try storage.pendingWrites())
        core.model = model
    }

    /// Why the copy of the store's events was dropped when the replica opened (an older
    /// format, a damaged record), or `nil`: the next sync copies them again.
    public var resyncReason: String? { core.withLock { $0.resyncReason } }

    /// Flushes and closes the replica: live queries and status streams end, a running
    /// sync stops at its next step, and the directory is unlocked.
    public func close() {
        let watchers = core.withLock { core -> Watchers in
            core.closed = true
            core.wake?.finish()
            defer { core.watchers = Watchers() }
            return core.watchers
        }
        watchers.finishAll()
        storage.close()
    }

    /// Flushes every local write to disk, so that it also survives a power loss.
    public func flush() throws(ReplicaError) { try storage.flush() }

    // MARK: Writes

    /// Applies `command` to the device's view at once and queues it for the server.
    /// Refused (with the code the server would give) if it does not apply to the view.
    @discardableResult
    public func perform(_ command: Command) throws(ChordStoreError) -> PendingWrite {
        let write = try core.withLock { core throws(ChordStoreError) -> PendingWrite in
            guard !core.closed else { throw ChordStoreError(.unavailable, "the replica is closed") }
            var generator = SystemRandomNumberGenerator()
            let commandID = UUID().uuidString
            let write = try core.model.write(command, commandID: commandID, key: core.nextKey, now: .now, using: &generator)
            do {
                try storage.append(write, session: session)
            } catch {
                _ = core.model.reject(commandID: commandID)
                throw ChordStoreError(.unavailable, "the write could not be stored on the device: \(error)")
            }
            core.nextKey += 1
            core.wake?.yield()
            return write
        }
        changed()
        return write
    }

    /// Adds a chordset (ids, creation date and random colours are chosen on the device)
    /// and returns it as the view shows it.
    @discardableResult
    public func addChordset(_ add: AddChordset = AddChordset()) throws(ChordStoreError) -> Chordset {
        let write = try perform(.addChordset(add))
        guard case .addChordset(let specified) = write.command, let id = specified.id, let chordset = chordset(id) else {
            throw ChordStoreError(.internal, "the added chordset is not in the view")
        }
        return chordset
    }

    /// Renames a chordset.
    public func renameChordset(_ id: UUID, to title: String) throws(ChordStoreError) { try perform(.renameChordset(id: id, title: title)) }
    /// Deletes a chordset and its chords.
    public func deleteChordset(_ id: UUID) throws(ChordStoreError) { try perform(.deleteChordset(id: id)) }
    /// Sets a chord's background colour.
    public func setChordColor(_ chordID: UUID, _ color: ChordColor) throws(ChordStoreError) { try perform(.setChordColor(chordID: chordID, color: color)) }
    /// Sets a chord's tempo.
    public func setChordBPM(_ chordID: UUID, _ bpm: Double) throws(ChordStoreError) { try perform(.setChordBPM(chordID: chordID, bpm: bpm)) }
    /// Moves a chordset in the user order.
    public func moveChordset(_ id: UUID, to index: Int) throws(ChordStoreError) { try perform(.moveChordset(id: id, toIndex: index)) }
    /// Undoes the device's most recent change that is not undone.
    public func undo() throws(ChordStoreError) { try perform(.undo) }
    /// Redoes the device's most recently undone change.
    public func redo() throws(ChordStoreError) { try perform(.redo) }

    // MARK: Reads

    /// The chordset with `id` in the device's view.
    public func chordset(_ id: UUID) -> Chordset? { core.withLock { $0.model.local.state }.chordset(id) }

    /// The controls chord in the device's view.
    public func controlsChord() -> Chord? { core.withLock { $0.model.local.state }.controlsChord() }

    /// One page of a query over the device's view: the server's filters, orders and
    /// cursors (docs/FEED.md). The page's `sequence` is the last store event the view
    /// includes; pending writes come on top.
    public func chordsets(_ query: ChordsetQuery = ChordsetQuery(limit: 5_000)) throws(ChordStoreError) -> QueryPage {
        try queries().page(query)
    }

    /// How many chordsets of the device's view match `query`'s filters.
    public func count(_ query: ChordsetQuery = ChordsetQuery()) throws(ChordStoreError) -> Int {
        try queries().count(query)
    }

    /// The device's writes not yet seen back in the store's feed, in order.
    public var pendingWrites: [PendingWrite] { core.withLock { $0.model.pending } }

    /// The last store event copied to the device.
    public var lastSequence: UInt64 { core.withLock { $0.model.confirmed.head } }

    /// The last `limit` writes the server refused, oldest first.
    public func rejectedWrites(limit: Int = 100) throws(ReplicaError) -> [RejectedWrite] {
        try storage.rejectedWrites(limit: limit)
    }

    private func queries() -> InMemoryQueries {
        let (state, head, version) = core.withLock { ($0.model.local.state, $0.model.confirmed.head, $0.model.version) }
        return InMemoryQueries(state: state, head: head) { order in self.index(order, of: state, version: version) }
    }

    /// `order`'s index of the view at `version`, sorted once per change of the view.
    private func index(_ order: ChordsetOrder, of state: InMemoryState, version: UInt64) -> InMemoryIndex {
        if let cached = core.withLock({ $0.indexes.version == version ? $0.indexes.byOrder[order] : nil }) { return cached }
        let index = InMemoryIndex(state, order: order)
        core.withLock { core in
            if core.indexes.version != version, core.model.version == version { core.indexes = (version, [:]) }
            if core.indexes.version == version { core.indexes.byOrder[order] = index }
        }
        return index
    }
}
