public import Foundation

/// How a change updates the undo and redo stacks, the revisions and the histories; the
/// counterpart of ``Fold`` for what the envelope says.
public enum ChangeFold {
    /// Applies `change`. `chordsets` are the chordsets the event touched (as ``Fold``
    /// returns them), whose histories it joins.
    public static func apply(_ change: Change, chordsets: [UUID], to changes: inout some ChangeWriting) throws {
        let session = change.session
        try changes.noteSessionChange(session, change.sequence, mark: change.mark)
        for key in change.event.revisionKeys {
            try changes.advanceRevision(key, to: change.sequence, by: session)
        }
        if case .chordsetAdded = change.event, chordsets.count == 1 {
            try changes.noteHistory(addedChordset: chordsets[0], change.sequence)
        } else {
            for id in chordsets { try changes.noteHistory(chordset: id, change.sequence) }
        }
    }
}
