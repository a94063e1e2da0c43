/// A read of the live state met a store evicted from memory
/// (``EvictedStoreReading/throwUnlessFolded(_:)``).
struct EvictedStoreMet: Error {
    /// The store as the state holds it: its registry record and index into the log.
    let store: StoreSet.Store
    /// The ``StoreSet/generation`` of that state.
    let generation: UInt64
}
