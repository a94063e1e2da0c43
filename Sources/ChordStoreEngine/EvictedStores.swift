/// What a read of the live state does with a store evicted from memory.
enum EvictedStores {
    /// Folds it from the log in the read, while the read holds the state (the writer's
    /// next commit but one waits for it, then copies the state: ``LeftRight``): reads of
    /// several stores (`verify`, a list of stores), which report as they go.
    case foldedInRead
    /// Throws ``EvictedStoreMet`` (the read ends; its caller folds the store outside the
    /// read and runs the read again), unless `folded` is that store, folded already, at
    /// the same event and in a set of the same generation.
    case met(folded: (store: StoreSet.Store, generation: UInt64)?)
}

/// A read met a store evicted from memory (``EvictedStores/met(folded:)``): `store` as
/// the set of `generation` holds it (its index into the log), to be folded.
struct EvictedStoreMet: Error {
    let store: StoreSet.Store
    let generation: UInt64
}
