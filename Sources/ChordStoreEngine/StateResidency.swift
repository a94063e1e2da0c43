import Synchronization

/// Which stores of the live state are used, for the memory bound
/// (``ChordStore/Options/maxStateMemory``): every read and write of a store notes it here
/// (a lock held for a dictionary write), and a reader that had to fold an evicted store
/// from the log, or a command about to be queued for one, leaves it here: for the thread
/// that keeps the bound (``StateEvictor``) to put back in memory, so that the next read
/// finds it there, or for the writer to take instead of folding it.
final class StateResidency: Sendable {
    /// The most bytes the live state's two copies may take (an estimate:
    /// ``StoreSet/Store/estimatedBytes``).
    let bound: Int
    /// The most stores readers' loads wait to be put back at once (more are dropped:
    /// the next read folds them again).
    static let maxWaitingLoads = 64

    /// The least time between two returns of freed memory to the system (``trimDue(at:)``).
    static let trimInterval: Duration = .seconds(1)

    private struct Uses {
        var tick: UInt64 = 0
        var last: [UInt32: UInt64] = [:]
        var loaded: [UInt32: (store: StoreSet.Store, generation: UInt64)] = [:]
        var lastTrim: ContinuousClock.Instant?
    }

    private let uses = Mutex(Uses())
    /// Called when a reader leaves a load (wakes the thread that keeps the bound).
    private let wake = Mutex<(@Sendable () -> Void)?>(nil)

    /// Tracks uses for a state bound to `bound` bytes (both copies, estimated).
    init(bound: Int) {
        self.bound = bound
    }

    /// Calls `wake` whenever a reader leaves a load.
    func onLoad(_ wake: @escaping @Sendable () -> Void) {
        self.wake.withLock { $0 = wake }
    }

    /// Notes a use of the store with `id` (a read, a write).
    func used(_ id: UInt32) {
        uses.withLock { uses in
            uses.tick += 1
            uses.last[id] = uses.tick
        }
    }

    /// A reader folded the evicted `store` from the log (``StoreSet/Store/resident(records:)``),
    /// in the set of `generation` (``StoreSet/generation``): it waits to be put back in memory.
    func loaded(_ store: StoreSet.Store, generation: UInt64) {
        let kept = uses.withLock { uses -> Bool in
            guard uses.loaded.count < Self.maxWaitingLoads || uses.loaded[store.record.id] != nil else { return false }
            uses.loaded[store.record.id] = (store, generation)
            return true
        }
        if kept { wake.withLock { $0 }?() }
    }

    /// The loads readers left, taken, each with the generation of the set it was folded in.
    func takeLoaded() -> [(store: StoreSet.Store, generation: UInt64)] {
        uses.withLock { uses in
            defer { uses.loaded = [:] }
            return Array(uses.loaded.values)
        }
    }

    /// The load left for the store with `id`, taken, if there is one.
    func takeLoaded(id: UInt32) -> (store: StoreSet.Store, generation: UInt64)? {
        uses.withLock { $0.loaded.removeValue(forKey: id) }
    }

    /// How many loads wait to be put back (or taken by the writer).
    var waitingLoads: Int { uses.withLock { $0.loaded.count } }

    /// The last use of each store: a tick, larger is later; a store never used has none.
    func lastUse() -> [UInt32: UInt64] {
        uses.withLock { $0.last }
    }

    /// Whether the memory evictions freed should be returned to the system at `now`
    /// (`malloc_trim`, which walks every arena: at most once per ``trimInterval``); if
    /// so, `now` is noted as the last time.
    func trimDue(at now: ContinuousClock.Instant) -> Bool {
        uses.withLock { uses in
            if let last = uses.lastTrim, now - last < Self.trimInterval { return false }
            uses.lastTrim = now
            return true
        }
    }

    /// Forgets the uses of stores that are no longer live.
    func forget(except live: Set<UInt32>) {
        uses.withLock { uses in uses.last = uses.last.filter { live.contains($0.key) } }
    }
}
