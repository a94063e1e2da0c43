public import ChordStoreDomain
import ChordStoreRecords
public import Foundation
import Synchronization

/// An offline-first copy of one store on a device (docs/DEVICES.md): reads are answered
/// from the device at once, writes apply to the device's view at once and are queued
/// durably, and a sync (``sync(with:)`` once, ``run(with:)`` continuously) sends the
/// queue to the server in order and copies the store's new events from its change feed.
///
/// ```swift
/// let replica = try await Replica.open(at: directory, store: "songs")
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
        /// Not used since replica format 2 (SQLite, which grows by itself); kept so that
        /// code setting it still builds.
        @available(*, deprecated, message: "replica format 2 is SQLite, which grows by itself")
        public var mapSize = 1 << 30
        /// Flush every local write to disk before it returns (survives a power loss, not
        /// only the app being killed), at the cost of an fsync per write.
        public var flushEveryWrite = false
        /// Most chordsets a live query's window holds (as the server's `WatchQuery`).
        public var maxLiveQuerySize = 1_000
        /// A continuous sync's first wait before it tries an unreachable server again,
        /// doubled at each failure (with ±25% jitter) up to ``retryLimit``; ``retryNow()``
        /// cuts a wait short.
        public var retryFirst: Duration = .milliseconds(100)
        /// The longest wait between a continuous sync's tries.
        public var retryLimit: Duration = .seconds(10)
        /// Reads a directory of format 1 (LMDB) so that opening moves it to format 2;
        /// `nil` (the default, and all an app for iOS has) refuses such a directory with
        /// ``ReplicaError/Code/formatNeedsMove``. `ChordStoreReplicaFormat1` sets it
        /// (``Replica/Options/movingFormat1``, the public way to set it).
        package var format1Reader: ReplicaFormat1.Reader?
        /// The fewest copied events a replica has before its view is saved
        /// (``ViewCheckpoint``): a smaller copy folds quickly, and every event of it is
        /// checked at each open. (Tests lower it.)
        package var checkpointMinimum: UInt64 = 4_096
        /// The fewest events copied since the view was last saved before a pull that
        /// caught up with the server saves it again (``Replica/saveView(closing:inBackground:)``).
        /// (Tests lower it.)
        package var checkpointInterval: UInt64 = 10_000

        /// The defaults: writes flushed at each sync and on close.
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
        /// Set while a continuous sync waits to retry: ``retryNow()`` ends the wait.
        var retry: AsyncStream<Void>.Continuation?
        var lastStatus: SyncStatus?
        var watchers = Watchers()
        var resyncReason: String?
        /// What opening and syncing found damaged on the device and did about it.
        var damageFound: [ReplicaDamage] = []
        /// Whether ``ReplicaNotice/resyncing(reason:)`` went out (at the first sync).
        var resyncAnnounced = false
        /// The head of the last view saved or claimed for saving (``saveView(closing:)``),
        /// or of the one the replica opened from; 0: none.
        var savedHead: UInt64 = 0
        /// Set while a view is being saved (``saveView(closing:inBackground:)``).
        var saving = false
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

    /// What a read answers from: the device's view taken under ``core``'s lock when the
    /// lock is free or, while a pull holds the lock to fold and store a batch, the view as
    /// it was when the batch began (``heldReadState``, set under the lock). So reads do not
    /// wait behind a pull's batch, and see every local write that returned (a local write
    /// waits for the batch). Other holders of the lock are short (a local write, a
    /// refusal's record), or rare (dropping a damaged copy).
    struct ReadState: Sendable {
        var state: InMemoryState
        var head: UInt64
        var pending: [PendingWrite]

        init(_ core: Core) {
            state = core.model.local.state
            head = core.model.confirmed.head
            pending = core.model.pending
        }
    }

    /// Set while a pull holds ``core``'s lock for a batch: the view before it. Holding it
    /// makes the batch's fold copy the view's state once (copy on write).
    let heldReadState = Mutex<ReadState?>(nil)
    /// The view the last batch held for reads (``heldReadState``), kept until the next
    /// batch: see ``retire(_:)``.
    let retiredReadState = Mutex<ReadState?>(nil)
    /// The sync's status, published at every change (read without ``core``'s lock).
    let publishedStatus: Mutex<SyncStatus>
    /// Entered while a pull's view is saved in the background: closing waits for it.
    let savingView = DispatchGroup()
    /// Awaited by a live query before it sends an update it made (one that changes the
    /// result; tests hold an update there, to let it arrive after later news).
    let beforeLiveUpdate = Mutex<(@Sendable () async -> Void)?>(nil)

    /// The view for a read, without waiting behind a pull's batch (``ReadState``).
    func readState() -> ReadState {
        if let fresh = core.withLockIfAvailable({ ReadState($0) }) { return fresh }
        if let held = heldReadState.withLock({ $0 }) { return held }
        return core.withLock { ReadState($0) }
    }

    init(directory: URL, storeName: String, session: String, options: Options, storage: ReplicaStorage, core: Core) {
        self.directory = directory
        self.storeName = storeName
        self.session = session
        self.options = options
        self.storage = storage
        self.publishedStatus = Mutex(Self.status(of: core))
        self.core = Mutex(core)
    }

    /// Opens the replica in `directory`, creating it for `store` if the directory holds
    /// none (`store` may be omitted for an existing replica). A directory of a newer
    /// format is refused (``ReplicaError/Code/formatTooNew``), one of format 1 (LMDB) is
    /// moved to format 2 first; a damaged copy of the store's events is dropped and
    /// copied again at the next sync, keeping every pending write (``resyncReason`` and
    /// ``damageFound`` say so), and damaged queued writes are taken aside, never sent.
    ///
    /// It blocks its caller while it reads the directory: from an app's main actor, call
    /// the `async` one, which opens off it.
    public static func open(at directory: URL, store: String? = nil, options: Options = Options()) throws(ReplicaError) -> Replica {
        try openNow(at: directory, store: store, options: options)
    }

    /// Opens the replica in `directory` as the synchronous ``open(at:store:options:)``
    /// does, in a detached task: the caller (the main actor, say) does not wait for the
    /// files. Opening reads the saved view and folds only the events copied after it
    /// (docs/DEVICES.md, "A SwiftUI view").
    public static func open(at directory: URL, store: String? = nil, options: Options = Options()) async throws(ReplicaError) -> Replica {
        try await offThread(directory) { () throws(ReplicaError) in try openNow(at: directory, store: store, options: options) }
    }

    /// Runs `open` (an opening of `directory`) in a detached task.
    static func offThread(
        _ directory: URL, _ open: @escaping @Sendable () throws(ReplicaError) -> Replica
    ) async throws(ReplicaError) -> Replica {
        let opening = Task.detached(priority: .userInitiated) { () throws(ReplicaError) -> Replica in try open() }
        do {
            return try await opening.value
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.storage, "cannot open \(directory.path): \(error)")
        }
    }

    private static func openNow(at directory: URL, store: String?, options: Options) throws(ReplicaError) -> Replica {
        if let store {
            do {
                try StoreName.check(store)
            } catch {
                throw ReplicaError(.wrongStore, error.message)
            }
        }
        let (storage, meta) = try ReplicaStorage.open(
            directory, store: store, newSession: { "device-" + UUID().uuidString.lowercased() }, flushEveryWrite: options.flushEveryWrite,
            format1Reader: options.format1Reader)
        do throws(ReplicaError) {
            let restored = try restore(storage, through: meta.head, session: meta.session)
            var model = ReplicaModel(session: meta.session)
            model.restore(confirmed: restored.view, pending: restored.pending)
            let nextKey = max(meta.nextKey, (restored.pending.last?.key ?? 0) + 1)
            return Replica(
                directory: directory, storeName: meta.store, session: meta.session, options: options, storage: storage,
                core: Core(
                    model: model, nextKey: nextKey, storeID: meta.storeID,
                    resyncReason: storage.eventsDropped ?? restored.resyncReason, damageFound: storage.damageFound + restored.damage,
                    savedHead: restored.savedHead))
        } catch {
            storage.close()
            throw error
        }
    }

    /// What the directory holds, checked: the confirmed view, the intact queued writes
    /// (those the copied events confirm taken off the queue: the app stopped between the
    /// two files' commits), and what was found damaged and done about it (a damaged copy
    /// of the events dropped, damaged queued writes set aside).
    static func restore(
        _ storage: ReplicaStorage, through head: UInt64, session: String, usingSavedView: Bool = true
    ) throws(ReplicaError) -> (view: ReplicaView, pending: [PendingWrite], damage: [ReplicaDamage], resyncReason: String?, savedHead: UInt64) {
        var (pending, damaged) = try storage.queuedWrites()
        var damage: [ReplicaDamage] = []
        var resyncReason: String?
        var view = ReplicaView()
        var found: Set<String> = []
        var savedHead: UInt64 = 0
        do {
            let queued = Set(pending.map(\.commandID) + damaged.compactMap(\.decoded?.commandID))
            let saved = usingSavedView ? savedView(storage, through: head, session: session) : nil
            savedHead = saved?.head ?? 0
            (view, found) = try load(storage, through: head, session: session, from: saved, finding: queued)
        } catch {
            savedHead = 0
            let reason = "the copy of the store's events is damaged (\(error.message)); it is copied again"
            resyncReason = reason
            damage.append(ReplicaDamage(.copyDropped, reason))
            try storage.dropEvents()
        }
        let isConfirmed = { (commandID: String?) in commandID.map(found.contains) ?? false }
        try storage.removeConfirmed(keys: pending.filter { isConfirmed($0.commandID) }.map(\.key) + damaged.filter { isConfirmed($0.decoded?.commandID) }.map(\.key))
        pending.removeAll { isConfirmed($0.commandID) }
        damaged.removeAll { isConfirmed($0.decoded?.commandID) }
        damage += try storage.setAside(damaged, session: session, now: .now)
        return (view, pending, damage, resyncReason, savedHead)
    }

    /// The saved view (``ViewCheckpoint``; `saved`, when the caller read it already) when
    /// it can stand for the copied events up to its head: of this session, not ahead of `head`, and saved from this copy (the
    /// copied event at its head, checked, has the checksum it recorded). Else `nil`: the
    /// events are folded from the first.
    static func savedView(
        _ storage: ReplicaStorage, through head: UInt64, session: String, read saved: ViewCheckpoint.Saved?? = nil
    ) -> ReplicaView? {
        let file: ViewCheckpoint.Saved? = if let saved { saved } else { try? ViewCheckpoint.read(in: storage.directory) }
        guard head > 0, let saved = file, saved.session == session, saved.view.head <= head,
              let record = try? storage.record(at: saved.view.head),
              record.withUnsafeBytes({ RecordCodec.storedChecksum($0) }) == saved.eventChecksum
        else { return nil }
        return saved.view
    }

    /// Folds the stored events after `saved` (a saved view, or the empty store) up to
    /// `head`; returns the view and which of the command ids `finding` the events hold
    /// (for those `saved` covers, the device's own changes it keeps).
    static func load(
        _ storage: ReplicaStorage, through head: UInt64, session: String, from saved: ReplicaView? = nil, finding: Set<String> = []
    ) throws(ReplicaError) -> (ReplicaView, found: Set<String>) {
        var view = saved ?? ReplicaView()
        var found: Set<String> = []
        if saved != nil, !finding.isEmpty {
            for commandID in view.ownCommandIDs.values where finding.contains(commandID) { found.insert(commandID) }
        }
        do {
            try storage.forEachEvent(after: view.head, through: head) { sequence, record in
                let recorded = try RecordCodec.decodeChecked(record)
                guard recorded.sequence == sequence else {
                    throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) is event \(recorded.sequence)")
                }
                guard sequence == view.head + 1 else {
                    throw ChordStoreError(.dataLoss, "the replica's copy has no event \(view.head + 1) (the next one stored is \(sequence))")
                }
                if !finding.isEmpty, finding.contains(recorded.commandID) { found.insert(recorded.commandID) }
                try view.fold(recorded.change, session: session, commandID: recorded.commandID)
            }
        } catch let error as ChordStoreError {
            throw ReplicaError(.damaged, error.message)
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.damaged, "\(error)")
        }
        guard view.head == head else {
            throw ReplicaError(.damaged, "the replica holds events up to \(view.head), but its head says \(head)")
        }
        return (view, found)
    }

    /// Rebuilds the model from the directory (after a failure left it half-changed), as
    /// opening does (a damaged copy of the events is dropped, damaged queued writes set
    /// aside).
    func reload(_ core: inout Core, usingSavedView: Bool = true) throws(ReplicaError) {
        let head: UInt64
        do {
            head = try storage.storedHead()
        } catch where error.inCopy {
            try storage.dropEvents()
            head = 0
        }
        let restored = try Self.restore(storage, through: head, session: session, usingSavedView: usingSavedView)
        var model = ReplicaModel(session: session, version: core.model.version)
        model.restore(confirmed: restored.view, pending: restored.pending)
        core.model = model
        core.savedHead = restored.savedHead
        core.damageFound += restored.damage
        if let reason = restored.resyncReason { core.resyncReason = reason }
    }

    /// Drops the copy of the store's events, found damaged on the device while the replica
    /// is open: the view is the queued writes alone until the sync's pull copies the
    /// events again.
    func dropDamagedCopy(because error: ReplicaError) throws(ReplicaError) {
        let reason = "the copy of the store's events is damaged (\(error.message)); it is copied again"
        try core.withLock { core throws(ReplicaError) in try dropCopy(&core, reason: reason) }
        announce([.resyncing(reason: reason)])
        changed()
    }

    /// Drops the copy of the store's events and rebuilds the view from the queue alone.
    func dropCopy(_ core: inout Core, reason: String) throws(ReplicaError) {
        try storage.dropEvents()
        try reload(&core)
        core.resyncReason = reason
        core.damageFound.append(ReplicaDamage(.copyDropped, reason))
    }

    /// Why the copy of the store's events was dropped when the replica opened (an older
    /// format, a damaged record), or `nil`: the next sync copies them again.
    public var resyncReason: String? { core.withLock { $0.resyncReason } }

    /// What opening (and syncing since) found damaged on the device and did about it: a
    /// copy of the store's events that did not match its checksums (dropped, copied again
    /// at the next sync), queued writes that did not (taken aside, never sent: one that
    /// still reads is among ``rejectedWrites(limit:)`` with reason `DAMAGED_ON_DEVICE`),
    /// values of the description made again. Empty when nothing was.
    public var damageFound: [ReplicaDamage] { core.withLock { $0.damageFound } }

    /// Flushes and closes the replica: live queries and status streams end, a running
    /// sync stops at its next step, and the directory is unlocked.
    public func close() {
        saveView(closing: true)
        savingView.wait()
        let watchers = core.withLock { core -> Watchers in
            core.closed = true
            core.wake?.finish()
            core.retry?.finish()
            if case .stopped = core.link {} else { core.link = .idle("closed") }
            let status = Self.status(of: core)
            publishedStatus.withLock { $0 = status }
            for continuation in core.watchers.statuses.values { continuation.yield(status) }
            defer { core.watchers = Watchers() }
            return core.watchers
        }
        watchers.finishAll()
        storage.close()
    }

    /// Flushes every local write to disk, so that it also survives a power loss.
    public func flush() throws(ReplicaError) {
        if isReadOnly { return }
        try storage.flush()
    }

    // MARK: Writes

    /// Applies `command` to the device's view at once and queues it for the server.
    /// Refused (with the code the server would give) if it does not apply to the view.
    @discardableResult
    public func perform(_ command: Command) throws(ChordStoreError) -> PendingWrite {
        let write = try core.withLock { core throws(ChordStoreError) -> PendingWrite in
            guard !core.closed else { throw ChordStoreError(.unavailable, "the replica is closed") }
            guard !isReadOnly else { throw ChordStoreError(.failedPrecondition, Self.readOnlyError("write").message, reason: .readOnlyReplica) }
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
    public func chordset(_ id: UUID) -> Chordset? { readState().state.chordset(id) }

    /// The controls chord in the device's view.
    public func controlsChord() -> Chord? { readState().state.controlsChord() }

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
    public var pendingWrites: [PendingWrite] { readState().pending }

    /// The last store event copied to the device.
    public var lastSequence: UInt64 { readState().head }

    /// The last `limit` writes the server refused, oldest first.
    public func rejectedWrites(limit: Int = 100) throws(ReplicaError) -> [RejectedWrite] {
        try storage.rejectedWrites(limit: limit)
    }

    private func queries() -> InMemoryQueries {
        let view = readState()
        let (state, head) = (view.state, view.head)
        return InMemoryQueries(state: state, head: head) { order in InMemoryIndex.of(state, order: order) }
    }

    /// Runs `body`, which changes the view, while reads answer from `before` (the view as
    /// the lock found it: ``heldReadState``). The caller holds ``core``'s lock around this
    /// call; the held view is taken out (not freed) before the caller lets the lock go,
    /// into `held`, which the caller passes to ``retire(_:)`` once the lock is free. A
    /// pull's batch and an import's queueing hold reads this way.
    func holdingReads<T, E: Error>(at before: ReadState, held: inout ReadState?, _ body: () throws(E) -> T) throws(E) -> T {
        heldReadState.withLock { $0 = before }
        defer { held = heldReadState.withLock { state in defer { state = nil }; return state } }
        return try body()
    }

    /// Keeps `state` (the view a pull's batch held for reads, a copy of the whole state)
    /// until the next batch, and frees the one it replaces on the pull's thread with no
    /// lock held. Freed where it was dropped, it was freed by whichever read released it
    /// last, or under the lock reads wait on: a few milliseconds, a read's p99.
    func retire(_ state: ReadState?) {
        let previous = retiredReadState.withLock { retired in
            defer { retired = state }
            return retired
        }
        withExtendedLifetime(previous) {}
    }

    /// Sorts the indexes readers used, for the view `core` holds now: called by a pull
    /// at the end of its batch, while reads still answer from the view before it
    /// (``heldReadState``), so that no read after the batch waits for a sort. Each index is
    /// kept in its view's ``InMemoryState/headerMemo``: a batch that changed no chordset's
    /// header (an add, a delete, a title) keeps the view's memo, and sorts nothing. The new
    /// view's memo is its own until the lock is let go: nothing here waits for a read.
    func prepareIndexes(_ core: Core) {
        guard let used = heldReadState.withLock({ $0?.state.headerMemo }) else { return }
        let state = core.model.local.state
        guard state.headerMemo !== used else { return }
        for order in ChordsetOrder.allCases where used.holdsValue(for: order) {
            _ = InMemoryIndex.of(state, order: order)
        }
    }
}
