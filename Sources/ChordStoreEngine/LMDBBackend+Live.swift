import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The durable backend with its live state in memory (``ChordStore/Options/liveState``):
/// every store's state, changes and command ids as a ``StoreSet`` that the writer decides
/// against and readers read (``LeftRight``), the records in the LMDB log, which is the
/// only thing a commit writes before it is acknowledged. The checkpoint is the state
/// saved whole (``LiveStateFile``): at a clean close, and in the background once the log
/// has grown enough since the last save (``LiveStateSaver``); a store opens from it and
/// replays the log's later events. The views take no commit: they are brought to the
/// live state only when something reads them (a copy of the files, `verify`: see
/// ``bringViewsUp()``), or when the live state cannot be built (a damaged log), which
/// leaves the store on them, as without live state.
extension LMDBBackend {
    /// The live state, once it is built (`nil`: the views serve reads and commits).
    var live: LeftRight<StoreSet>? { liveSlot.withLock { $0 } }

    /// Builds the live state, from the state saved last and the log's later
    /// events, or from a replay of the whole log (``liveStart`` says which, and why a saved
    /// state was set aside), and starts the thread that saves it. A log that cannot be
    /// replayed (a damaged record among those read) leaves the backend on its views, as it
    /// was before live state (``liveFailure`` says why): they are brought to the log, or,
    /// past a record that cannot be read, rebuilt from the records before it
    /// (``fallBackToViews(markFailure:progress:)``), and serve reads; a record that cannot
    /// be read refuses writes; `verify` names the record.
    /// `markFailure`: why the views could not be marked open, if they could not.
    func startLive(markFailure: ChordStoreError?, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        if case .damaged(let error)? = viewsFault.withLock({ $0 }) {
            liveFailure.withLock { $0 = error }
            try fallBackToViews(markFailure: markFailure, progress: progress)
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
            try fallBackToViews(markFailure: markFailure, progress: progress)
            return
        case .failure(let setAside):
            do {
                set = try LogReplay.replay(
                    self, through: head.sequence, indexingChords: true, capacities: viewsCapacities(), budget: residency?.bound,
                    load: foldFromLog, progress: progress)
            } catch {
                liveFailure.withLock { $0 = error.error }
                try fallBackToViews(markFailure: markFailure, progress: progress)
                return
            }
            start = .replayed(setAside: setAside.why)
        }
        set.logHead = head
        liveStart.withLock { $0 = start }
        let live = LeftRight(set)
        liveSlot.withLock { $0 = live }
        // The load's and the replay's threads decoded into their own arenas of the
        // allocator, and what the state did not keep of it (the chordsets' chords as
        // decoded, before their stored form) stays there, freed but held by the process:
        // given back in the background once the state is built, not on the way to the
        // first read.
        DispatchQueue.global(qos: .utility).async { Self.returnFreedMemory() }
        viewsApplied.store((try? viewsHead().sequence) ?? 0, ordering: .releasing)
        var last: LiveSaveSchedule.Saved?
        if case .saved(let at, _) = start { last = LiveSaveSchedule.Saved(sequence: at, bytes: LiveStateFile.size(at: liveStateURL)) }
        let saver = LiveStateSaver(last: last, least: liveStateSaveEvents) { [weak self] in self?.saveLiveInBackground(live) }
        saverSlot.withLock { $0 = saver }
        if let residency {
            let evictor = StateEvictor { [weak self] in self?.keepStateBound(live, residency) }
            residency.onLoad { [weak evictor] in evictor?.noteChange() }
            evictorSlot.withLock { $0 = evictor }
            evictor.noteChange()  // a state loaded whole may be over the bound
        }
        // A start that replayed past a save's due point saves at once: a kill before the
        // next commit would replay as much again.
        saver.committed(head.sequence)
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

    /// The live state saved last (``LiveStateFile``), brought to `head` by a
    /// replay of the log's later events (how many is returned). Fails when there is no
    /// file, or when it cannot be used: damaged, written by a version that folds
    /// differently, or of a log position this log does not hold (the record there is
    /// another, or gone). The log's records up to the saved state are not read: a
    /// damaged one there is found by `verify` (and the tail's check when the store opens).
    /// A file left by a save the process did not finish is removed.
    private func loadSavedLive(through head: LogHead, progress: (UInt64, UInt64) -> Void) -> Result<(StoreSet, UInt64), SetAside> {
        unlink(liveStateURL.path + ".new")
        var set: StoreSet
        switch savedLive(through: head, bound: residency?.bound) {
        case .success(let loaded): set = loaded
        case .failure(let setAside): return .failure(setAside)
        }
        let saved = set.logHead
        if saved.sequence < head.sequence {
            do {
                // A store evicted when the state was saved is folded from the log if the
                // replay has events of it, and stays evicted otherwise.
                set = try LogReplay.replay(
                    self, through: head.sequence, indexingChords: true, from: consume set, budget: residency?.bound, load: foldFromLog,
                    progress: progress)
            } catch {
                if error.sequence != nil { return .failure(.logFailed(error.error)) }
                return .failure(.unusable("the log's events after it could not be replayed: \(error.error)"))
            }
        }
        return .success((set, head.sequence - saved.sequence))
    }

    /// The state saved last (``LiveStateFile``), if this log can take it: this version's
    /// fold, and a log position the log holds (the same record there: the checksums
    /// chain, so the whole log up to it is the one it was folded from).
    func savedLive(through head: LogHead, bound: Int? = nil) -> Result<StoreSet, SetAside> {
        do {
            guard let loaded = try LiveStateFile.read(liveStateURL, bound: bound) else { return .failure(.none) }
            guard loaded.fold == LiveStateFile.foldVersion else {
                return .failure(.unusable("it was folded by a version whose fold is \(loaded.fold), not \(LiveStateFile.foldVersion)"))
            }
            let set = loaded.set
            _ = consume loaded  // the only reference to the set's tables: a replay changes them in place
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
            return .success(set)
        } catch {
            return .failure(.unusable("\(error)"))
        }
    }

    /// Saves the live state for the next opening (``LiveStateFile``), at a close. A
    /// failure is told (``warn``): the next opening then replays more of the log.
    func saveLive() {
        guard let live else { return }
        do {
            _ = try live.read { set in try LiveStateFile.write(set, to: liveStateURL) }
        } catch {
            warn?("the live state was not saved (the next start replays the log instead): \(error)")
        }
    }

    /// Saves a copy of the published live state, on the saver's thread
    /// (``LiveStateSaver``): the copy is taken under the read (a retain of each table), the
    /// file written outside it, so readers and the writer go on. The writer then copies the
    /// tables it changes next, once, as it does for a reader that stays. A failure is told
    /// (``warn``) and returns `nil`.
    private func saveLiveInBackground(_ live: LeftRight<StoreSet>) -> LiveSaveSchedule.Saved? {
        let set = live.read { $0 }
        do {
            let bytes = try LiveStateFile.write(set, to: liveStateURL)
            return LiveSaveSchedule.Saved(sequence: set.logHead.sequence, bytes: bytes)
        } catch {
            warn?("the live state was not saved in the background (a start after a kill replays more of the log): \(error)")
            return nil
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

    /// Before a commit on the live state: a damaged log refuses it.
    private func prepareLiveCommit() throws(ChordStoreError) {
        if case .damaged(let error)? = viewsFault.withLock({ $0 }) { throw error }
    }

    /// One turn of the writer on the live state: the batch is decided against memory and
    /// its records appended to the log, in one durable commit of the log; the changed
    /// state is then published.
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
    /// transaction, commits the log (durably), publishes the state and tells the thread
    /// that saves it. `replay` makes the change's replay from its result, the head
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
                    let result = try LiveSpace.with(&set, records: records, residency: residency, append: { sequence, record in
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
                let made = replay(result.result, start, head) ?? StoreSet.replay(of: appended, head: head)
                return ((result.result, head, set.store(id: 0)?.head ?? 0), StoreSet.replay(loading: result.loaded, then: made))
            }
        }
        if outcome.1 != committedHead.withLock({ $0 }) {
            committedLive(outcome.1)
        } else {
            evictorSlot.withLock { $0 }?.noteChange()  // a turn that logged nothing may have loaded a store
        }
        return (outcome.0, outcome.2)
    }

    /// Records `head` as the log's last committed record and tells the thread that saves
    /// the live state (which wakes when a save is due).
    private func committedLive(_ head: LogHead) {
        committed(head)
        saverSlot.withLock { $0 }?.committed(head.sequence)
        evictorSlot.withLock { $0 }?.noteChange()
    }

    /// A follower's batch on the live state: the log takes it (one durable commit), the
    /// live state applies it and is published, then `logged` is called.
    func appendReplicatedLive(
        _ live: LeftRight<StoreSet>, _ records: [[UInt8]], after previous: LogPosition, logged: (LogHead) -> Void
    ) throws(ChordStoreError) -> LogHead {
        try prepareLiveCommit()
        let start = committedHead.withLock { $0 }
        let head = try appendToLog(records, after: previous, start: start)
        do {
            // Checked as the log took them: decoded once, for both copies of the state.
            let decoded = try ReplicaApplier.decodeLogged(records, after: start)
            let defaultHead = try logEnv.withReadTransaction { txn in
                try live.write { set in
                    let applied = try LiveSpace.with(&set, records: LogTransactionRecords(txn: txn, log: dbs.log), residency: residency, append: nil) {
                        space in try ReplicaApplier.foldLogged(decoded, after: start, to: &space)
                    }
                    return (set.store(id: 0)?.head ?? 0, StoreSet.replay(loading: applied.loaded) { set in try ReplicaApplier.foldLogged(decoded, after: start, to: &set) })
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

    /// Replaces the live state with a replay of the log up to `last` (all of it if `nil`);
    /// the next commit saves it (a state saved before may be of events no longer logged).
    func replaceLive(_ live: LeftRight<StoreSet>, through last: UInt64?) throws(ChordStoreError) {
        let logHead = committedHead.withLock { $0 }
        let total = min(last ?? .max, logHead.sequence)
        do {
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs, at: total) }
            try live.replace { previous throws(ChordStoreError) in
                var set: StoreSet
                do throws(LogReplay.Failure) {
                    set = try LogReplay.replay(self, through: total, indexingChords: true, budget: residency?.bound, load: foldFromLog) { _, _ in }
                } catch {
                    throw error.error
                }
                set.logHead = head
                return set.replacing(previous)
            }
            saverSlot.withLock { $0 }?.forget(at: head.sequence)
            evictorSlot.withLock { $0 }?.noteChange()
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Every store as the live state has it, with a read transaction of the log for
    /// their records, begun only if the read looks one up (a point read does not).
    func withLiveStores<T>(_ live: LeftRight<StoreSet>, _ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        do {
            return try readLive(live, evicted: .foldInRead, body)
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func withSnapshot<T>(store name: String, _ body: (any StoreSnapshot) throws -> T) throws(ChordStoreError) -> T {
        let name = StoreName.resolved(name)
        try StoreName.check(name)
        if viewsEnv.isClosed { throw ChordStoreError(.unavailable, "the store is closed") }
        if let live { return try readLiveStore(live, named: name, body) }
        return try withViewStores { try body(try $0.readingStore(named: name)) }
    }

    /// Runs `body` on the live state's store `name` (resolved and checked). An evicted
    /// store is folded from the log outside the read, not in it: the read ends when it
    /// meets the store (``EvictedStoreMet``), the store is folded in a log transaction of
    /// its own and left to be put back in memory, and the read runs again with it. A read
    /// that held the state through the fold (0.85 s for a store of 100,000 events) made
    /// the writer's next commit but one wait 5 ms for it, then copy the whole state. If
    /// the fold fails (the log cut back meanwhile), or the second read meets the store
    /// again (evicted again at another event, or the state replaced), a third read folds
    /// it in the read, as before (and answers a cut log as any read does).
    private func readLiveStore<T>(
        _ live: LeftRight<StoreSet>, named name: String, _ body: (any StoreSnapshot) throws -> T
    ) throws(ChordStoreError) -> T {
        do {
            let met: EvictedStoreMet
            do {
                return try readLive(live, evicted: .throwUnlessFolded(nil)) { try body(try $0.readingStore(named: name)) }
            } catch let error as EvictedStoreMet {
                met = error
            }
            if let store = try? foldFromLog(met.store) {
                residency?.loaded(store, generation: met.generation)
                do {
                    let folded = FoldedStore(store: store, generation: met.generation)
                    return try readLive(live, evicted: .throwUnlessFolded(folded)) { try body(try $0.readingStore(named: name)) }
                } catch is EvictedStoreMet {}
            }
            return try readLive(live, evicted: .foldInRead) { try body(try $0.readingStore(named: name)) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Runs `body` on the live state, read as `evicted` says, with the log's records.
    private func readLive<T>(
        _ live: LeftRight<StoreSet>, evicted: EvictedStoreReading, _ body: (any StoresSnapshot) throws -> T
    ) throws -> T {
        // The state first: the log, read at the first lookup, then holds every event it
        // reflects, unless it was cut back meanwhile (LazyLogRecords checks).
        try live.read { set in
            try logEnv.withLazyReadTransaction { lazy in
                let records = LazyLogRecords(lazy: lazy, log: dbs.log, head: set.logHead)
                return try body(InMemoryStores(all: set, records: records, residency: residency, evicted: evicted))
            }
        }
    }
}
