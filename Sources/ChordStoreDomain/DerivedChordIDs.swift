public import Foundation

/// Chord ids made from their chordset's id, so that the chordset of a chord needs no index
/// entry to be found: a chordset id the store generates ends in a zero nibble (its last
/// byte's low four bits), and its chord at position `p` gets the same id with `p + 1` in
/// that nibble. Ids a client chose, or chords imported with their ids, are not derived
/// and are indexed as before.
///
/// Neither the state in memory nor the views (layout 9) keep a chord index entry for a
/// derived id: the chordset it names is looked up and its chords searched
/// (``InMemoryState/chordLocation(_:)``), which takes eight of the nine hash table entries
/// an add made out of the state, and eight of the B-tree entries it made in the views;
/// ``StoredChords`` keeps such chords without their ids.
///
/// ```swift
/// let chordset = DerivedChordIDs.aligned(UUID())
/// let chord = DerivedChordIDs.chordID(of: chordset, position: 3)  // ends in 4
/// DerivedChordIDs.owner(of: chord) == chordset                     // true
/// ```
public enum DerivedChordIDs {
    /// `id` with its last nibble zero: an id whose chords' ids can be derived.
    public static func aligned(_ id: UUID) -> UUID {
        var bytes = id.uuid
        bytes.15 &= 0xF0
        return UUID(uuid: bytes)
    }

    /// The id of the chord at `position` (0–7) of the chordset `chordset`, whose last
    /// nibble must be zero (``aligned(_:)``).
    public static func chordID(of chordset: UUID, position: Int) -> UUID {
        precondition(chordset.uuid.15 & 0x0F == 0 && (0..<Chordset.chordCount).contains(position))
        var bytes = chordset.uuid
        bytes.15 |= UInt8(position + 1)
        return UUID(uuid: bytes)
    }

    /// The chordset a chord with id `chord` belongs to if its id was derived, or `nil`
    /// when it cannot have been (its last nibble is not 1–8). Whether it was is for the
    /// state to tell: the chordset must exist and hold the chord.
    public static func owner(of chord: UUID) -> UUID? {
        var bytes = chord.uuid
        guard (1...UInt8(Chordset.chordCount)).contains(bytes.15 & 0x0F) else { return nil }
        bytes.15 &= 0xF0
        return UUID(uuid: bytes)
    }

    /// Whether `chord`'s id is derived from `chordset`'s: the one rule for which chords no
    /// chord index keeps (``IDKey/isDerived(of:)`` is the same on keys).
    public static func isDerived(_ chord: UUID, of chordset: UUID) -> Bool { owner(of: chord) == chordset }
}
