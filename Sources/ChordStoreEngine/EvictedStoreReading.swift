/// What a read of the live state (``InMemoryStores``) does with a store evicted from
/// memory.
enum EvictedStoreReading {
    /// Folds it from the log in the read, while the read holds the state (the writer's
    /// next commit but one waits up to 5 ms for it, then copies the state: ``LeftRight``).
    /// What `verify` does, and a read of one store whose fold outside failed.
    case foldInRead
    /// Throws ``EvictedStoreMet`` (the read ends; its caller folds the store outside the
    /// read and runs the read again), unless the store met is the one folded already.
    case throwUnlessFolded(FoldedStore?)
}

/// A store evicted from memory, folded again from the log outside a read of the state.
struct FoldedStore {
    /// The store with its tables.
    let store: StoreSet.Store
    /// The ``StoreSet/generation`` of the state it was evicted in.
    let generation: UInt64

    /// Whether this is the fold of `evicted`, as the state of `generation` holds it: the
    /// same store at the same event, in a state not replaced since (a store's id is never
    /// given again, any write of a store moves its head, and a cut of the log or a
    /// rebuild replaces the state).
    func isFold(of evicted: StoreSet.Store, generation: UInt64) -> Bool {
        self.generation == generation && store.record.id == evicted.record.id && store.record.head == evicted.record.head
    }
}
