public import Foundation

/// A request to change the store. Each accepted command becomes exactly one ``Event``.
public enum Command: Sendable, Hashable {
    /// Adds a chordset at the end of the user order, with its eight chords.
    case addChordset(AddChordset)
    /// Replaces a chordset's title.
    case renameChordset(id: UUID, title: String)
    /// Deletes a chordset and, by cascade, its chords and their colours.
    case deleteChordset(id: UUID)
    /// Sets one chord's background colour (a chordset's chord or the controls chord).
    case setChordColor(chordID: UUID, color: ChordColor)
    /// Sets one chord's tempo (a chordset's chord or the controls chord).
    case setChordBPM(chordID: UUID, bpm: Double)
    /// Creates or replaces the stand-alone controls chord.
    case setControlsChord(SetControlsChord)
    /// Moves a chordset to another place in the user order; those between shift by one.
    case moveChordset(id: UUID, toIndex: Int)
    /// Deletes every chordset (and so every chord but the controls chord).
    case deleteAll
    /// Reverts the issuing session's most recent change that is not undone.
    case undo
    /// Re-applies the issuing session's most recently undone change.
    case redo

    /// The ``Event/kindName`` of the event this command is recorded as (undo and redo are
    /// recorded as the compensating event, of any kind, marked as such).
    public var eventKindName: String {
        switch self {
        case .addChordset: "chordset_added"
        case .renameChordset: "chordset_renamed"
        case .deleteChordset: "chordset_deleted"
        case .setChordColor: "chord_color_set"
        case .setChordBPM: "chord_bpm_set"
        case .setControlsChord: "controls_chord_set"
        case .moveChordset: "chordset_moved"
        case .deleteAll: "all_deleted"
        case .undo: "undo"
        case .redo: "redo"
        }
    }

    /// A short kind name, for logs and errors.
    public var kindName: String {
        switch self {
        case .addChordset: "add-chordset"
        case .renameChordset: "rename-chordset"
        case .deleteChordset: "delete-chordset"
        case .setChordColor: "set-chord-color"
        case .setChordBPM: "set-chord-bpm"
        case .setControlsChord: "set-controls-chord"
        case .moveChordset: "move-chordset"
        case .deleteAll: "delete-all"
        case .undo: "undo"
        case .redo: "redo"
        }
    }
}

/// The fields of ``Command/addChordset(_:)``. Everything is optional: the store fills in
/// ids, the creation date (the commit time), and random colours as the seed app did.
public struct AddChordset: Sendable, Hashable {
    /// The chordset's id; a random one when `nil`.
    public var id: UUID?
    /// The title; empty by default, as the seed app's new chordsets.
    public var title: String
    /// The creation date; the event's timestamp when `nil`.
    public var creationDate: Instant?
    /// Either empty (eight default chords) or exactly eight specs with distinct positions.
    public var chords: [ChordSpec]

    /// Creates an add command.
    public init(id: UUID? = nil, title: String = "", creationDate: Instant? = nil, chords: [ChordSpec] = []) {
        self.id = id
        self.title = title
        self.creationDate = creationDate
        self.chords = chords
    }
}

/// One chord of an ``AddChordset``; `nil` fields take defaults (random id and colour,
/// ``Limits/defaultBPM``).
public struct ChordSpec: Sendable, Hashable {
    /// The chord's id; a new time-ordered one when `nil`.
    public var id: UUID?
    /// The chord's position, `0..<Chordset.chordCount`.
    public var position: Int
    /// The tempo; ``Limits/defaultBPM`` when `nil`.
    public var bpm: Double?
    /// The background colour; random (as the seed app) when `nil`.
    public var color: ChordColor?

    /// Creates a chord spec.
    public init(id: UUID? = nil, position: Int, bpm: Double? = nil, color: ChordColor? = nil) {
        self.id = id
        self.position = position
        self.bpm = bpm
        self.color = color
    }
}

/// The fields of ``Command/setControlsChord(_:)``.
public struct SetControlsChord: Sendable, Hashable {
    /// The controls chord's id: kept from the current controls chord when `nil`, or
    /// random when there is none yet.
    public var id: UUID?
    /// The controls chord's tempo.
    public var bpm: Double
    /// The controls chord's background colour.
    public var color: ChordColor

    /// Creates a set-controls command.
    public init(id: UUID? = nil, bpm: Double, color: ChordColor) {
        self.id = id
        self.bpm = bpm
        self.color = color
    }
}
