import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The durable backend with its live state in memory (``ChordStore/Options/liveState``):
/// every store's state, changes and command ids as a ``StoreSet`` that the writer decides
/// against and readers read (``LeftRight``), the records in the LMDB log, which is the
/// only thing a commit writes before it is acknowledged. The views become a checkpoint:
/// a background thread folds the committed events into them (``ViewsCheckpointer``); a
/// commit waits for them once they lag ``ChordStore/Options/maxViewsLag`` events (8,192
/// by default). A store opens from them as before (caught up with the log when they lag
/// at most ``maxCatchUp`` events, rebuilt past it), then replays the log into memory.
extension LMDBBackend {
    /// How long the checkpoint thread lets commits gather before it folds them.
    static let checkpointCoalescing: Duration = .milliseconds(10)

    /// The live state, once it is built (`nil`: the views serve reads and commits).
    var live: LeftRight<StoreSet>? { liveSlot.withLock { $0 } }

    /// Builds the live state, from the state saved at the last close and the log's later
    /// events, or from a replay of the whole log (``liveStart`` says which, and why a saved
    /// state was set aside), and starts the checkpoint thread. A log that cannot be
    /// replayed (a damaged record among those read) leaves the backend on its views, as it
    /// was before live state (``liveFailure`` says why): they serve reads, `verify` names
    /// the record.
    /// Views that could not be brought to the log (a full disk) do not stop it: the state
    /// comes from the log, and the views catch up once they can be written.
    func startLive(progress: (UInt64, UInt64) -> Void) {
        if case .damaged(let error)? = viewsFault.withLock({ $0 }) {
            liveFailure.withLock { $0 = error }
            return
        }
        let head = committedHead.withLock { $0 }
        var set: StoreSet
        let start: LiveStart
        switch loadSavedLive(through: head, progress: progress) {
        case .success(let (saved, replayed)):
            set = saved
            start = .saved(at: head.sequence - replayed, replayed: replayed)
        case .failure(.logFailed(let error)):
            // A record after the saved state cannot be replayed: a whole replay could not either.
            liveFailure.withLock { $0 = error }
            return
        case .failure(let setAside):
            do {
                set = try LogReplay.replay(
                    self, through: head.sequence, indexingChords: true, capacities: viewsCapacities(), progress: progress)
            } catch {
                liveFailure.withLock { $0 = error.error }
                return
            }
            start = .replayed(setAside: setAside.why)
        }
        set.logHead = head
        liveStart.withLock { $0 = start }
        liveSlot.withLock { $0 = LeftRight(set) }
        viewsApplied.store((try? viewsEnv.withReadTransaction { try AppliedHead.read($0, dbs) }.sequence) ?? 0, ordering: .releasing)
        let checkpointer = ViewsCheckpointer(coalescing: Self.checkpointCoalescing) { [weak self] in self?.checkpointViews() }
        checkpointerSlot.withLock { $0 = checkpointer }
    }

    /// Why a saved live state was not used.
    enum SetAside: Error {
        /// There was none.
        case none
        /// It is not this log's state, or cannot be read: why.
        case unusable(String)
        /// A record of the log after it could not be replayed (the log is damaged).
        case logFailed(ChordStoreError)

        var why: String? {
            switch self {
            case .none: nil
            case .unusable(let why): why
            case .logFailed(let error): "\(error)"
            }
        }
    }

    /// The live state saved at the last close (``LiveStateFile``), brought to `head` by a
    /// replay of the log's later events (how many is returned). Fails when there is no
    /// file, or when it cannot be used: damaged, written by a version that folds
    /// differently, or of a log position this log does not hold (the record there is
    /// another, or gone). The log's records up to the saved state are not read: a
    /// damaged one there is found by `verify` (and the tail's check when the store opens).
    /// A file left by a save the process did not finish is removed.
    private func loadSavedLive(through head: LogHead, progress: (UInt64, UInt64) -> Void) -> Result<(StoreSet, UInt64), SetAside> {
        unlink(liveStateURL.path + ".new")
        do {
            guard let loaded = try LiveStateFile.read(liveStateURL) else { return .failure(.none) }
            guard loaded.fold == LiveStateFile.foldVersion else {
                return .failure(.unusable("it was folded by a version whose fold is \(loaded.fold), not \(LiveStateFile.foldVersion)"))
            }
            var set = loaded.set
            _ = consume loaded  // the only reference to the set's tables: the replay changes them in place
            let saved = set.logHead
            guard saved.sequence <= head.sequence else {
                return .failure(.unusable("it reflects event \(saved.sequence), past the log's last (\(head.sequence))"))
            }
            if saved.sequence > 0 {
                let there = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs, at: saved.sequence) }
                guard there.sequence == saved.sequence, there.checksum == saved.checksum else {
                    return .failure(.unusable("the log's event \(saved.sequence) is not the one it was folded from"))
                }
            }
            if saved.sequence < head.sequence {
                do {
                    set = try LogReplay.replay(self, through: head.sequence, indexingChords: true, from: consume set, progress: progress)
                } catch {
                    if error.sequence != nil { return .failure(.logFailed(error.error)) }
                    return .failure(.unusable("the log's events after it could not be replayed: \(error.error)"))
                }
            }
            return .success((set, head.sequence - saved.sequence))
        } catch {
            return .failure(.unusable("\(error)"))
        }
    }

    /// Saves the live state for the next opening (``LiveStateFile``), at a close. A
    /// failure is told (``warn``): the next opening then replays more of the log.
    func saveLive() {
        guard let live else { return }
        do {
            try live.read { set in try LiveStateFile.write(set, to: liveStateURL) }
        } catch {
            warn?("the live state was not saved (the next start replays the log instead): \(error)")
        }
    }

    /// Each store's chordsets, indexed chords and events as the views hold them: the room
    /// a replay of the log into memory makes in each store's tables, so that it does not
    /// regrow them (a fifth of a replay of adds was spent doing so). Empty when the views
    /// cannot be read.
    private func viewsCapacities() -> [UInt32: StoreSet.Capacity] {
        let capacities = try? withViewStores { stores in
            try stores.stores(after: nil, limit: .max).map { record in
                let snapshot = try stores.snapshot(of: record)
                let capacity = StoreSet.Capacity(
                    chordsets: try snapshot.chordsetCount(), indexedChords: try snapshot.indexedChordCount(), events: Int(record.head))
                return (record.id, capacity)
            }
        }
        return Dictionary(capacities ?? [], uniquingKeysWith: { first, _ in first })
    }

    /// Folds the log's events the views lack into them, in one transaction of the views.
    /// A failure is recorded as a fault of the views (the next fold tries again; commits
    /// are refused once the views lag ``maxViewsLag`` events).
    func checkpointViews() {
        viewsWriter.withLock { _ in
            guard !viewsEnv.isClosed else { return }
            guard viewsApplied.load(ordering: .acquiring) < committedHead.withLock({ $0 }).sequence else {
                // Views that hold every event are behind nothing (a fault left by an open
                // on a full disk, say).
                viewsFault.withLock { fault in if case .behind? = fault { fault = nil } }
                return
            }
            do {
                try ensureMarkedOpen()
                try withGrowingMap(only: viewsEnv) { try foldMissingEvents() }
                viewsApplied.store(try viewsEnv.withReadTransaction { try AppliedHead.read($0, dbs) }.sequence, ordering: .releasing)
                viewsFault.withLock { fault in if case .behind? = fault { fault = nil } }
                noteViewsCommitted()
            } catch {
                let wrapped = ChordStoreError.wrapping(error)
                viewsFault.withLock { fault in
                    // Damage stays until a rebuild: a passing failure does not hide it.
                    if case .damaged? = fault { return }
                    fault = if wrapped.code == .dataLoss || wrapped.reason == .diverged {
                        .damaged(ChordStoreError(
                            .unavailable, "the views could not take events the log holds (\(wrapped.message)); restart the server to rebuild them"))
                    } else {
                        .behind(wrapped)
                    }
                }
            }
        }
    }

    /// How many events the views lack (live state only).
    var viewsLag: UInt64 {
        let head = committedHead.withLock { $0 }.sequence
        let applied = viewsApplied.load(ordering: .acquiring)
        return head > applied ? head - applied : 0
    }

    /// Before a commit on the live state: a damaged log refuses it; views more than
    /// ``maxViewsLag`` behind are caught up first (their failure refuses it).
    private func prepareLiveCommit() throws(ChordStoreError) {
        if case .damaged(let error)? = viewsFault.withLock({ $0 }) { throw error }
        guard viewsLag > maxViewsLag else { return }
        checkpointViews()
        if viewsLag > maxViewsLag {
            throw viewsFault.withLock { $0 }?.error
                ?? ChordStoreError(.unavailable, "the views are more than \(maxViewsLag) events behind the log and could not catch up")
        }
    }

    /// One turn of the writer on the live state: the batch is decided against memory and
    /// its records appended to the log, in one durable commit of the log; the changed
    /// state is then published, and the views take the batch later.
    func commitLive(
        _ live: LeftRight<StoreSet>, _ batch: [SubmittedCommand], applier: BatchApplier, generator: inout IncreasingIDs
    ) -> [Result<CommittedEvent, ChordStoreError>] {
        do {
            try prepareLiveCommit()
            let (results, defaultHead) = try appendLive(live) { space in
                try applier.apply(batch, to: &space, now: .now, generator: &generator)
            } replay: { results, start, head in
                StoreSet.replayOfCommit(results, after: start, head: head)
            }
            snapshotFiles?.maybeTake(head: defaultHead, backend: self)
            return results
        } catch {
            let failure = ChordStoreError.wrapping(error)
            return batch.map { _ in .failure(failure) }
        }
    }

    /// Imports events into the live state and the log, whole or not at all.
    func importLive(
        _ live: LeftRight<StoreSet>, _ events: [RecordedEvent], store name: String, epoch: UInt64, decider: Decider
    ) throws(ChordStoreError) -> LogHead {
        try prepareLiveCommit()
        do {
            let (head, defaultHead) = try appendLive(live) { space in
                try ImportApplier.apply(events, store: name, epoch: epoch, decider: decider, to: &space)
            } replay: { _, _, _ in
                nil
            }
            snapshotFiles?.maybeTake(head: defaultHead, backend: self)
            return head
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Runs `change` on the writer's copy of the live state with the log's write
    /// transaction, commits the log (durably), publishes the state and tells the
    /// checkpoint thread. `replay` makes the change's replay from its result, the head
    /// before and the head after; `nil` replays the records the change appended. Retried
    /// after a growth of the log's map (the failed try is discarded whole).
    private func appendLive<T: Sendable>(
        _ live: LeftRight<StoreSet>, _ change: (inout LiveSpace<LogTransactionRecords>) throws -> T,
        replay: (T, LogHead, LogHead) -> (@Sendable (inout StoreSet) throws -> Void)?
    ) throws -> (result: T, defaultHead: UInt64) {
        let outcome = try withGrowingMap(only: logEnv) {
            try live.write { set -> (result: (T, LogHead, UInt64), replay: @Sendable (inout StoreSet) throws -> Void) in
                let start = set.logHead
                var appended: [[UInt8]] = []
                var synced = ContinuousClock.now
                let result = try logEnv.withWriteTransaction { txn in
                    let records = LogTransactionRecords(txn: txn, log: dbs.log)
                    let result = try LiveSpace.with(&set, records: records, append: { sequence, record in
                        try KeyBytes.sequence(sequence).withViewBytes { key in
                            try record.withUnsafeBytes { try txn.put(self.dbs.log, key: key, value: $0, flags: .append) }
                        }
                        appended.append(record)
                    }, change)
                    synced = .now
                    return result
                }
                metrics.logSynced(in: ContinuousClock.now - synced)
                let head = set.logHead
                let made = replay(result, start, head) ?? StoreSet.replay(of: appended, head: head)
                return ((result, head, set.store(id: 0)?.head ?? 0), made)
            }
        }
        if outcome.1 != committedHead.withLock({ $0 }) { committedLive(outcome.1) }
        return (outcome.0, outcome.2)
    }

    /// Records `head` as the log's last committed record and wakes the checkpoint thread.
    private func committedLive(_ head: LogHead) {
        committed(head)
        checkpointerSlot.withLock { $0 }?.note()
    }

    /// A follower's batch on the live state: the log takes it (one durable commit), the
    /// live state applies it and is published, then `logged` is called; the views take
    /// it later.
    func appendReplicatedLive(
        _ live: LeftRight<StoreSet>, _ records: [[UInt8]], after previous: LogPosition, logged: (LogHead) -> Void
    ) throws(ChordStoreError) -> LogHead {
        try prepareLiveCommit()
        let head = try appendToLog(records, after: previous, start: committedHead.withLock { $0 })
        do {
            let defaultHead = try logEnv.withReadTransaction { txn in
                try live.write { set in
                    try LiveSpace.with(&set, records: LogTransactionRecords(txn: txn, log: dbs.log), append: nil) { space in
                        try ReplicaApplier.apply(records, after: previous, to: &space)
                    }
                    return (set.store(id: 0)?.head ?? 0, StoreSet.replay(of: records, head: set.logHead))
                }
            }
            snapshotFiles?.maybeTake(head: defaultHead, backend: self)
        } catch {
            // The log holds the batch, the state cannot take it (an event this version does
            // not fold, or a bug): no more writes until a rebuild, as views that could not.
            let wrapped = ChordStoreError.wrapping(error)
            viewsFault.withLock {
                $0 = .damaged(ChordStoreError(
                    .unavailable, "the live state could not take events the log holds (\(wrapped.message)); restart the server to rebuild it"))
            }
        }
        committedLive(head)
        logged(head)
        return head
    }

    /// Replaces the live state with a replay of the log up to `last` (all of it if `nil`).
    func replaceLive(_ live: LeftRight<StoreSet>, through last: UInt64?) throws(ChordStoreError) {
        let logHead = committedHead.withLock { $0 }
        let total = min(last ?? .max, logHead.sequence)
        do {
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs, at: total) }
            try live.replace { _ throws(ChordStoreError) in
                var set: StoreSet
                do throws(LogReplay.Failure) {
                    set = try LogReplay.replay(self, through: total, indexingChords: true) { _, _ in }
                } catch {
                    throw error.error
                }
                set.logHead = head
                return set
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Every store as the live state has it, with a read transaction of the log for
    /// their records.
    func withLiveStores<T>(_ live: LeftRight<StoreSet>, _ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        do {
            // The state first: the log then holds at least every event it reflects.
            return try live.read { set in
                try logEnv.withReadTransaction { txn in
                    try body(InMemoryStores(all: set, records: LogTransactionRecords(txn: txn, log: dbs.log)))
                }
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }
}
