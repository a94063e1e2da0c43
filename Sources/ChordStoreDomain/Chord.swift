public import Foundation

/// One chord: a position in its chordset, a tempo and a background colour.
public struct Chord: Sendable, Hashable, Identifiable {
    /// The chord's identity, unique across all chords including the controls chord.
    public var id: UUID
    /// Where the chord sits in its chordset, `0..<Chordset.chordCount`. The controls
    /// chord has position 0.
    public var position: Int
    /// Beats per minute.
    public var bpm: Double
    /// The background colour.
    public var color: ChordColor

    /// Creates a chord value.
    public init(id: UUID, position: Int, bpm: Double, color: ChordColor) {
        self.id = id
        self.position = position
        self.bpm = bpm
        self.color = color
    }
}

/// Where a chord lives: in a chordset at a position, or as the stand-alone controls chord.
public enum ChordLocation: Sendable, Hashable {
    /// The chord belongs to the chordset `chordsetID` at `position`.
    case chordset(UUID, position: Int)
    /// The chord is the controls chord, which belongs to no chordset.
    case controls
}
