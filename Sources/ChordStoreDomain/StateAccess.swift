public import Foundation

/// Read access to the projected state, as the decider and the invariant checks need it.
/// Implemented in memory (``InMemoryState``) and over an LMDB transaction by the engine.
public protocol StateReading {
    /// The chordset with `id`, with its index and its chords in position order.
    func chordset(_ id: UUID) throws -> Chordset?
    /// Where the chord `id` lives, or `nil` if no chord has that id.
    func chordLocation(_ id: UUID) throws -> ChordLocation?
    /// The stand-alone controls chord, if one was set.
    func controlsChord() throws -> Chord?
    /// How many chordsets there are.
    func chordsetCount() throws -> Int
    /// How many chords there are, counting the controls chord.
    func chordCount() throws -> Int
    /// The id of the chordset at `index` in the user order.
    func chordsetID(atIndex index: Int) throws -> UUID?
    /// The chordsets the ``Event/allDeleted(count:)`` event at `sequence` removed (with
    /// their indexes then), or `nil` if no delete-all is recorded there.
    func deletedChordsets(at sequence: UInt64) throws -> [Chordset]?
    /// Whether a chord, the controls chord included, already has one of the eight ids
    /// derived from `chordset`'s (``DerivedChordIDs``), which must name no chordset: a
    /// client may have given such an id to a chord of its own. An add of a chordset the
    /// store names asks this once instead of looking up each of its chords' ids.
    func holdsChordID(derivedFrom chordset: UUID) throws -> Bool
}

extension StateReading {
    /// Each derived id looked up in turn.
    public func holdsChordID(derivedFrom chordset: UUID) throws -> Bool {
        try (0..<Chordset.chordCount).contains { try chordLocation(DerivedChordIDs.chordID(of: chordset, position: $0)) != nil }
    }
}

/// The primitive mutations the fold is written in. Implementations keep their indexes
/// (chord locations, the user order) consistent; the fold guarantees the preconditions.
public protocol StateWriting: StateReading {
    /// Inserts `chordset` at `chordset.index` (at most the count); later ones shift up.
    mutating func insertChordset(_ chordset: Chordset) throws
    /// Replaces the stored title and chords of an existing chordset; its index is unchanged.
    mutating func replaceChordset(_ chordset: Chordset) throws
    /// Removes a chordset and its chords; later ones shift down.
    mutating func removeChordset(_ chordset: Chordset) throws
    /// Moves a chordset from one index to another.
    mutating func moveChordset(_ id: UUID, from: Int, to: Int) throws
    /// Sets or clears the controls chord.
    mutating func setControlsChord(_ chord: Chord?) throws
    /// Removes every chordset and chord but the controls chord, keeping the removed
    /// chordsets under `sequence` (see ``StateReading/deletedChordsets(at:)``); returns
    /// their ids.
    mutating func removeAllChordsets(deletedAt sequence: UInt64) throws -> [UUID]
    /// Inserts back the chordsets kept under `sequence`, in index order; returns their ids.
    mutating func restoreChordsets(deletedAt sequence: UInt64) throws -> [UUID]
    /// Sets a chordset's title; returns `false` if there is no such chordset.
    mutating func retitleChordset(_ id: UUID, to title: String) throws -> Bool
    /// Changes one chord of a chordset in place; returns `false` if either is missing.
    mutating func updateChord(_ chordID: UUID, inChordset chordsetID: UUID, _ change: (inout Chord) -> Void) throws -> Bool
}

extension StateWriting {
    /// Read, change, write back: the default for stores without in-place updates.
    public mutating func retitleChordset(_ id: UUID, to title: String) throws -> Bool {
        guard var chordset = try chordset(id) else { return false }
        chordset.title = title
        try replaceChordset(chordset)
        return true
    }

    /// Read, change, write back: the default for stores without in-place updates.
    public mutating func updateChord(_ chordID: UUID, inChordset chordsetID: UUID, _ change: (inout Chord) -> Void) throws -> Bool {
        guard var chordset = try chordset(chordsetID),
              let position = chordset.chords.firstIndex(where: { $0.id == chordID }) else { return false }
        change(&chordset.chords[position])
        try replaceChordset(chordset)
        return true
    }
}
