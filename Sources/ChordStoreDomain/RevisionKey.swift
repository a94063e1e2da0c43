public import Foundation

/// What a revision counts the changes of.
public enum RevisionKey: Sendable, Hashable {
    /// One chordset: its adds, deletes, renames, moves and chord edits.
    case chordset(UUID)
    /// The controls chord.
    case controls
    /// The collection: every change to any chordset, delete-all included.
    case collection
    /// Delete-all and its undo, which change every chordset at once.
    case bulk
}
