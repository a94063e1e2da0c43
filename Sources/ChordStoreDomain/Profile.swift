/// Counts of a store, as the seed app's `profile()` printed them.
public struct Profile: Sendable, Hashable {
    /// Number of chordsets.
    public var chordsets: Int
    /// Number of chords, including the controls chord: `8 × chordsets` (+ 1).
    public var chords: Int
    /// Whether the controls chord is set.
    public var hasControlsChord: Bool
    /// The last event's sequence number (0 for an empty log).
    public var lastSequence: UInt64

    /// Creates a profile.
    public init(chordsets: Int, chords: Int, hasControlsChord: Bool, lastSequence: UInt64) {
        self.chordsets = chordsets
        self.chords = chords
        self.hasControlsChord = hasControlsChord
        self.lastSequence = lastSequence
    }
}
