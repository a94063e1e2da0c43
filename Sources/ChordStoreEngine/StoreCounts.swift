/// How many chordsets and chords a store holds: what a list of stores reads of it, kept
/// while it is evicted from memory (``StoreSet/Store/evicted``).
struct StoreCounts: Sendable, Equatable {
    /// The store's chordsets.
    var chordsets: Int
    /// Its chords: eight per chordset, and the controls chord if it has one.
    var chords: Int
}
