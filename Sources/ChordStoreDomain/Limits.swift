/// The documented limits every command is checked against. The defaults are the
/// server's; embedders may tighten them.
public struct Limits: Sendable, Hashable {
    /// Longest title, in characters (extended grapheme clusters).
    public var maxTitleCharacters = 200
    /// Longest title, in UTF-8 bytes (bounds storage for scripts with long clusters).
    public var maxTitleBytes = 1_000
    /// Lowest tempo accepted, beats per minute.
    public var minBPM = 1.0
    /// Highest tempo accepted, beats per minute.
    public var maxBPM = 999.0
    /// Tempo given to a new chord when the command names none.
    public var defaultBPM = 120.0
    /// Most chordsets one store holds.
    public var maxChordsets = 10_000_000
    /// Longest session (actor) name and command id, in UTF-8 bytes.
    public var maxMetadataBytes = 128
    /// Most changes a session may undo in a row (its redo stack's depth); `nil`, the
    /// default, lets it go back to its first change.
    public var maxUndoDepth: Int?

    /// The default limits.
    public init() {}
}
