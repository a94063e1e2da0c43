import ChordStoreDomain
import ChordStoreRecords
#if os(Linux)
import CSystemExtras
#endif
import LMDB

/// The live state's memory bound (``ChordStore/Options/maxStateMemory``): the stores used
/// least recently are evicted from memory, keeping their index into the log, and folded
/// again from the log's records when next used (by the writer, as it decides or applies
/// a follower's batch, or by a reader, which leaves its load to be put back).
extension LMDBBackend {
    /// One turn of the thread that keeps the bound (``StateEvictor``): the stores readers
    /// loaded are put back in memory (if still evicted at the same event); then, if the
    /// state is over the bound (its size is kept as it changes: ``StoreSet/estimatedBytes``),
    /// the stores used least recently are evicted from both copies (``ResidencyPlan``).
    /// Each step is a turn of the state's writer (``LeftRight``), between commits. The
    /// plan reads every store in that turn, not in a read of the state: a read that long
    /// (milliseconds for 10,000 stores) would make the writer copy the state.
    func keepStateBound(_ live: LeftRight<StoreSet>, _ residency: StateResidency) {
        let loaded = residency.takeLoaded()
        if !loaded.isEmpty {
            let installed = try? live.write { set in
                // A load from an earlier generation (before a cut of the log) is dropped.
                let installed = loaded.filter { $0.generation == set.generation && set.install($0.store) }.map(\.store)
                return (installed.count, { set in for store in installed { set.install(store) } })
            }
            metrics.stateLoaded(installed ?? 0)
        }
        let (estimate, resident) = live.read { ($0.estimatedBytes, $0.residentCount) }
        var bytes = estimate * ResidencyPlan.copies
        // Over the bound with two stores or more in memory, the plan evicts one at least
        // (never the store used last): a turn with nothing to evict publishes nothing.
        if bytes > residency.bound, resident > 1 {
            let lastUse = residency.lastUse()
            let evicted = try? live.write { set -> (result: (count: Int, bytes: Int), replay: @Sendable (inout StoreSet) throws -> Void) in
                let ids = ResidencyPlan.evictions(set.residency(), lastUse: lastUse, bound: residency.bound)
                set.evict(ids)
                if lastUse.count > set.storeCount() { residency.forget(except: Set(set.stores.keys)) }
                return ((ids.count, set.estimatedBytes * ResidencyPlan.copies), { $0.evict(ids) })
            }
            if let evicted, evicted.count > 0 {
                // The other copy drops them now, not at the next commit.
                _ = try? live.write { _ in ((), { _ in }) }
                metrics.stateEvicted(evicted.count)
                bytes = evicted.bytes
                // glibc keeps freed memory in its arenas: without this, a state under the
                // bound would not show in the process's memory.
                if residency.trimDue(at: .now) { Self.returnFreedMemory() }
            }
        }
        metrics.stateSize(bytes)
    }

    /// The fewest events of an evicted store that its command's caller folds
    /// (``prepareWrite(store:)``); the writer folds smaller ones itself (about 9 ms at
    /// most): measured, folding every store ahead cost 2.6 times the CPU per add when
    /// stores were touched in turn (the loads left over wake the thread that keeps the
    /// bound, whose turns take the writer's lock).
    static let foldAheadEvents: UInt64 = 1_024

    /// A large store evicted from memory (``foldAheadEvents`` events or more) is folded
    /// from the log on the caller's thread before its command is queued, and left with the
    /// uses (``StateResidency/loaded(_:generation:)``): the writer (every write waits for
    /// it) takes it from there instead of folding it, and the thread that keeps the bound
    /// puts it back if the writer has not. The caller does not wait for the writer's lock.
    func prepareWrite(store name: String) {
        guard let residency, let live else { return }
        let resolved = StoreName.resolved(name)
        // The evicted store (its log index) is taken under the read, folded after it: a
        // reader holding the state makes the writer wait for it, then copy the state.
        let evicted = live.read { set -> (StoreSet.Store, UInt64)? in
            guard let record = set.store(named: resolved), record.head >= Self.foldAheadEvents, set.isEvicted(record.id),
                let store = set[record.id]
            else { return nil }
            residency.used(record.id)  // so that the thread that keeps the bound, if it puts it back first, keeps it
            return (store, set.generation)
        }
        guard let (store, generation) = evicted, let folded = try? foldFromLog(store) else { return }
        residency.loaded(folded, generation: generation)
    }

    /// Returns the allocator's free memory to the system (glibc's `malloc_trim`).
    static func returnFreedMemory() {
        #if os(Linux)
        _ = malloc_trim(0)
        #endif
    }

    /// `store`, if evicted, folded again from the log's records, in a read transaction of its own.
    func foldFromLog(_ store: StoreSet.Store) throws -> StoreSet.Store {
        try logEnv.withReadTransaction { txn in try store.resident(records: LogTransactionRecords(txn: txn, log: dbs.log)) }
    }

    /// `set` with every evicted store folded again from the log (what loads the views).
    func residentWhole(_ set: StoreSet) throws(ChordStoreError) -> StoreSet {
        guard set.evictedCount > 0 else { return set }
        do {
            return try logEnv.withReadTransaction { txn in try set.residentWhole(records: LogTransactionRecords(txn: txn, log: dbs.log)) }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }
}
