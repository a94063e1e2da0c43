import Foundation

/// A chordset's chords as ``InMemoryState`` keeps them: when their ids are derived from
/// the chordset's (``DerivedChordIDs``: eight chords at positions 0–7, as every chordset
/// the store names has), their tempo and colour alone, 40 bytes a chord where a ``Chord``
/// takes 64 (the largest part of a chordset in memory); else the chords as they are.
struct StoredChords: Sendable, Hashable {
    /// A chord's tempo and colour.
    struct Looks: Sendable, Hashable {
        var bpm: Double
        var color: ChordColor
    }

    private enum Form: Sendable, Hashable {
        /// The chords at positions 0–7, ids derived from the chordset's.
        case derived([Looks])
        /// Chords with ids of their own.
        case full([Chord])
    }

    private var form: Form

    /// `chords`, of the chordset `chordset`, in the smaller form when their ids allow it.
    init(_ chords: [Chord], of chordset: UUID) {
        form = Self.areDerived(chords, of: chordset)
            ? .derived(chords.map { Looks(bpm: $0.bpm, color: $0.color) })
            : .full(chords)
    }

    /// Whether no chord id needs an index entry (every one is derived from the chordset's).
    var areAllDerived: Bool {
        if case .derived = form { true } else { false }
    }

    /// How many chords there are.
    var count: Int {
        switch form {
        case .derived(let looks): looks.count
        case .full(let chords): chords.count
        }
    }

    /// The chords, by position, of the chordset `chordset` (the one they were stored for).
    func chords(of chordset: UUID) -> [Chord] {
        switch form {
        case .derived(let looks):
            looks.enumerated().map { position, looks in
                Chord(id: DerivedChordIDs.chordID(of: chordset, position: position), position: position, bpm: looks.bpm, color: looks.color)
            }
        case .full(let chords):
            chords
        }
    }

    /// The position of the chord `id` among these chords of `chordset`, if it is one.
    func position(of id: UUID, in chordset: UUID) -> Int? {
        switch form {
        case .derived:
            Self.derivedPosition(of: id, in: chordset)
        case .full(let chords):
            chords.first { $0.id == id }?.position
        }
    }

    /// Changes the chord `chordID` of `chordset` in place; `false` if it is not one of
    /// these. A change of its id or position stores the chords as they are.
    mutating func update(_ chordID: UUID, of chordset: UUID, _ change: (inout Chord) -> Void) -> Bool {
        switch form {
        case .derived(var looks):
            guard let position = Self.derivedPosition(of: chordID, in: chordset) else { return false }
            var chord = Chord(id: chordID, position: position, bpm: looks[position].bpm, color: looks[position].color)
            change(&chord)
            guard chord.id == chordID, chord.position == position else {
                var chords = chords(of: chordset)
                chords[position] = chord
                form = .full(chords)
                return true
            }
            form = .full([])  // lets `looks` be the array's only reference: changed in place
            looks[position] = Looks(bpm: chord.bpm, color: chord.color)
            form = .derived(looks)
            return true
        case .full(var chords):
            guard let position = chords.firstIndex(where: { $0.id == chordID }) else { return false }
            form = .full([])
            change(&chords[position])
            form = .full(chords)
            return true
        }
    }

    /// Whether `chords` are the eight of `chordset` at positions 0–7 with derived ids.
    private static func areDerived(_ chords: [Chord], of chordset: UUID) -> Bool {
        guard chords.count == Chordset.chordCount else { return false }
        return chords.enumerated().allSatisfy { position, chord in
            chord.position == position && derivedPosition(of: chord.id, in: chordset) == position
        }
    }

    /// The position the derived id `id` names in `chordset`, if it is derived from it.
    private static func derivedPosition(of id: UUID, in chordset: UUID) -> Int? {
        guard DerivedChordIDs.isDerived(id, of: chordset) else { return nil }
        return Int(id.uuid.15 & 0x0F) - 1
    }
}
