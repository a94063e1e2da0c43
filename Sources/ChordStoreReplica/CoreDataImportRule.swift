/// The rules of a Core Data import (docs/DEVICES.md, "Coming from Core Data"): what is
/// filled, what is skipped, what is refused. Each names what it did in a note.
public enum CoreDataImportRule: String, Sendable, Hashable, CaseIterable {
    /// A NULL title became the empty title (the apps show `title ?? ""`).
    case titleFilled = "title-filled"
    /// Control characters of a title (a line break) became spaces.
    case titleCleaned = "title-cleaned"
    /// A title longer than the store allows was cut at a character boundary.
    case titleTruncated = "title-truncated"
    /// A NULL (or unrepresentable) creation date became Core Data's reference date,
    /// 2001-01-01T00:00:00Z (its date 0).
    case dateFilled = "date-filled"
    /// A NULL, unreadable or repeated id, or one the store holds for another kind of row
    /// (or, for a chord, at all), became one derived from the store's UUID, the entity
    /// and the row's `Z_PK` (the same at every import of the same rows).
    case idFilled = "id-filled"
    /// A chordset's missing position got a chord: derived id, default tempo, fill colour.
    case chordFilled = "chord-filled"
    /// A chord without a position, outside 0–7, or at one an earlier chord (by `Z_PK`)
    /// of its chordset holds moved to its chordset's lowest free position.
    case chordPlaced = "chord-placed"
    /// A chord that needed a position when its chordset had none free: skipped.
    case chordSkipped = "chord-skipped"
    /// A chord that belongs to no chordset and is not the controls chord, or whose
    /// chordset key names no row: skipped.
    case chordOrphaned = "chord-orphaned"
    /// A NULL tempo, or one outside the store's range (a scalar never set reads 0),
    /// became the default tempo.
    case bpmFilled = "bpm-filled"
    /// A chord with no colour got the fill colour.
    case colorFilled = "color-filled"
    /// A colour component that was NULL took the fill colour's; one outside 0–1 was
    /// clamped into it.
    case colorFixed = "color-fixed"
    /// An `RLColor` row no chord uses: skipped.
    case colorUnused = "color-unused"
    /// A chordset this device imported before: skipped (with its chords and colours).
    case alreadyImported = "already-imported"
    /// A chordset whose id the store holds, not from an import of this device: skipped.
    case alreadyInStore = "already-in-store"
    /// The store has a controls chord already, another or changed since: it is kept.
    case controlsKept = "controls-kept"
    /// The store's rules refused the row as mapped (the note says why): skipped.
    case refused
}
