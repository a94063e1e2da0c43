/// What a server tells of one of its stores (`GetStoreInfo`, `ListStores`).
public struct StoreInfo: Sendable, Hashable {
    /// The store's name.
    public var name: String
    /// Its id in the log (0 for `default`; a deleted and re-created name gets a new one).
    public var id: UInt32
    /// When it was created (`nil` for a `default` store that has no event yet).
    public var created: Instant?
    /// Its chordsets and chords (the controls chord included).
    public var chordsets: Int, chords: Int
    /// Its last event's sequence number in the store (0: none).
    public var headSequence: UInt64
    /// The whole log's last position when this was read.
    public var logSequence: UInt64

    /// Creates a store description.
    public init(name: String, id: UInt32, created: Instant?, chordsets: Int, chords: Int, headSequence: UInt64, logSequence: UInt64) {
        self.name = name
        self.id = id
        self.created = created
        self.chordsets = chordsets
        self.chords = chords
        self.headSequence = headSequence
        self.logSequence = logSequence
    }
}
