/// One message of a live query (`WatchQuery`), with the result it leaves: the first one
/// carries the whole result, each later one the deltas that turn the previous result
/// into this one (``ListDelta``), in the order to apply them.
public struct QueryUpdate: Sendable, Hashable {
    /// Whether this is the first message, whose ``chordsets`` are the whole result.
    public var isInitial: Bool
    /// The result after this update.
    public var chordsets: [Chordset]
    /// What changed since the previous message (empty in the first).
    public var deltas: [ListDelta]
    /// The store's last event the result reflects.
    public var sequence: UInt64

    /// Creates an update.
    public init(isInitial: Bool, chordsets: [Chordset], deltas: [ListDelta], sequence: UInt64) {
        self.isInitial = isInitial
        self.chordsets = chordsets
        self.deltas = deltas
        self.sequence = sequence
    }
}
