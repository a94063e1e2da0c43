import ChordStoreRecords
public import ChordStoreDomain
public import CoreMetrics
public import Foundation
import Synchronization

/// The ChordStore engine: an event-sourced store of chordsets and chords.
///
/// Every change is a ``ChordStoreDomain/Command`` that becomes one immutable event in the
/// log; the views answering queries are projections of that log. One writer thread owns
/// the log and commits concurrent commands together (group commit); reads run on the
/// caller's thread against a consistent snapshot and never wait for the writer.
///
/// ```swift
/// let store = try ChordStore.open(at: URL(fileURLWithPath: "data"))
/// let added = try await store.execute(.addChordset(AddChordset(title: "Verse")))
/// let list = try store.chordsets()
/// await store.close()
/// ```
public final class ChordStore: Sendable {
    /// How a store is opened.
    public struct Options: Sendable {
        /// The validation limits.
        public var limits = Limits()
        /// Most commands committed in one transaction.
        public var maxBatch = 1_024
        /// Most commands waiting for the writer; more are refused with `resourceExhausted`.
        public var maxQueued = 100_000
        /// The longest the writer waits for more commands to join a batch, when fewer are
        /// queued than the last batch held and more keep arriving (commit delay). Zero
        /// commits at once.
        public var maxCommitDelay: Duration = .milliseconds(2)
        /// The LMDB map's initial size; it grows on demand. It reserves address space, not
        /// disk, so it starts large: growing waits for open snapshots to end.
        public var initialMapSize = 1 << 33
        /// The most the map grows by at once (it doubles until this step).
        public var maxMapGrowth = 1 << 30
        /// The most each of the two maps (the log's, the views') grows to. A commit that
        /// needs more is refused with `resourceExhausted` naming the map; reads go on,
        /// and a restart with a larger limit takes writes again. At least 1 MiB.
        public var maxMapSize = 1 << 40
        /// Where the engine records its commits (batch sizes, commit and fsync times);
        /// nothing is recorded by default.
        public var metrics: any MetricsFactory = NOOPMetricsHandler.instance
        /// The seed of the id and colour generator; random when `nil`. Tests fix it.
        public var seed: UInt64?
        /// The least epoch written into new records: the store uses the highest of this,
        /// the epoch it persisted (``ChordStore/adoptEpoch(_:grantedTo:)``) and its last record's.
        public var epoch: UInt64 = 1
        /// Events between the snapshots that reads of the past start from (at least; a
        /// store with more chordsets than this waits as many events). `nil` takes them
        /// only when ``ChordStore/takeSnapshot()`` is called.
        public var snapshotInterval: UInt64? = 100_000
        /// Skips fsync at commit. A crash may then lose acknowledged commands: only for
        /// benchmarks and bulk loads that say so.
        public var unsafeNoSync = false
        /// Most live stores, `default` included; creating one more fails with
        /// `resourceExhausted`.
        public var maxStores = 100_000
        /// Most live tokens; creating one more fails with `resourceExhausted`.
        public var maxTokens = 10_000
        /// Keeps every store's state in memory: commits decide against it and write only
        /// the log before they are acknowledged, and reads are answered from it. The state
        /// is saved whole (`DIR/live-state`) at a clean close and in the background every
        /// ``liveStateSaveEvents`` events or more; when the store opens, the state saved
        /// last is loaded and the log's later events replayed into it, or the whole log
        /// (see ``liveStateStart``). The LMDB views take no commit: they are brought up
        /// when a copy of the files or `verify` reads them. Off: the views serve reads and
        /// take each commit's events before it is acknowledged. Memory: the whole state
        /// twice (see docs/PERFORMANCE.md).
        public var liveState = false
        /// With ``liveState``, the least events between two saves of the state in the
        /// background: a start after a kill or a machine crash replays at most about this
        /// many of the log's events after the state saved last (more for a large state:
        /// the file's size in bytes divided by 128, so that saving costs each event about
        /// a microsecond). At least 1.
        public var liveStateSaveEvents: UInt64 = 100_000
        /// With ``liveState``, the most bytes the state in memory may take (both of its
        /// copies, as estimated from each store's chordsets, chords, events and command ids:
        /// docs/PERFORMANCE.md, "The memory bound"): over it, the stores used least
        /// recently are evicted, keeping only their index into the log and their command
        /// ids, and are folded again from the log on their next call (on the caller's
        /// thread; about 9 µs per event of the store). A start and a replay of the whole
        /// log keep within it too. `nil`: no bound.
        public var maxStateMemory: Int?
        /// The sentence an open of a data directory another process holds fails with
        /// (`UNAVAILABLE`), given that process's id when known; `nil`: one that suggests
        /// stopping it or sending commands to its server instead (what a verb that can do
        /// either says).
        public var directoryInUse: (@Sendable (_ owner: Int?) -> String)?
        /// How often, at most, the views' restore point is taken while commits come (their
        /// last commit pinned, their file synced; see `ViewsRestorePoint`): a store opening
        /// after a machine crash then catches its views up from there instead of rebuilding
        /// them from the whole log. `nil` (the default): none is taken, and such a store
        /// rebuilds its views. The price is in every write: while a commit is pinned, the
        /// views' commits cannot reuse its pages, so each writes fresh pages, which the next
        /// restore point writes to disk (docs/PERFORMANCE.md has the figures). Not taken
        /// while the state is in memory (``liveState``), whose saved state plays that part.
        public var restorePointInterval: Duration?
        /// Told (on a background thread) what the engine gave up in the background that an
        /// operator should know: a restore point of the views a full disk kept from being
        /// written (once per run of failures), a save of the live state that failed (each
        /// time: the next is tried ``liveStateSaveEvents`` events later). `nil`: nobody is
        /// told.
        public var warn: (@Sendable (String) -> Void)?
        /// A restore point is taken at once, whatever the interval, after this many events,
        /// so that what a store opening after a machine crash folds one by one stays under
        /// the catch-up limit (10,000 events) while the disk keeps up.
        var restorePointEvents: UInt64 = 4_096

        /// The default options.
        public init() {}
    }

    let backend: any StorageBackend
    let writer: GroupCommitWriter
    private let applier: BatchApplier
    /// What checks imported events (``importEvents(_:store:)``): the store's limits.
    var importDecider: Decider { applier.decider }
    let timeTravel: TimeTravel
    let notifier: CommitNotifier
    /// How many times ``truncate(after:parkingIn:)`` cut the log.
    let cuts = Atomic<Int>(0)
    /// Filtered counts in progress (each reads the whole title index): at most 2.
    private let countsRunning = ConcurrencyLimit(2)
    /// Where the store lives, or `nil` in memory.
    public let directory: URL?

    private init(backend: any StorageBackend, directory: URL?, options: Options) {
        self.backend = backend
        self.directory = directory
        let logHead = (try? backend.logHead()) ?? .empty
        let head = logHead.sequence
        // Clamped: an older version could persist an epoch above the largest one.
        let epoch = min(max(options.epoch, (try? backend.storedEpoch()) ?? 0, logHead.epoch), LogPosition.maxEpoch)
        self.applier = BatchApplier(decider: Decider(limits: options.limits), epoch: epoch, maxStores: max(1, options.maxStores),
            maxTokens: max(0, options.maxTokens))
        self.timeTravel = TimeTravel(snapshots: backend.snapshotFiles)
        self.notifier = CommitNotifier(head: head)
        self.writer = GroupCommitWriter(
            backend: backend, applier: applier, maxBatch: options.maxBatch, maxQueued: options.maxQueued,
            maxCommitDelay: options.maxCommitDelay, seed: options.seed ?? UInt64.random(in: .min ... .max),
            notifier: notifier, metrics: EngineMetrics(factory: options.metrics))
    }

    /// Opens (creating if needed) the durable store in `directory`.
    ///
    /// Fails with `unavailable` if another process has the directory open. If the views
    /// have another layout than this version's, they are rebuilt from the log first, with
    /// `progress(done, total)` reporting how far.
    public static func open(
        at directory: URL, options: Options = Options(), progress: (UInt64, UInt64) -> Void = { _, _ in }
    ) throws(ChordStoreError) -> ChordStore {
        let backend = try LMDBBackend(directory: directory, options: options, progress: progress)
        return ChordStore(backend: backend, directory: directory, options: options)
    }

    /// Opens the views in `directory` (the `views/` of a copy of a store's files) alone,
    /// read-only: what a new follower serves while its copy of the leader's log is still
    /// arriving. Reads of the current state answer as the copy's views have it; as-of
    /// reads, histories, event feeds of past events, `verify` and backups fail with
    /// `unavailable` (the log is not there, ``logAbsence``), and commands are refused as
    /// on a follower (`NOT_LEADER`). Nothing is written to the files.
    public static func openViews(at directory: URL, options: Options = Options()) throws(ChordStoreError) -> ChordStore {
        let store = ChordStore(backend: try ViewsOnlyBackend(directory: directory), directory: nil, options: options)
        store.acceptsCommands = false
        return store
    }

    /// Why this store cannot read its log at all (a store over views alone, see
    /// ``openViews(at:options:)``), or `nil`.
    public var logAbsence: ChordStoreError? { backend.logAbsence }

    /// Why a store opened with ``Options/liveState`` serves its views instead (its log
    /// could not be replayed into memory), or `nil`.
    public var liveStateFailure: ChordStoreError? { (backend as? LMDBBackend)?.liveFailure.withLock { $0 } }

    /// What the store did with its views' restore point when it opened after a machine
    /// crash (see ``Options/restorePointInterval``): went back to it and caught up with the
    /// log, or could not use it (why) and rebuilt them; `nil` when there was none to use.
    public var viewsRecovery: String? {
        switch (backend as? LMDBBackend)?.viewsRecovery.withLock({ $0 }) {
        case .restored(let applied, let logHead)?:
            "the machine went down with the views open: they went back to their restore point at event \(applied) and caught up with the log's \(logHead > applied ? logHead - applied : 0) later events"
        case .unusable(let why)?:
            "the machine went down with the views open, and their restore point could not be used (\(why)): they were rebuilt from the log"
        case nil: nil
        }
    }

    /// The name of the file, in a data directory, where a store opened with
    /// ``Options/liveState`` saves its state (at a close and in the background).
    public static var liveStateFileName: String { LiveStateFile.name }

    /// How a store opened with ``Options/liveState`` built its state in memory: from the
    /// state saved last (at a close or in the background) and the log's later events, or from a replay of the
    /// whole log (and why a saved state was set aside, if one was); `nil` without live state.
    public var liveStateStart: String? {
        switch (backend as? LMDBBackend)?.liveStart.withLock({ $0 }) {
        case .saved(let at, let replayed)?:
            "the live state was loaded from the state saved last (event \(at)) and the log's \(replayed) later events"
        case .replayed(let setAside?)?:
            "the live state was built from a replay of the whole log; the state saved last was set aside: \(setAside)"
        case .replayed(nil)?:
            "the live state was built from a replay of the whole log (no state was saved)"
        case nil: nil
        }
    }

    /// Creates an empty store that lives in memory only, with the same behaviour.
    public static func inMemory(options: Options = Options()) -> ChordStore {
        ChordStore(backend: InMemoryBackend(), directory: nil, options: options)
    }

    /// Commits `command` and returns its recorded event once it is durable.
    ///
    /// Throws the validation error (nothing is written), or a storage error.
    @discardableResult
    public func execute(_ command: Command, context: CommandContext = CommandContext()) async throws(ChordStoreError) -> RecordedEvent {
        try await commit(command, context: context).recorded
    }

    /// ``execute(_:context:)``, returning the event with its record's bytes as the log
    /// holds them (what a reply sends).
    public func commit(_ command: Command, context: CommandContext = CommandContext()) async throws(ChordStoreError) -> CommittedEvent {
        backend.prepareWrite(store: context.store)
        return try await writer.submit(SubmittedCommand(command: command, context: context)).get()
    }

    /// Queues `command` for the writer and returns at once; `completion` gets its recorded
    /// event once it is durable, or its error. It runs on the writer thread, so it must
    /// only hand the result on (for example to an event loop): every commit waits for it.
    /// It runs inside the batch's ``AnswerBatch``, so a receiver that wakes a thread for it
    /// can wake that thread once for the whole batch.
    /// ``execute(_:context:)`` without a task hop, for servers.
    package func submit(
        _ command: Command, context: CommandContext = CommandContext(),
        completion: @escaping @Sendable (Result<CommittedEvent, ChordStoreError>) -> Void
    ) {
        backend.prepareWrite(store: context.store)
        writer.submit(SubmittedCommand(command: command, context: context), completion: completion)
    }

    /// Chordsets in `order` (creation date by default), at most `limit` of them.
    public func chordsets(order: ChordsetOrder = .creationDate, limit: Int? = nil, store: String = StoreName.default) throws(ChordStoreError) -> [Chordset] {
        if let limit, limit < 0 { throw ChordStoreError(.invalidArgument, "limit \(limit) is negative") }
        return try backend.withSnapshot(store: store) { try $0.chordsets(order: order, limit: limit) }
    }

    /// The chordset with `id`, or `nil`.
    public func chordset(_ id: UUID, store: String = StoreName.default) throws(ChordStoreError) -> Chordset? {
        try backend.withSnapshot(store: store) { try $0.chordset(id) }
    }

    /// The chordset with `id` as a serialized `chordstore.v1.Chordset` message (what
    /// `GetChordset` answers), or `nil`; read from the view without decoding it.
    package func chordsetMessage(_ id: UUID, store: String = StoreName.default) throws(ChordStoreError) -> [UInt8]? {
        try backend.withSnapshot(store: store) { try $0.chordsetMessage(id) }
    }

    /// The chord with `id` and the chordset it belongs to (`nil` for the controls chord).
    public func chord(_ id: UUID, store: String = StoreName.default) throws(ChordStoreError) -> (chord: Chord, chordsetID: UUID?)? {
        try backend.withSnapshot(store: store) { snapshot -> (Chord, UUID?)? in
            switch try snapshot.chordLocation(id) {
            case .chordset(let chordsetID, let position):
                guard let chordset = try snapshot.chordset(chordsetID), chordset.chords.indices.contains(position) else { return nil }
                return (chordset.chords[position], chordsetID)
            case .controls:
                return try snapshot.controlsChord().map { ($0, nil) }
            case nil:
                return nil
            }
        }
    }

    /// The stand-alone controls chord, if set.
    public func controlsChord(store: String = StoreName.default) throws(ChordStoreError) -> Chord? {
        try backend.withSnapshot(store: store) { try $0.controlsChord() }
    }

    /// Counts of chordsets and chords, as the seed app printed on save.
    public func profile(store: String = StoreName.default) throws(ChordStoreError) -> Profile {
        try backend.withSnapshot(store: store) { snapshot in
            Profile(
                chordsets: try snapshot.chordsetCount(), chords: try snapshot.chordCount(),
                hasControlsChord: try snapshot.controlsChord() != nil, lastSequence: snapshot.record.head)
        }
    }

    /// The state as it was at `point`: after the event with that sequence number, or after
    /// the last event committed at or before that time. Built from the newest snapshot
    /// before the point plus a replay of the events after it (bounded by the snapshot
    /// interval); the last state built is kept for the next read.
    public func state(asOf point: AsOf, store: String = StoreName.default) throws(ChordStoreError) -> PastState {
        try timeTravel.state(asOf: point, store: store, backend: backend)
    }

    /// Writes a snapshot of the current state now (the writer also takes them every
    /// ``Options/snapshotInterval`` events); returns its sequence number. Fails with
    /// `failedPrecondition` on a store without snapshots.
    @discardableResult
    public func takeSnapshot() throws(ChordStoreError) -> UInt64 {
        guard let files = backend.snapshotFiles else {
            throw ChordStoreError(.failedPrecondition, "this store takes no snapshots")
        }
        return try backend.withSnapshot(store: StoreName.default) { try files.write($0).sequence }
    }

    /// What undo and redo would do next for `session`. The redo depth is counted up to
    /// ``SessionState/maxReportedDepth``.
    public func session(_ session: String, store: String = StoreName.default) throws(ChordStoreError) -> SessionState {
        try backend.withSnapshot(store: store) { snapshot in
            SessionState(
                session: session, undoTarget: try snapshot.undoTop(session), redoTarget: try snapshot.redoTop(session),
                redoDepth: try snapshot.redoDepth(session, atMost: SessionState.maxReportedDepth))
        }
    }

    /// The revision of `key`: the sequence number of its last change (0: never changed).
    public func revision(_ key: RevisionKey, store: String = StoreName.default) throws(ChordStoreError) -> UInt64 {
        try backend.withSnapshot(store: store) { try $0.revision(key)?.last ?? 0 }
    }

    /// Up to `limit` events of the chordset's history after sequence `after`, oldest first.
    public func history(chordset: UUID, after: UInt64 = 0, limit: Int = 1_000, store: String = StoreName.default) throws(ChordStoreError) -> [RecordedEvent] {
        try backend.withSnapshot(store: store) { snapshot in
            try Self.records(try snapshot.history(chordset: chordset, after: after, limit: max(0, limit)), snapshot)
        }
    }

    /// Up to `limit` events the session caused after sequence `after`, oldest first.
    public func history(session: String, after: UInt64 = 0, limit: Int = 1_000, store: String = StoreName.default) throws(ChordStoreError) -> [RecordedEvent] {
        try backend.withSnapshot(store: store) { snapshot in
            try Self.records(try snapshot.history(session: session, after: after, limit: max(0, limit)), snapshot)
        }
    }

    private static func records(_ sequences: [UInt64], _ snapshot: any StoreSnapshot) throws -> [RecordedEvent] {
        try sequences.map { sequence in
            var found: RecordedEvent?
            try snapshot.forEachRecord(from: sequence) { stored, record in
                found = try RecordCodec.decodeChecked(record)
                return false
            }
            guard let found else { throw ChordStoreError(.dataLoss, "a history names event \(sequence), which the log does not hold") }
            return found
        }
    }

    /// Up to `limit` events from sequence `from` on.
    public func events(from sequence: UInt64 = 1, limit: Int = 1_000, store: String = StoreName.default) throws(ChordStoreError) -> [RecordedEvent] {
        if limit < 0 { throw ChordStoreError(.invalidArgument, "limit \(limit) is negative") }
        if limit == 0 { return [] }
        return try backend.withSnapshot(store: store) { snapshot in
            var events: [RecordedEvent] = []
            try snapshot.forEachRecord(from: sequence) { sequence, record in
                events.append(try RecordCodec.decodeChecked(record))
                return events.count < limit
            }
            return events
        }
    }

    /// Calls `body` with each raw stored record from `sequence` on until it returns `false`
    /// (for `ReadLog`, the change feed, replication and the protobuf JSON output). Each
    /// record is checked first (its sequence number and checksum chain, ``RecordChain``):
    /// a damaged one ends the read with `dataLoss` naming its sequence number. The buffer
    /// is valid during the call only, and `body` must not call the store.
    package func forEachRecord(
        from sequence: UInt64 = 1, store: String = StoreName.default, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws(ChordStoreError) {
        try backend.withSnapshot(store: store) { try $0.forEachRecord(from: sequence, body) }
    }

    /// ``forEachRecord(from:store:_:)`` with each record's chain seed: the checksum of the
    /// log record before it (0 for the log's first), which its own checksum chains to
    /// (for the feed's `with_chain_seeds`).
    package func forEachChainedRecord(
        from sequence: UInt64 = 1, store: String = StoreName.default, _ body: (UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool
    ) throws(ChordStoreError) {
        try backend.withSnapshot(store: store) { try $0.forEachChainedRecord(from: sequence, body) }
    }

    /// Up to `limit` events of the whole log from log position `sequence` on (every
    /// store's, in commit order).
    package func logEvents(from sequence: UInt64, limit: Int) throws(ChordStoreError) -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        guard limit > 0 else { return events }
        try forEachLogRecord(from: sequence) { _, record in
            events.append(try RecordCodec.decodeChecked(record))
            return events.count < limit
        }
        return events
    }

    /// Calls `body` with each raw record of the whole log (every store's events and the
    /// store events, in commit order) from log position `sequence` on, until it returns
    /// `false`: what replication copies. Checked like ``forEachRecord(from:store:_:)``
    /// (sequence and checksum chain, ``RecordChain``); up to `last`, or without it, only
    /// records the views have folded. (A Replicate stream passes the log's committed head,
    /// ``head()``, which needs no snapshot of the views.)
    package func forEachLogRecord(
        from sequence: UInt64 = 1, through last: UInt64? = nil, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws(ChordStoreError) {
        let backend = self.backend
        do {
            let last = try last ?? backend.withStores { try $0.logHead.sequence }
            try RecordChain.forEach(in: LogRecords(backend: backend), from: sequence) { position, record in
                guard position <= last else { return false }
                return try body(position, record)
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Replays the log into a fresh state and compares it with the views (with
    /// ``Options/liveState``, with the state in memory, then with the views); see
    /// ``Verifier``. Fails with `unavailable` over views alone (``openViews(at:options:)``).
    public func verify(progress: (UInt64, UInt64) -> Void = { _, _ in }) throws(ChordStoreError) -> VerifyReport {
        let backend = self.backend
        if let absence = backend.logAbsence { throw absence }
        return try backend.verify(progress: progress)
    }

    /// Replaces the views with a replay of the whole log, in one transaction on the writer
    /// thread (commands wait meanwhile; a crash leaves the old views); with
    /// ``Options/liveState``, the state in memory too.
    public func rebuild(progress: @escaping @Sendable (UInt64, UInt64) -> Void = { _, _ in }) async throws(ChordStoreError) {
        let backend = self.backend
        try await writer.exclusive { () -> Result<Void, ChordStoreError> in
            Result { () throws(ChordStoreError) in try backend.rebuild(progress: progress) }
        }.get()
    }

    /// Commits what is queued, then stops the writer and releases the directory. Later
    /// calls fail with `unavailable`. Calling it again does nothing.
    public func close() {
        writer.close()
        notifier.close()
        backend.close()
    }

    /// Returns when the log holds an event after log position `sequence`, or after
    /// `timeout`, or when the store closes or the task is cancelled (so callers re-check
    /// their state).
    public func waitForCommit(after sequence: UInt64, timeout: Duration = .seconds(1)) async {
        await notifier.wait(after: sequence, timeout: timeout)
    }

    /// Returns when store `store` holds an event after its `sequence`, or after `timeout`,
    /// or when the store closes or the task is cancelled (so callers re-check their state);
    /// `false` if the store is closing. Commits to other stores wake it too, and it goes
    /// back to waiting. A store that does not exist returns at once, unless
    /// `awaitingCreation`: then it is waited for as a store without events (a follower's
    /// copy of a store the leader has just made).
    @discardableResult
    public func waitForCommit(after sequence: UInt64, store: String, awaitingCreation: Bool = false, timeout: Duration = .seconds(1)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !Task.isCancelled, !notifier.isClosed {
            let logPosition = notifier.head
            let known: UInt64?
            do {
                known = try lastSequence(store: store)
            } catch {
                known = awaitingCreation && error.reason == .storeNotFound ? 0 : nil
            }
            guard let head = known, head <= sequence else { break }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            await notifier.wait(after: logPosition, timeout: left)
            if notifier.head <= logPosition { break }  // timed out, or closed
        }
        return !notifier.isClosed
    }

    /// Why the store refuses commands now, if it does: a full disk (they are taken again
    /// once space is freed, without a restart), or a damaged log found when it opened
    /// (until the data directory is repaired). Reads go on either way; a server logs it
    /// when it starts.
    public var writeRefusal: ChordStoreError? { backend.writeRefusal }

    /// Why this node must not lead: a damaged log (writes refused with `DATA_LOSS`), or
    /// views that could not fold events its log holds (a follower's batch, folded after
    /// its log took it). `nil` if it may.
    package var leadRefusal: ChordStoreError? {
        if let refusal = backend.writeRefusal, refusal.code == .dataLoss { return refusal }
        return backend.viewsDamage
    }

    /// The last committed event's sequence number in store `store` (0 for none).
    public func lastSequence(store: String = StoreName.default) throws(ChordStoreError) -> UInt64 {
        try backend.withSnapshot(store: store) { $0.record.head }
    }

    /// The whole log's last position the views reflect (0 for an empty log).
    public func lastLogSequence() throws(ChordStoreError) -> UInt64 {
        try backend.withStores { try $0.logHead.sequence }
    }

    /// One page of `query`'s result, read in one snapshot. A page stops after
    /// `query.limit` matches, or after reading 100,000 index entries (with a cursor to go
    /// on from), so it never reads the whole store at once.
    public func query(_ query: ChordsetQuery, store: String = StoreName.default) throws(ChordStoreError) -> QueryPage {
        guard query.limit >= 0 else { throw ChordStoreError(.invalidArgument, "limit \(query.limit) is negative") }
        try Self.checkTitleFilter(query)
        if let cursor = query.cursor {
            let fits = switch query.order {
            case .creationDate: cursor.count == 24
            case .index: cursor.count == 4
            case .title: cursor.count >= 25 && cursor.count <= 4_096 && cursor[cursor.count - 25] == 0
            }
            guard fits else {
                throw ChordStoreError(.invalidArgument, "the cursor is not one a page of this order (\(query.order.rawValue)) returned")
            }
        }
        return try backend.withSnapshot(store: store) { try QueryRunner.page(query, in: $0) }
    }

    /// How many chordsets match `query`'s filters (its page fields are ignored), and the
    /// log position counted at. With filters, it reads every key of the title index (not
    /// the records).
    public func count(_ query: ChordsetQuery, store: String = StoreName.default) throws(ChordStoreError) -> (count: Int, sequence: UInt64) {
        try Self.checkTitleFilter(query)
        let backend = self.backend
        return try countsRunning.run(orThrow: ChordStoreError(.resourceExhausted, "2 counts are running; retry shortly")) {
            () throws(ChordStoreError) in try backend.withSnapshot(store: store) { try QueryRunner.count(query, in: $0) }
        }
    }

    private static func checkTitleFilter(_ query: ChordsetQuery) throws(ChordStoreError) {
        if let title = query.title, title.text.utf8.count > 1_000 {
            throw ChordStoreError(.invalidArgument, "a title filter is \(title.text.utf8.count) UTF-8 bytes; at most 1,000")
        }
    }

    deinit {
        close()
    }

    /// How many commits (transactions) and events the writer has made since opening: the
    /// ratio shows how well group commit batches concurrent commands.
    public var statistics: WriterStatistics { writer.statistics }

    /// How much room the log and views take and have now (`nil` for a store in memory,
    /// or once closed).
    public var storageUsage: StorageUsage? { backend.storageUsage }
}


